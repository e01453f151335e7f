// -- matmul ------------------------------------------------------------------------------------
// GEMM through OpenBLAS: strided operands are passed with a transpose flag and leading dimension
// instead of being copied; only layouts BLAS cannot describe are packed first.
#include <algorithm>
#include <vector>

#include "../../core/allocator.h"
#include "../../core/error.h"
#include "../../core/gemm_plan.h"
#include "../../core/threads.h"
#include "blas.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

namespace {

// The last two dims of an operand as BLAS sees them: rows x cols with a transpose flag and ld.
struct GemmOperand {
  const char* base;
  int64_t rows, cols;  // logical, after the op's transpose param
  CBLAS_TRANSPOSE trans;
  int64_t ld;
  Shape batch_stride;  // in elements, per batch dim of the output
  void* packed = nullptr;
};

GemmOperand prepare(const mf_tensor& t, bool transpose, const Shape& batch, int es) {
  GemmOperand g;
  int nd = t.ndim;
  int64_t r = t.shape[nd - 2], c = t.shape[nd - 1];
  g.base = (const char*)t.ptr;
  g.batch_stride = gemm_batch_strides(t, batch);  // src/core/gemm_plan.h, as the CUDA entry
  int how = gemm_layout(t, g.ld);
  if (how >= 0) {
    g.trans = how == 0 ? CblasNoTrans : CblasTrans;
  } else {  // pack every batch of t densely (rare: e.g. a doubly strided narrow)
    int64_t per = r * c, nb = 1;
    for (int64_t b : batch) nb *= b;
    g.packed = cpu_allocator().allocate(size_t(per * nb * es));
    Shape full;
    mf_tensor src = gemm_pack_source(t, batch, g.batch_stride, full), dst{};
    set_meta(dst, full, t.dtype_id, MF_CPU);
    dst.ptr = g.packed;
    copy_cpu(dst, src);
    g.base = (const char*)g.packed;
    g.trans = CblasNoTrans;
    gemm_packed_layout(full, g.ld, g.batch_stride);
  }
  g.rows = r;
  g.cols = c;
  if (transpose) {
    std::swap(g.rows, g.cols);
    g.trans = g.trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
  }
  return g;
}

// A product with one output row or column as a matrix-vector product: OpenBLAS's gemm (0.3.21)
// has no path for it and ran mv, dot and batch-1 layers at a fraction of gemv's bandwidth. With
// n == 1, y = op(A) x, x being op(B)'s column; with m == 1, y^T = op(B)^T a^T, a being op(A)'s row.
// Row-major storage: an operand marked CblasTrans is stored as cols x rows with its ld.
// sum a[i sa] b[i sb] over n elements: blocks of kDotBlock elements, each summed in L lanes (four
// 512-bit vectors; lane j takes elements j, j + L, ...; the lanes are then added in order) and the
// blocks' sums added in block order. The blocks are fixed, whatever the thread count, and split
// across threads whole, so the result depends on n and the values only.
constexpr int64_t kDotBlock = int64_t(1) << 16;
template <class T, int64_t SA, int64_t SB>
T dot_block(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  if (SA) sa = SA;
  if (SB) sb = SB;
  constexpr int64_t L = 4 * 64 / int64_t(sizeof(T));
  T acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int64_t j = 0; j < L; ++j) acc[j] += a[(i + j) * sa] * b[(i + j) * sb];
  for (int64_t j = 0; i + j < n; ++j) acc[j] += a[(i + j) * sa] * b[(i + j) * sb];
  T s = 0;
  for (int64_t j = 0; j < L; ++j) s += acc[j];
  return s;
}
template <class T>
T dot_blocks(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  int64_t nb = (n + kDotBlock - 1) / kDotBlock;
  auto block = [&](int64_t k) {
    int64_t b0 = k * kDotBlock, m = std::min(kDotBlock, n - b0);
    if (sa == 1 && sb == 1) return dot_block<T, 1, 1>(a + b0, 1, b + b0, 1, m);
    return dot_block<T, 0, 0>(a + b0 * sa, sa, b + b0 * sb, sb, m);
  };
  if (nb == 1) return block(0);
  std::vector<T> part(static_cast<size_t>(nb));
  parallel_for(nb, kDotBlock, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) part[size_t(k)] = block(k);
  });
  T s = 0;
  for (int64_t k = 0; k < nb; ++k) s += part[size_t(k)];
  return s;
}

