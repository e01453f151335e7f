// Native CPU routines behind mf.kernels; each throws mf::Error with the op name on bad input.
// Output tensors arrive allocated with the inferred shape and dtype.
#pragma once
#include <vector>

#include "../../core/pointwise.h"
#include "../../core/rng.h"
#include "../../core/tensor.h"

namespace mf {

// unary, binary, where and copy write their output through its strides (a view written in place).
// unary and binary run the pointwise table entry of code (src/core/pointwise.h); a and b are the
// params of a unary op that takes them. add_cpu: z = x + y by the add functor itself, no code.
void unary_cpu(int code, mf_tensor& y, const mf_tensor& x, double a, double b);
void binary_cpu(int code, mf_tensor& z, const mf_tensor& x, const mf_tensor& y);
void add_cpu(mf_tensor& z, const mf_tensor& x, const mf_tensor& y);
// fused_cpu runs a FusedProgram (src/core/pointwise.h) with every input broadcast to the (contiguous,
// float) output, which may share storage with an input read at the same positions (in place).
void fused_cpu(const FusedProgram& fp, mf_tensor& out, int nin, const mf_tensor* const* ins);
void where_cpu(mf_tensor& out, const mf_tensor& c, const mf_tensor& a, const mf_tensor& b);
void copy_cpu(mf_tensor& dst, const mf_tensor& src);  // any dtypes; src broadcast to dst's shape
void fill_cpu(mf_tensor& t, double value);
void arange_cpu(mf_tensor& t, double start, double step);
void eye_cpu(mf_tensor& t);
void rand_cpu(mf_tensor& t, mf_rng& g, bool normal, double a, double b);
// Everyday shape ops and draws (shape_ext.cc, sample.cc). periodic_copy: out (contiguous, x's dtype,
// at least x's dims, aligned at the end) reads x periodically: per dim d, source index
// (flip bit d ? n - 1 - i : i - shift[d]) mod x's size (repeat, roll, flip; shift may be null).
// tri keeps x's elements with j - i <= k (tril) or >= k (upper, triu) of each trailing matrix, else 0.
// linspace: n values from start to stop (base != 0: base to those powers, logspace).
// randint: integers in [low, high); randperm: a permutation of 1..n; multinomial: 1-based int64
// category draws per row of nonnegative float weights, with or without replacement.
void periodic_copy_cpu(mf_tensor& out, const mf_tensor& x, const int64_t* shift, uint32_t flip_mask);
void tri_cpu(mf_tensor& out, const mf_tensor& x, int64_t k, bool upper);
void linspace_cpu(mf_tensor& t, double start, double stop, double base);
void randint_cpu(mf_tensor& t, mf_rng& g, double low, double high);
void randperm_cpu(mf_tensor& t, mf_rng& g);
void multinomial_cpu(mf_tensor& out, mf_rng& g, const mf_tensor& probs, bool replacement);
void reduce_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask);
// The reductions that take a number p: MF_R_VAR and MF_R_STD (p: the correction subtracted from the
// count, 0 or more), MF_R_NORM (p: the order; 0 counts nonzeros, +-inf allowed). Floats only.
void reduce_p_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask, double p);
void softmax_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool log);
void matmul_cpu(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b);
// c = alpha op(a) op(b) + beta c in one BLAS call per batch (beta 0: c is not read, NaN and inf
// included, as BLAS); matmul_cpu is alpha 1, beta 0.
void gemm_cpu(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b, double alpha,
              double beta);
