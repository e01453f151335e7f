// The kernel table entries the CUDA backend does not implement yet: each MF_CUDA_PENDING line
// defines mf::cuda::<name> (with the table's parameters, which the static_assert checks against
// kernel_table.h) to fail with "K.<name>: not implemented on cuda yet". Whoever implements an entry
// in a .cu file deletes its line here (a duplicate definition fails the link). Owners: cuda (shape,
// copy and elementwise entries) and cuda2 (reductions, nn, matmul, optimizers, RNG, indexing).
#include <type_traits>

#include "kernels.h"

#define MF_CUDA_PENDING(name, params)                                                                  \
  int mf::cuda::name params { return not_implemented(#name); }                                       \
  static_assert(std::is_same<decltype(&mf::cuda::name), decltype(mf_kernel_table::name)>::value,      \
                "pending.cc: the parameters of " #name " differ from kernel_table.h's");

// clang-format off
// clang-format on
