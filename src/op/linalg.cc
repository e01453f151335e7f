// Linear algebra with Torch7's and PyTorch's stricter shapes: dot, mm, mv, bmm, addmm, outer (ger).
// Each checks its own ranks and sizes, then runs the matmul routine (OpenBLAS, src/kernels/cpu/
// matmul.cc) on its operands, a vector seen as a 1 x n or n x 1 matrix (K.header_as); outer runs the
// mul loops. mf.einsum (lua/moonflow/linalg.lua) builds on these and the shape ops.
#include "elemwise.h"
#include "registry.h"

namespace mf {

namespace {

// One dtype for every input (arith_type); float for the BLAS products (outer takes any dtype).
void float_one_dtype(InferCtx& c) {
  arith_type(c);
  float_type(c);
}

// "c is 3x5, a is 3x4, b is 3x5": every input's shape, for messages
std::string shapes_str(InferCtx& c) {
  std::string s;
  for (size_t k = 0; k < c.in.size(); ++k) s += (k ? ", " : "") + c.op.inputs_[k] + " is " + shape_str(c.input(k));
  return s;
}

// input ia's size at dim da must equal input ib's at dim db (1-based in the message)
void want_equal(InferCtx& c, size_t ia, int da, size_t ib, int db) {
  const mf_tensor &a = c.input(ia), &b = c.input(ib);
  if (!dims_match(a.shape[da], b.shape[db]))
    fail(c.name(), ": ", shapes_str(c), "; ", c.op.inputs_[ia], ":size(", da + 1, ") = ", a.shape[da], " must equal ",
         c.op.inputs_[ib], ":size(", db + 1, ") = ", b.shape[db]);
}

// "mm: a is 2x3x4; expected a 2-D matrix"
void want_dims(InferCtx& c, size_t i, int nd, const char* what) {
  if (c.input(i).ndim != nd) fail(c.name(), ": ", shapes_str(c), "; expected ", c.op.inputs_[i], " to be ", what);
}

void dot_shape(InferCtx& c) {
  want_dims(c, 0, 1, "1-D");
  want_dims(c, 1, 1, "1-D");
  want_equal(c, 0, 0, 1, 0);
  c.set_out(0, {});
}

void mm_shape(InferCtx& c) {
  want_dims(c, 0, 2, "a 2-D matrix (matmul takes batches)");
  want_dims(c, 1, 2, "a 2-D matrix (matmul takes batches)");
  want_equal(c, 0, 1, 1, 0);
  c.set_out(0, {c.input(0).shape[0], c.input(1).shape[1]});
}

void mv_shape(InferCtx& c) {
  want_dims(c, 0, 2, "a 2-D matrix");
  want_dims(c, 1, 1, "1-D");
  want_equal(c, 0, 1, 1, 0);
  c.set_out(0, {c.input(0).shape[0]});
}

void bmm_shape(InferCtx& c) {
  want_dims(c, 0, 3, "3-D (batch x n x k; matmul broadcasts batches)");
  want_dims(c, 1, 3, "3-D (batch x k x m; matmul broadcasts batches)");
  want_equal(c, 0, 0, 1, 0);
  want_equal(c, 0, 2, 1, 1);
  c.set_out(0, {c.input(0).shape[0], c.input(0).shape[1], c.input(1).shape[2]});
}

void outer_shape(InferCtx& c) {
  want_dims(c, 0, 1, "1-D");
  want_dims(c, 1, 1, "1-D");
  c.set_out(0, {c.input(0).shape[0], c.input(1).shape[0]});
}

// addmm(c, a, b): c must broadcast to a's rows x b's columns
void addmm_shape(InferCtx& c) {
  want_dims(c, 1, 2, "a 2-D matrix");
  want_dims(c, 2, 2, "a 2-D matrix");
  want_equal(c, 1, 1, 2, 0);
  Shape out = {c.input(1).shape[0], c.input(2).shape[1]};
  Shape cs = c.in_shape(0);
  bool ok = cs.size() <= 2;
  for (size_t i = 1; ok && i <= cs.size(); ++i) {
    int64_t s = cs[cs.size() - i], d = out[2 - i];
    ok = s == 1 || dims_match(s, d);
  }
  if (!ok)
    fail("addmm: c is ", shape_str(cs), ", a is ", shape_str(c.input(1)), ", b is ", shape_str(c.input(2)),
         "; expected c to broadcast to ", shape_str(out), " (a's rows x b's columns)");
  c.set_out(0, out);
}

const char* kMatmulKernel = R"lua(
function(ins, outs, p, K)
  local y, a, b = outs[1], ins[1], ins[2]
  return function() K.matmul(y, a, b, 0, 0) end
end)lua";

// the matrix products' gradients: d(a b) = da b + a db
const char* kMatmulGrad = R"lua(
function(a, b, y, gy, p, needs)
  return {needs[1] and mf.matmul(gy, b, false, true) or nil, needs[2] and mf.matmul(a, gy, true, false) or nil}
end)lua";

}  // namespace