void concat_cpu(mf_tensor& out, int n, const mf_tensor* const* ins, int dim);
void sum_to_cpu(mf_tensor& out, const mf_tensor& g);
void index_select_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, int dim);
void index_add_like_cpu(mf_tensor& out, const mf_tensor& g, const mf_tensor& idx, int dim);
void one_hot_cpu(mf_tensor& out, const mf_tensor& labels);
// Indexing by 1-based int64 indices, PyTorch's semantics (scatter.cc); every index is checked before
// any write; loops are serial in the index's row-major order (repeated destinations: the last write
// wins, additions in that order). out is contiguous, except that scatter and index_add may take x
// itself as out (the in-place forms; an index or src sharing its memory is copied first). gather: out
// (index's shape) from x along dim.
// scatter: out = x, then out[index along dim] = src (a 0-dim src is one value), or += when add.
// index_add: out = x, then slice j of src added at slice index[j] along dim. masked_select: the
// elements of x where the (broadcast) uint8 mask is nonzero, row-major; out (1-D, any length n)
// takes the first n of them, then fill for the rest. nonzero: the 1-based coordinates of x's
// nonzero elements, row-major; out (n x ndim int64) takes the first n rows, then rows of fill.
void gather_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, int dim);
void scatter_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, const mf_tensor& src, int dim, bool add);
void index_add_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, const mf_tensor& src, int dim);
void masked_select_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& mask, double fill);
void nonzero_cpu(mf_tensor& out, const mf_tensor& x, int64_t fill);
// batch_norm: x and y contiguous (its block is not strided, so the engine copies views first).
void batch_norm_cpu(mf_tensor& y, const mf_tensor& x, const mf_tensor& w, const mf_tensor& b, double eps);
void dropout_mask_cpu(mf_tensor& mask, mf_rng& g, double p);
void pad_like_cpu(mf_tensor& out, const mf_tensor& g, int dim, int64_t start, int64_t step);
// Along one dim (0-based; a 0-dim x is one line of one element), sort.cc. Indices are 1-based int64;
// values and indices contiguous. Orders: NaN above every number, equal values by position (what a
// stable sort gives). max_dim: the extreme of each line, the first of ties, the first NaN if any
// (values and indices of x's shape less dim, or with it kept as 1). sort_cpu by mode: kSortAll the
// whole line (k ignored), kSortTop the first k (in position order unless sorted), kSortKth the k-th
// (1-based) only, shaped as max_dim's. cumulate: running sum or product (reverse: from the end),
// integers into int64. cumprod_grad: the gradient of cumprod given gy, exact with zeros in x.
enum { kSortAll = 0, kSortTop = 1, kSortKth = 2 };
void max_dim_cpu(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, bool is_min);
// max_dim_cpu's computation once its operands are checked (src/kernels/cpu/reduce.cc: the arg paths
// of the reductions): values and indices contiguous.
void max_dim_lines(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, bool is_min);
void sort_cpu(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, int64_t k, int mode, bool descending,
              bool sorted);
void cumulate_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool prod, bool reverse);
void cumprod_grad_cpu(mf_tensor& gx, const mf_tensor& x, const mf_tensor& gy, int dim, bool reverse);
// Fused optimizer updates, one pass over var and its slots; grad broadcasts to var.
// sgd: g = grad + weight_decay * var; var -= lr * g.
void sgd_update_cpu(mf_tensor& var, const mf_tensor& grad, double lr, double weight_decay);
// momentum: g = grad + weight_decay * var; accum = momentum * accum + (1 - dampening) * g;
// var -= lr * (nesterov ? g + momentum * accum : accum).
void momentum_update_cpu(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, double lr, double momentum,
                         double dampening, double weight_decay, bool nesterov);
// adam_update at step t (>= 1, else an error) with learning rate lr: the per-step scalars and the
// weight decay's form (none, L2 or AdamW's decoupled decay by the form bits) come from
// upd::adam_scalars and upd::adam_decay (src/core/update_math.h), as in the CUDA kernel.
void adam_update_cpu(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, double t, double lr,
                     double beta1, double beta2, double epsilon, double weight_decay, int form);
void softmax_xent_cpu(mf_tensor& loss, const mf_tensor& logits, const mf_tensor& labels, int dim);

// Convolution and pooling, NCHW (src/kernels/cpu/conv.cc, pool.cc). hp: stride h, w, padding h, w, dilation h, w.
// ws is the bind-time uint8 workspace sized by conv2d_workspace_cpu (kind 0 forward, 1 input
// gradient, 2 weight gradient; out, a, b as the routine takes them); a smaller or null one makes the
// routine borrow temporary memory. Strided inputs are packed into it; outputs must be contiguous.
int64_t conv2d_workspace_cpu(int kind, const mf_tensor& out, const mf_tensor& a, const mf_tensor& b, const int32_t* hp);
void conv2d_cpu(mf_tensor& y, const mf_tensor& x, const mf_tensor& w, mf_tensor* ws, const int32_t* hp);
void conv2d_backward_input_cpu(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& w, mf_tensor* ws, const int32_t* hp);
void conv2d_backward_weight_cpu(mf_tensor& gw, const mf_tensor& gy, const mf_tensor& x, mf_tensor* ws, const int32_t* hp);
// kp: kernel h, w, stride h, w, padding h, w; output sizes come from the output (or gy) shape.
void max_pool2d_cpu(mf_tensor& y, const mf_tensor& x, const int32_t* kp);
void max_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& x, const int32_t* kp);
void avg_pool2d_cpu(mf_tensor& y, const mf_tensor& x, const int32_t* kp, bool count_include_pad);
void avg_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy, const int32_t* kp, bool count_include_pad);
void adaptive_avg_pool2d_cpu(mf_tensor& y, const mf_tensor& x);
void adaptive_avg_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy);

}  // namespace mf
