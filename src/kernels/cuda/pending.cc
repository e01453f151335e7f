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
MF_CUDA_PENDING(periodic_copy, (mf_tensor *out, const mf_tensor *x, const int64_t *shift, uint32_t flip_mask))
MF_CUDA_PENDING(tri, (mf_tensor *out, const mf_tensor *x, int64_t k, int32_t upper))
MF_CUDA_PENDING(multinomial, (mf_tensor *out, mf_rng *g, const mf_tensor *probs, int32_t replacement))
MF_CUDA_PENDING(concat, (mf_tensor *out, int32_t n, const mf_tensor *const *ins, int32_t dim))
MF_CUDA_PENDING(index_select, (mf_tensor *out, const mf_tensor *x, const mf_tensor *idx, int32_t dim))
MF_CUDA_PENDING(one_hot, (mf_tensor *out, const mf_tensor *labels))
MF_CUDA_PENDING(sort, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int32_t descending))
MF_CUDA_PENDING(topk, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int64_t k,
                int32_t largest, int32_t sorted))
MF_CUDA_PENDING(kthvalue, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int64_t k))
MF_CUDA_PENDING(pad_like, (mf_tensor *out, const mf_tensor *g, int32_t dim, int64_t start, int64_t step))
// clang-format on