void register_linalg_ops() {
  MF_REGISTER_OP(dot)
      .describe("Inner product sum(a * b) of two 1-D tensors of one length, as a 0-dim tensor. Float input (BLAS).")
      .inputs({"a", "b"})
      .strided()
      .infer_shape(dot_shape)
      .infer_type(float_one_dtype)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, a, b = outs[1], ins[1], ins[2]
  local n, sa, sb = a._shape[0], a._strides[0], b._strides[0]
  local a2, b2 = K.header_as(a, {1, n}, {n * sa, sa}), K.header_as(b, {n, 1}, {sb, 1})
  local y2 = K.header_as(y, {1, 1}, {1, 1})
  return function()
    a2._ptr, b2._ptr, y2._ptr = a._ptr, b._ptr, y._ptr
    K.matmul(y2, a2, b2, 0, 0)
  end
end)lua")
      .gradient("function(a, b, y, gy) return {gy * b, gy * a} end");

  MF_REGISTER_OP(mm)
      .describe("Matrix product of two 2-D tensors (n x k times k x m); matmul also takes batches. Float input.")
      .inputs({"a", "b"})
      .strided()
      .infer_shape(mm_shape)
      .infer_type(float_one_dtype)
      .lua_compute(MF_CPU, kMatmulKernel)
      .gradient(kMatmulGrad);

  MF_REGISTER_OP(bmm)
      .describe("Batched matrix product of two 3-D tensors (B x n x k times B x k x m, one batch size: no "
                "broadcasting; matmul broadcasts). Float input.")
      .inputs({"a", "b"})
      .strided()
      .infer_shape(bmm_shape)
      .infer_type(float_one_dtype)
      .lua_compute(MF_CPU, kMatmulKernel)
      .gradient(kMatmulGrad);

  MF_REGISTER_OP(mv)
      .describe("Matrix-vector product of m (n x k) and v (k): a vector of n. Float input.")
      .inputs({"m", "v"})
      .strided()
      .infer_shape(mv_shape)
      .infer_type(float_one_dtype)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, m, v = outs[1], ins[1], ins[2]
  local n, k = m._shape[0], m._shape[1]
  local v2, y2 = K.header_as(v, {k, 1}, {v._strides[0], 1}), K.header_as(y, {n, 1}, {1, 1})
  return function()
    v2._ptr, y2._ptr = v._ptr, y._ptr
    K.matmul(y2, m, v2, 0, 0)
  end
end)lua")
      .gradient("function(m, v, y, gy) return {mf.outer(gy, v), mf.mv(mf.transpose(m, 1, 2), gy)} end");

  MF_REGISTER_OP(outer)
      .alias("ger")
      .describe("Outer product of two 1-D tensors: a (n) and b (m) give the n x m tensor a[i] * b[j] (Torch7's ger). "
                "Any dtype, one for both.")
      .inputs({"a", "b"})
      .strided()
      .infer_shape(outer_shape)
      .infer_type(arith_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, a, b = outs[1], ins[1], ins[2]
  local n, m = a._shape[0], b._shape[0]
  local a2 = K.header_as(a, {n, 1}, {a._strides[0], 1})
  local mul = K.B.mul
  if b._strides[0] ~= 1 and m > 1 and n > 1 then
    -- b strided (a matrix column): each output row would read it element by element, a cache line
    -- apiece, n times over (outer of two 2048-element columns: 40x the contiguous time); one copy to
    -- a unit-stride row first, made once per bind, and the rows read that
    local bc = mf._new_tensor({m}, b._dtype_id, b._device_id)
    local b2 = K.header_as(bc, {1, m}, {m, 1})
    return function()
      a2._ptr = a._ptr
      K.copy(bc, b)
      K.binary(mul, y, a2, b2)
    end
  end
  local b2 = K.header_as(b, {1, m}, {m * b._strides[0], b._strides[0]})
  return function()
    a2._ptr, b2._ptr = a._ptr, b._ptr
    K.binary(mul, y, a2, b2)
  end
end)lua")
      .gradient("function(a, b, y, gy) return {mf.mv(gy, b), mf.mv(mf.transpose(gy, 1, 2), a)} end");

  MF_REGISTER_OP(addmm)
      .describe("beta * c + alpha * (a b): a (n x k) and b (k x m) 2-D, c broadcast to n x m. With beta = 0, c is "
                "ignored (its NaN and inf too), as in PyTorch. Float input.")
      .inputs({"c", "a", "b"})
      .strided()
      .param(Field::number("beta", 1, "Factor of c."))
      .param(Field::number("alpha", 1, "Factor of the product a b."))
      .infer_shape(addmm_shape)
      .infer_type(float_one_dtype)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, c, a, b = outs[1], ins[1], ins[2], ins[3]
  local alpha, beta = p.alpha, p.beta
  if beta == 0 then return function() K.gemm(y, a, b, 0, 0, alpha, 0) end end  -- c is not read
  -- c broadcast into y, then one GEMM accumulating into it (PyTorch's way: no second pass over y)
  return function()
    K.copy(y, c)
    K.gemm(y, a, b, 0, 0, alpha, beta)
  end
end)lua")
      .gradient(R"lua(
function(c, a, b, y, gy, p)
  local ga, gb = mf.matmul(gy, b, false, true), mf.matmul(a, gy, true, false)
  if p.alpha ~= 1 then ga, gb = ga * p.alpha, gb * p.alpha end
  local gc = p.beta == 0 and mf.zeros_like(c) or mf.sum_to(p.beta == 1 and gy or gy * p.beta, c)
  return {gc, ga, gb}
end)lua");
}

}  // namespace mf
