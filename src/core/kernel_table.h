/* The kernel table of a device: one entry per native routine the op blocks' kernel strings call as
   K.<name>. Plain C, shared by core (the device registry), every backend and the FFI ABI (abi.h
   includes it). Each entry returns a status (0 = ok) and sets mf_last_error() on failure; no
   exception crosses it. Output tensors are preallocated on the table's device, of the inferred
   shape and dtype; contiguous, except that unary, binary, where and copy write through the
   output's strides. All tensors an entry takes live on its device, except the two host copies:
   copy_from_host (dst on this device, src on the host) and copy_to_host (dst on the host).
   MF_KERNELS(X) lists the entries once as X(name, (parameters)); C++ code expands it to build and
   forward tables, the struct below expands it to the members. */
#ifndef MF_CORE_KERNEL_TABLE_H
#define MF_CORE_KERNEL_TABLE_H

#include "types.h"

typedef struct mf_rng mf_rng;
typedef struct mf_fused mf_fused;

/* Formulas and operand rules: src/kernels/cpu/kernels.h. fused runs a program from mf_fused_compile.
   gemm: c = alpha op(a) op(b) + beta c, matmul's operands, c read unless beta is 0 (matmul: 1, 0).
   The updates make one pass each and read lr (and adam's step count t) from one-element float
   tensors on their device, so a step never reads them on the host; adam_update's form is 0 (L2
   decay, PyTorch's epsilon), bit 1 decoupled (AdamW), bit 2 TensorFlow's epsilon
   (src/core/update_math.h: adam_scalars). Convolution and pooling are NCHW: conv routines take
   stride h, w, padding h, w, dilation h, w and ws, a uint8 workspace that conv2d_workspace sizes at
   bind time (kind 0 conv2d, 1 backward_input, 2 backward_weight; out, a, b as that routine takes
   them); a null or smaller ws makes the routine borrow temporary memory. Pooling takes kernel h, w,
   stride h, w, padding h, w; output sizes come from the output (or gy) shape. */
