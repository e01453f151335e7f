// Thread-count control: OpenMP and OpenBLAS share one pool, so one setting drives both.
#include "threads.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>

extern "C" void openblas_set_num_threads(int);

namespace mf {

// 0 until MF_NUM_THREADS or set_num_threads gives a count; OpenMP's default holds until then.
static std::atomic<int> g_num_threads{0};

void set_num_threads(int n) {
  if (n < 1) n = 1;
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
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