bool gemv(int32_t dtype, const GemmOperand& A, const GemmOperand& B, int64_t m, int64_t n, int64_t k, int64_t oa,
          int64_t ob, double alpha, double beta, char* y) {
  const GemmOperand *M, *V;
  CBLAS_TRANSPOSE t;
  int64_t rows, cols, incx;
  if (n == 1) {  // M = op(A) (m x k), x = op(B)[:, 0]: stored k x 1 (stride ld) or 1 x k (stride 1)
    M = &A, V = &B;
    t = A.trans;
    rows = A.trans == CblasNoTrans ? m : k, cols = A.trans == CblasNoTrans ? k : m;
    incx = B.trans == CblasNoTrans ? B.ld : 1;
  } else {  // M = op(B)^T (n x k), x = op(A)[0, :]: stored 1 x k (stride 1) or k x 1 (stride ld)
    M = &B, V = &A;
    t = B.trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
    rows = B.trans == CblasNoTrans ? k : n, cols = B.trans == CblasNoTrans ? n : k;
    incx = A.trans == CblasNoTrans ? 1 : A.ld;
  }
  int64_t om = M == &A ? oa : ob, ov = V == &A ? oa : ob;
  if (incx < 1 || M->ld < (cols > 1 ? cols : 1)) return false;  // gemm takes what gemv cannot describe
  // one output (dot, 1 x k by k x 1): dot_blocks below; sgemv with one row or column ran 1.3x
  // PyTorch's dot on 16 MB (issue 12), and BLAS's own dot sums per thread (OpenBLAS splits it by
  // its thread count: the float64 result changed with MF_NUM_THREADS)
  int64_t len = t == CblasNoTrans ? (rows == 1 ? cols : 0) : (cols == 1 ? rows : 0);
  if (len > 0) {
    int64_t incm = t == CblasNoTrans ? 1 : M->ld;
    if (dtype == MF_FLOAT32) {
      float d = dot_blocks((const float*)M->base + om, incm, (const float*)V->base + ov, incx, len), *yp = (float*)y;
      *yp = beta == 0 ? float(alpha) * d : float(alpha) * d + float(beta) * *yp;
      return true;
    }
    if (dtype == MF_FLOAT64) {
      double d = dot_blocks((const double*)M->base + om, incm, (const double*)V->base + ov, incx, len), *yp = (double*)y;
      *yp = beta == 0 ? alpha * d : alpha * d + beta * *yp;
      return true;
    }
  }
  if (dtype == MF_FLOAT32) {
    blas().sgemv(CblasRowMajor, t, int(rows), int(cols), float(alpha), (const float*)M->base + om, int(M->ld),
                 (const float*)V->base + ov, int(incx), float(beta), (float*)y, 1);
  } else if (dtype == MF_FLOAT64) {
    blas().dgemv(CblasRowMajor, t, int(rows), int(cols), alpha, (const double*)M->base + om, int(M->ld),
                 (const double*)V->base + ov, int(incx), beta, (double*)y, 1);
  } else {
    return false;
  }
  return true;
}

// c = alpha op(a) op(b) + beta c, each batch one BLAS call (gemv for one row or column); op names
// the entry in messages. beta 0 never reads c (BLAS's rule; a fresh output holds garbage).
void gemm_impl(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b, double alpha,
               double beta, const char* op) {
  kcheck::matmul(c, a, b, trans_a, trans_b, op);  // src/core/gemm_plan.h, the CUDA entry's checks too
  int es = dtype_size(a.dtype_id);
  Shape batch(c.shape, c.shape + c.ndim - 2);
  GemmOperand A = prepare(a, trans_a, batch, es), B = prepare(b, trans_b, batch, es);
  int64_t m = c.shape[c.ndim - 2], n = c.shape[c.ndim - 1], k = A.cols;
  if (A.rows != m || B.cols != n || B.rows != k) {
    cpu_allocator().free(A.packed);
    cpu_allocator().free(B.packed);
    fail(op, ": kernel shapes disagree with the output ", shape_str(c));
  }
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  Shape cst = contiguous_strides(shape_of(c));
  for (int64_t bi = 0; bi < nb && m * n > 0 && k > 0; ++bi) {
    int64_t oa, ob, oc;
    gemm_batch_offsets(bi, batch, int(batch.size()), A.batch_stride, B.batch_stride, cst, oa, ob, oc);
    if ((n == 1 || m == 1) && gemv(a.dtype_id, A, B, m, n, k, oa, ob, alpha, beta, (char*)c.ptr + oc * es)) continue;
    if (a.dtype_id == MF_FLOAT32) {
      blas().sgemm(CblasRowMajor, A.trans, B.trans, int(m), int(n), int(k), float(alpha), (const float*)A.base + oa,
                   int(A.ld), (const float*)B.base + ob, int(B.ld), float(beta), (float*)c.ptr + oc, int(n));
    } else if (a.dtype_id == MF_FLOAT64) {
      blas().dgemm(CblasRowMajor, A.trans, B.trans, int(m), int(n), int(k), alpha, (const double*)A.base + oa,
                   int(A.ld), (const double*)B.base + ob, int(B.ld), beta, (double*)c.ptr + oc, int(n));
    }
  }
  if (k == 0 && beta == 0) fill_cpu(c, 0);  // an empty sum: beta c alone
  if (k == 0 && beta != 0 && beta != 1) {
    MF_DISPATCH_FLOAT(c.dtype_id, T, op, {
      T* p = (T*)c.ptr;
      for (int64_t i = 0; i < c.count; ++i) p[i] = T(beta) * p[i];
    });
  }
  cpu_allocator().free(A.packed);
  cpu_allocator().free(B.packed);
}

}  // namespace

void matmul_cpu(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b) {
  gemm_impl(c, a, b, trans_a, trans_b, 1, 0, "matmul");
}

void gemm_cpu(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b, double alpha,
              double beta) {
  gemm_impl(c, a, b, trans_a, trans_b, alpha, beta, "gemm");
}

}  // namespace mf
