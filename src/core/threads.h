// One OpenMP pool for our kernels and OpenBLAS (the OpenMP build shares it).
#pragma once
#include <cstdint>

namespace mf {

// Elements below which a loop stays on one thread: forking costs more than it saves.
constexpr int64_t kGrain = 131072;

// Sets the process-wide count (also OpenBLAS's), effective at once on the calling thread.
void set_num_threads(int n);
// The BLAS loader (src/kernels/cpu/blas.cc) hands in openblas_set_num_threads once OpenBLAS is
// loaded; set_num_threads calls it from then on (a count set before is applied at once).
void set_blas_threads_hook(void (*fn)(int));
int get_num_threads();
// Reads MF_NUM_THREADS once at start-up, if set.
void init_threads_from_env();
// OpenMP keeps the count per thread: applies the process-wide count, once one was set, to the
// calling thread. Engines call it on entry, so every thread that runs moonflow honours the setting.
void adopt_num_threads();

int omp_threads_in_team();
int omp_thread_id();

// Calls f(begin, end) over [0, n) in contiguous chunks, one per thread, serially when n*cost < kGrain.
template <typename F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
  if (n <= 0) return;
  if (n * cost_per_item < kGrain) {
    f(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    int nt = omp_threads_in_team();
    int id = omp_thread_id();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = int64_t(id) * chunk, e = b + chunk < n ? b + chunk : n;
    if (b < e) f(b, e);
  }
}

}  // namespace mf