#define MF_KERNELS(X)                                                                                                  \
  X(unary, (int32_t code, mf_tensor *y, const mf_tensor *x, double a, double b))                                       \
  X(binary, (int32_t code, mf_tensor *z, const mf_tensor *x, const mf_tensor *y))                                      \
  X(fused, (const mf_fused *p, mf_tensor *out, int32_t nin, const mf_tensor *const *ins))                              \
  X(where, (mf_tensor *out, const mf_tensor *c, const mf_tensor *a, const mf_tensor *b))                               \
  X(copy, (mf_tensor *dst, const mf_tensor *src))                                                                      \
  X(copy_from_host, (mf_tensor *dst, const mf_tensor *src))                                                            \
  X(copy_to_host, (mf_tensor *dst, const mf_tensor *src))                                                              \
  X(fill, (mf_tensor *t, double value))                                                                                \
  X(arange, (mf_tensor *t, double start, double step))                                                                 \
  X(eye, (mf_tensor *t))                                                                                               \
  X(rand, (mf_tensor *t, mf_rng *g, int32_t normal, double a, double b))                                               \
  X(periodic_copy, (mf_tensor *out, const mf_tensor *x, const int64_t *shift, uint32_t flip_mask))                     \
  X(tri, (mf_tensor *out, const mf_tensor *x, int64_t k, int32_t upper))                                               \
  X(linspace, (mf_tensor *t, double start, double stop, double base))                                                  \
  X(randint, (mf_tensor *t, mf_rng *g, double low, double high))                                                       \
  X(randperm, (mf_tensor *t, mf_rng *g))                                                                               \
  X(multinomial, (mf_tensor *out, mf_rng *g, const mf_tensor *probs, int32_t replacement))                             \
  X(reduce, (int32_t code, mf_tensor *out, const mf_tensor *x, uint32_t dim_mask))                                     \
  X(reduce_p, (int32_t code, mf_tensor *out, const mf_tensor *x, uint32_t dim_mask, double p))                         \
  X(softmax, (mf_tensor *y, const mf_tensor *x, int32_t dim, int32_t log))                                             \
  X(matmul, (mf_tensor *c, const mf_tensor *a, const mf_tensor *b, int32_t trans_a, int32_t trans_b))                  \
  X(gemm, (mf_tensor *c, const mf_tensor *a, const mf_tensor *b, int32_t trans_a, int32_t trans_b, double alpha,       \
           double beta))                                                                                               \
  X(alias, (mf_tensor *view, const mf_tensor *base, int64_t offset))                                                   \
  X(concat, (mf_tensor *out, int32_t n, const mf_tensor *const *ins, int32_t dim))                                     \
  X(index_select, (mf_tensor *out, const mf_tensor *x, const mf_tensor *idx, int32_t dim))                             \
  X(index_add_like, (mf_tensor *out, const mf_tensor *g, const mf_tensor *idx, int32_t dim))                           \
  X(one_hot, (mf_tensor *out, const mf_tensor *labels))                                                                \
  X(gather, (mf_tensor *out, const mf_tensor *x, const mf_tensor *idx, int32_t dim))                                   \
  X(scatter, (mf_tensor *out, const mf_tensor *x, const mf_tensor *idx, const mf_tensor *src, int32_t dim,             \
              int32_t add))                                                                                            \
  X(index_add, (mf_tensor *out, const mf_tensor *x, const mf_tensor *idx, const mf_tensor *src, int32_t dim))          \
  X(masked_select, (mf_tensor *out, const mf_tensor *x, const mf_tensor *mask, double fill))                           \
  X(nonzero, (mf_tensor *out, const mf_tensor *x, int64_t fill))                                                       \
  X(batch_norm, (mf_tensor *y, const mf_tensor *x, const mf_tensor *w, const mf_tensor *b, double eps))                \
  X(dropout_mask, (mf_tensor *mask, mf_rng *g, double p))                                                              \
  X(sum_to, (mf_tensor *out, const mf_tensor *g))                                                                      \
  X(max_dim, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int32_t is_min))                 \
  X(sort, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int32_t descending))                \
  X(topk, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int64_t k, int32_t largest,         \
           int32_t sorted))                                                                                            \
  X(kthvalue, (mf_tensor *values, mf_tensor *indices, const mf_tensor *x, int32_t dim, int64_t k))                     \
  X(cumulate, (mf_tensor *y, const mf_tensor *x, int32_t dim, int32_t prod, int32_t reverse))                          \
  X(cumprod_grad, (mf_tensor *gx, const mf_tensor *x, const mf_tensor *gy, int32_t dim, int32_t reverse))              \
  X(pad_like, (mf_tensor *out, const mf_tensor *g, int32_t dim, int64_t start, int64_t step))                          \
  X(sgd_update, (mf_tensor *var, const mf_tensor *grad, const mf_tensor *lr, double weight_decay))                     \
  X(momentum_update, (mf_tensor *var, mf_tensor *accum, const mf_tensor *grad, const mf_tensor *lr, double momentum,   \
                      double dampening, double weight_decay, int32_t nesterov))                                        \
  X(adam_update, (mf_tensor *var, mf_tensor *m, mf_tensor *v, const mf_tensor *grad, const mf_tensor *step,            \
                  const mf_tensor *lr, double beta1, double beta2, double epsilon, double weight_decay, int32_t form))  \
  X(softmax_xent, (mf_tensor *loss, const mf_tensor *logits, const mf_tensor *labels, int32_t dim))                    \
  X(conv2d_workspace, (int32_t kind, const mf_tensor *out, const mf_tensor *a, const mf_tensor *b, int32_t sh,         \
                       int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw, int64_t *bytes))                    \
  X(conv2d, (mf_tensor *y, const mf_tensor *x, const mf_tensor *w, mf_tensor *ws, int32_t sh, int32_t sw, int32_t ph,  \
             int32_t pw, int32_t dh, int32_t dw))                                                                      \
  X(conv2d_backward_input, (mf_tensor *gx, const mf_tensor *gy, const mf_tensor *w, mf_tensor *ws, int32_t sh,         \
                            int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw))                               \
  X(conv2d_backward_weight, (mf_tensor *gw, const mf_tensor *gy, const mf_tensor *x, mf_tensor *ws, int32_t sh,        \
                             int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw))                              \
  X(max_pool2d, (mf_tensor *y, const mf_tensor *x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph,         \
                 int32_t pw))                                                                                          \
  X(max_pool2d_backward, (mf_tensor *gx, const mf_tensor *gy, const mf_tensor *x, int32_t kh, int32_t kw, int32_t sh,  \
                          int32_t sw, int32_t ph, int32_t pw))                                                         \
  X(avg_pool2d, (mf_tensor *y, const mf_tensor *x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph,         \
                 int32_t pw, int32_t count_include_pad))                                                               \
  X(avg_pool2d_backward, (mf_tensor *gx, const mf_tensor *gy, int32_t kh, int32_t kw, int32_t sh, int32_t sw,          \
                          int32_t ph, int32_t pw, int32_t count_include_pad))                                          \
  X(adaptive_avg_pool2d, (mf_tensor *y, const mf_tensor *x))                                                           \
  X(adaptive_avg_pool2d_backward, (mf_tensor *gx, const mf_tensor *gy))

#define MF_KERNEL_MEMBER_(name, params) int(*name) params;
typedef struct mf_kernel_table {
  MF_KERNELS(MF_KERNEL_MEMBER_)
} mf_kernel_table;
#undef MF_KERNEL_MEMBER_

#endif /* MF_CORE_KERNEL_TABLE_H */
