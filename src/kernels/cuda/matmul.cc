// -- matmul ------------------------------------------------------------------------------------
// GEMM through cuBLAS (FP32 math, TF32 only after mf.cuda.allow_tf32(true)): the CPU's operand rules
// (src/kernels/cpu/matmul.cc) with cuBLAS's column-major view. A row-major m x n product C = A B is
// the column-major n x m product C^T = B^T A^T, so the operands swap places and each keeps the
// transpose flag BLAS would take in row-major order. Batches go through one strided-batched call per
// run of batch dims that a single stride walks (all of them, for dense or broadcast operands);
// layouts cuBLAS cannot describe are packed into scratch memory first.
#include <algorithm>
#include <climits>
#include <vector>

#include "../../core/gemm_plan.h"
#include "../../core/kcheck.h"
#include "kernels.h"

namespace mf {
namespace cuda {

namespace {

struct GemmOperand {
  const char* base;
  int64_t rows, cols;  // logical, after the op's transpose param
  bool trans;          // as row-major BLAS takes it
  int64_t ld;
  Shape batch_stride;  // in elements, per batch dim of the output
};

GemmOperand prepare(const mf_tensor& t, bool transpose, const Shape& batch, int es, std::vector<Scratch*>& packs) {
  GemmOperand g;
  int nd = t.ndim;
  int64_t r = t.shape[nd - 2], c = t.shape[nd - 1];
  g.base = static_cast<const char*>(t.ptr);
  g.batch_stride = gemm_batch_strides(t, batch);  // src/core/gemm_plan.h, as the CPU entry
  int how = gemm_layout(t, g.ld);
  if (how >= 0) {
    g.trans = how == 1;
  } else {  // pack every batch densely with the device copy (rare: a doubly strided view)
    int64_t nb = 1;
    for (int64_t b : batch) nb *= b;
    Scratch* s = new Scratch(size_t(std::max<int64_t>(r * c * nb, 1)) * size_t(es));
    packs.push_back(s);
    Shape full;
    mf_tensor src = gemm_pack_source(t, batch, g.batch_stride, full), dst{};
    set_meta(dst, full, t.dtype_id, MF_CUDA);
    dst.device_id = t.device_id;
    dst.ptr = s->get();
    if (copy(&dst, &src) != MF_OK) fail("matmul: packing a strided operand failed: ", last_error());
    g.base = static_cast<const char*>(s->get());
    g.trans = false;
    gemm_packed_layout(full, g.ld, g.batch_stride);
  }
  g.rows = r;
  g.cols = c;
  if (transpose) {
    std::swap(g.rows, g.cols);
    g.trans = !g.trans;
  }
  return g;
}

int to_int(int64_t v, const char* what) {
  if (v > INT_MAX) fail("matmul: ", what, " is ", v, "; cuBLAS takes sizes up to ", INT_MAX);
  return int(v);
}

void gemm(const mf_tensor& c, const GemmOperand& A, const GemmOperand& B, int64_t m, int64_t n, int64_t k,
          int64_t oa, int64_t ob, int64_t oc, int64_t sa, int64_t sb, int64_t sc, int64_t count, double alpha,
          double beta, const char* op) {
  cublasOperation_t opb = B.trans ? CUBLAS_OP_T : CUBLAS_OP_N, opa = A.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  int N = to_int(n, "n"), M = to_int(m, "m"), K = to_int(k, "k"), ldb = to_int(B.ld, "ldb"), lda = to_int(A.ld, "lda");
  int cnt = to_int(count, "the batch");
  // one product: the plain GEMM, as PyTorch calls it. Through the strided-batched call, n = 1024 ran
  // at 27.7 TFLOP/s against torch.matmul's 37.8 on an H200 (2026-11-27); whether the batched call's
  // kernel choice is the cause has not been measured on a GPU yet.
  if (cnt == 1 && c.dtype_id == MF_FLOAT32) {
    const float al = float(alpha), be = float(beta);
    check(cublasSgemm(cublas(), opb, opa, N, M, K, &al, reinterpret_cast<const float*>(B.base) + ob, ldb,
                      reinterpret_cast<const float*>(A.base) + oa, lda, &be, static_cast<float*>(c.ptr) + oc, N),
          op, "cublasSgemm");
  } else if (cnt == 1) {
    const double al = alpha, be = beta;
    check(cublasDgemm(cublas(), opb, opa, N, M, K, &al, reinterpret_cast<const double*>(B.base) + ob, ldb,
                      reinterpret_cast<const double*>(A.base) + oa, lda, &be, static_cast<double*>(c.ptr) + oc, N),
          op, "cublasDgemm");
  } else if (c.dtype_id == MF_FLOAT32) {
    const float al = float(alpha), be = float(beta);
    check(cublasSgemmStridedBatched(cublas(), opb, opa, N, M, K, &al, reinterpret_cast<const float*>(B.base) + ob, ldb,
                                    sb, reinterpret_cast<const float*>(A.base) + oa, lda, sa, &be,
                                    static_cast<float*>(c.ptr) + oc, N, sc, cnt),
          op, "cublasSgemmStridedBatched");
  } else {
    const double al = alpha, be = beta;
    check(cublasDgemmStridedBatched(cublas(), opb, opa, N, M, K, &al, reinterpret_cast<const double*>(B.base) + ob,
                                    ldb, sb, reinterpret_cast<const double*>(A.base) + oa, lda, sa, &be,
                                    static_cast<double*>(c.ptr) + oc, N, sc, cnt),
          op, "cublasDgemmStridedBatched");
  }
}

// c = alpha op(a) op(b) + beta c (beta 0: c is not read, cuBLAS's rule); op names the entry
void matmul_impl(mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b, double alpha,
                 double beta, const char* op) {
  kcheck::matmul(c, a, b, trans_a, trans_b, op);  // the CPU's checks (src/core/gemm_plan.h)
  int es = dtype_size(a.dtype_id);
  Shape batch(c.shape, c.shape + c.ndim - 2);
  std::vector<Scratch*> packs;
  struct Free {
    std::vector<Scratch*>& p;
    ~Free() {
      for (Scratch* s : p) delete s;
    }
  } free_packs{packs};
  GemmOperand A = prepare(a, trans_a, batch, es, packs), B = prepare(b, trans_b, batch, es, packs);
  int64_t m = c.shape[c.ndim - 2], n = c.shape[c.ndim - 1], k = A.cols;
  if (A.rows != m || B.cols != n || B.rows != k) fail(op, ": kernel shapes disagree with the output ", shape_str(c));
  if (m * n == 0) return;
  if (k == 0 && beta == 0) {  // an empty sum: zeros (all-zero bits are 0.0)
    check(cudaMemsetAsync(c.ptr, 0, size_t(c.count) * size_t(es), stream()), op, "cudaMemsetAsync");
    return;
  }
  if (k == 0) {  // beta c alone
    if (beta == 1) return;
    int cnt = to_int(c.count, "the output's size");
    if (c.dtype_id == MF_FLOAT32) {
      const float be = float(beta);
      check(cublasSscal(cublas(), cnt, &be, static_cast<float*>(c.ptr), 1), op, "cublasSscal");
    } else {
      check(cublasDscal(cublas(), cnt, &beta, static_cast<double*>(c.ptr), 1), op, "cublasDscal");
    }
    return;
  }
  // the trailing batch dims one stride walks for A, B and C alike, merged into one strided batch
  Shape cst = contiguous_strides(shape_of(c));
  int nbd = int(batch.size()), first = nbd;
  int64_t inner = 1;
  while (first > 0) {
    int d = first - 1;
    if (first < nbd) {  // can dim d join the run below it?
      int e = first;
      bool ok = A.batch_stride[size_t(d)] == A.batch_stride[size_t(e)] * batch[size_t(e)] &&
                B.batch_stride[size_t(d)] == B.batch_stride[size_t(e)] * batch[size_t(e)] &&
                cst[size_t(d)] == cst[size_t(e)] * batch[size_t(e)];
      if (!ok) break;
    }
    inner *= batch[size_t(d)];
    first = d;
  }
  int64_t sa = first < nbd ? A.batch_stride[size_t(nbd - 1)] : 0, sb = first < nbd ? B.batch_stride[size_t(nbd - 1)] : 0;
  int64_t sc = m * n;
  int64_t outer = 1;
  for (int d = 0; d < first; ++d) outer *= batch[size_t(d)];
  for (int64_t bi = 0; bi < outer; ++bi) {
    int64_t oa, ob, oc;
    gemm_batch_offsets(bi, batch, first, A.batch_stride, B.batch_stride, cst, oa, ob, oc);
    gemm(c, A, B, m, n, k, oa, ob, oc, sa, sb, sc, inner, alpha, beta, op);
  }
}

}  // namespace

int matmul(mf_tensor* c, const mf_tensor* a, const mf_tensor* b, int32_t trans_a, int32_t trans_b) {
  return entry("matmul", [&] { matmul_impl(*c, *a, *b, trans_a != 0, trans_b != 0, 1, 0, "matmul"); });
}

int gemm(mf_tensor* c, const mf_tensor* a, const mf_tensor* b, int32_t trans_a, int32_t trans_b, double alpha,
         double beta) {
  return entry("gemm", [&] { matmul_impl(*c, *a, *b, trans_a != 0, trans_b != 0, alpha, beta, "gemm"); });
}

}  // namespace cuda
}  // namespace mf
