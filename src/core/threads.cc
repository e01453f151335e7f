// Thread-count control: OpenMP and OpenBLAS share one pool, so one setting drives both.
#include "threads.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>

namespace mf {

// 0 until MF_NUM_THREADS or set_num_threads gives a count; OpenMP's default holds until then.
static std::atomic<int> g_num_threads{0};
// openblas_set_num_threads once OpenBLAS is loaded (core sits below the kernels: it is handed in)
static std::atomic<void (*)(int)> g_blas_threads{nullptr};

void set_num_threads(int n) {
  if (n < 1) n = 1;
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
  if (auto fn = g_blas_threads.load(std::memory_order_acquire)) fn(n);
}

void set_blas_threads_hook(void (*fn)(int)) {
  g_blas_threads.store(fn, std::memory_order_release);
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (fn && n > 0) fn(n);
}

void adopt_num_threads() {
  // The OpenMP build of OpenBLAS follows the caller's omp_get_max_threads(), so this covers both.
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0 && omp_get_max_threads() != n) omp_set_num_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

void init_threads_from_env() {
  if (const char* s = std::getenv("MF_NUM_THREADS")) {
    int n = std::atoi(s);
    if (n > 0) set_num_threads(n);
  }
}

int omp_threads_in_team() { return omp_get_num_threads(); }
int omp_thread_id() { return omp_get_thread_num(); }

}  // namespace mf

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer builds only (scripts/sanitize.sh). libgomp is not built with TSan, so TSan cannot
// see that GOMP_parallel, which every `#pragma omp parallel` calls, orders the caller's work before
// the region's threads (fork) and their work before its return (join); it would report the region's
// reads of what the caller wrote as races. This wrapper, found before libgomp's GOMP_parallel by the
// dynamic linker, declares exactly those two edges and forwards to the real one: races between the
// threads of a team, or between the caller's other threads, stay visible.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

namespace {
struct TsanRegion {
  void (*fn)(void*);
  void* data;
  char joined;
};
void tsan_region_body(void* arg) {
  __tsan_acquire(arg);  // before reading *arg: the fork edge
  auto* r = static_cast<TsanRegion*>(arg);
  r->fn(r->data);
  __tsan_release(&r->joined);
}
}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  using Real = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  TsanRegion r{fn, data, 0};
  __tsan_release(&r);
  real(tsan_region_body, &r, num_threads, flags);
  __tsan_acquire(&r.joined);  // the join edge
}
#endif
