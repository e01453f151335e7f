// Native CPU routines behind mf.kernels; each throws mf::Error with the op name on bad input.
// Output tensors arrive allocated with the inferred shape and dtype.
#pragma once
#include "../../core/rng.h"
#include "../../core/tensor.h"

namespace mf {

void unary_cpu(int code, mf_tensor& y, const mf_tensor& x, double a, double b);
void binary_cpu(int code, mf_tensor& z, const mf_tensor& x, const mf_tensor& y);
void where_cpu(mf_tensor& out, const mf_tensor& c, const mf_tensor& a, const mf_tensor& b);
void copy_cpu(mf_tensor& dst, const mf_tensor& src);  // any dtypes; src broadcast to dst's shape
void fill_cpu(mf_tensor& t, double value);
void arange_cpu(mf_tensor& t, double start, double step);
void eye_cpu(mf_tensor& t);
void rand_cpu(mf_tensor& t, mf_rng& g, bool normal, double a, double b);
void reduce_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask);
void softmax_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool log);
void matmul_cpu(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b);
void concat_cpu(mf_tensor& out, int n, const mf_tensor* const* ins, int dim);
void sum_to_cpu(mf_tensor& out, const mf_tensor& g);
void pad_like_cpu(mf_tensor& out, const mf_tensor& g, int dim, int64_t start, int64_t step);
void sgd_update_cpu(mf_tensor& var, const mf_tensor& grad, double lr);
void momentum_update_cpu(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, double lr, double momentum,
                         bool nesterov);
void adam_update_cpu(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, double lr_t, double beta1,
                     double beta2, double epsilon);
void softmax_xent_cpu(mf_tensor& loss, const mf_tensor& logits, const mf_tensor& labels, int dim);

const char* unary_name(int code);
const char* binary_name(int code);
const char* reduce_name(int code);

}  // namespace mf
