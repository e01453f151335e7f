// Thread-count control: OpenMP and OpenBLAS share one pool, so one setting drives both.
#include "threads.h"

#include <omp.h>

#include <cstdlib>

extern "C" void openblas_set_num_threads(int);

namespace mf {

void set_num_threads(int n) {
  if (n < 1) n = 1;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
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
