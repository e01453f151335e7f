// Matrix products. Kernel: src/kernels/cpu/matmul.cc (OpenBLAS sgemm/dgemm).
#include "registry.h"

namespace mf {

namespace {

void matmul_shape(InferCtx& c) {
  const mf_tensor &a = c.input(0), &b = c.input(1);
  bool ta = c.p.get_bool("transpose_a"), tb = c.p.get_bool("transpose_b");
  if (a.ndim < 2 || b.ndim < 2)
    fail("matmul: a is ", shape_str(a), ", b is ", shape_str(b), "; both need at least 2 dims (reshape a vector to 1xn)");
  int64_t n = a.shape[a.ndim - 2], k = a.shape[a.ndim - 1], k2 = b.shape[b.ndim - 2], m = b.shape[b.ndim - 1];
  if (ta) std::swap(n, k);
  if (tb) std::swap(k2, m);
  if (!dims_match(k, k2))  // at graph build a size may be unknown ('?'): only known sizes must agree
    fail("matmul: a is ", shape_str(a), ta ? " (transposed)" : "", ", b is ", shape_str(b), tb ? " (transposed)" : "",
         "; a:size(", ta ? a.ndim - 1 : a.ndim, ") = ", k, " must equal b:size(", tb ? b.ndim : b.ndim - 1, ") = ", k2);
  Shape ba(a.shape, a.shape + a.ndim - 2), bb(b.shape, b.shape + b.ndim - 2);
  Shape out = broadcast_shapes("matmul", ba, bb, "a's batch dims", "b's batch dims");
  out.push_back(n);
  out.push_back(m);
  c.set_out(0, out);
}

void matmul_type(InferCtx& c) {
  if (c.input(0).dtype_id != c.input(1).dtype_id)
    fail("matmul: a is ", dtype_name(c.input(0).dtype_id), ", b is ", dtype_name(c.input(1).dtype_id), "; expected one dtype");
  float_type(c);
}

}  // namespace

void register_matmul_ops() {
  MF_REGISTER_OP(matmul)
      .describe("Matrix product of the last two dims of a and b; leading (batch) dims broadcast.")
      .inputs({"a", "b"})
      .strided()
      .param(Field::boolean("transpose_a", false, "Use the transpose of a's last two dims."))
      .param(Field::boolean("transpose_b", false, "Use the transpose of b's last two dims."))
      .infer_shape(matmul_shape)
      .infer_type(matmul_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local c, a, b = outs[1], ins[1], ins[2]
  local ta, tb = p.transpose_a and 1 or 0, p.transpose_b and 1 or 0
  return function() K.matmul(c, a, b, ta, tb) end
end)lua")
      .gradient(R"lua(
function(a, b, y, gy, p, needs)
  -- a term nobody wants is skipped (needs: the gradient contract): a network's input gets none
  local ta, tb = p.transpose_a, p.transpose_b
  local ga, gb
  if needs[1] then ga = ta and mf.matmul(b, gy, tb, true) or mf.matmul(gy, b, false, not tb) end
  if needs[2] then gb = tb and mf.matmul(gy, a, true, ta) or mf.matmul(a, gy, not ta, false) end
  -- only batch dims broadcast: two matrices need no sum_to, whose eager alias would keep the
  -- product's storage shared, so backward could not take it over as .grad (a copy per step)
  if a:dim() ~= 2 or b:dim() ~= 2 then
    ga = ga and mf.sum_to(ga, a)
    gb = gb and mf.sum_to(gb, b)
  end
  return {ga, gb}
end)lua");
}

}  // namespace mf
