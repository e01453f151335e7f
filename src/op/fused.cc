// Fused elementwise operators: a whole expression of pointwise ops as one node. The session's
// fusion pass (lua/moonflow/fusion.lua) builds them from a graph's elementwise subgraphs; they are
// ordinary registry ops, so they can also be called directly. Kernel: src/kernels/cpu/fused.cc.
#include "../core/pointwise.h"
#include "registry.h"

namespace mf {

namespace {

// The program must be valid for this many inputs (the error names the step).
void check_program(InferCtx& c) {
  const std::vector<int64_t>& prog = c.p.get_list("program");
  check_fused_program(int(c.in.size()), int(prog.size()), prog.data());
}

// The output is the broadcast of every input (each fused step's shape).
void fused_shape(InferCtx& c) {
  if (c.in.empty()) fail(c.name(), ": expected at least one input");
  check_program(c);
  Shape s = c.in_shape(0);
  for (size_t i = 1; i < c.in.size(); ++i)
    s = broadcast_shapes(c.name(), s, c.in_shape(i), "the broadcast of the earlier inputs",
                         ("input " + std::to_string(i + 1)).c_str());
  c.set_out(0, s);
}

// fused_assign: the output is a view of ref (input 1), which every other input broadcasts to.
void fused_assign_shape(InferCtx& c) {
  if (c.in.empty()) fail(c.name(), ": expected the variable ref and the program's other inputs");
  check_program(c);
  const mf_tensor& ref = c.input(0);
  Shape s = shape_of(ref);
  for (size_t i = 1; i < c.in.size(); ++i)
    if (!shapes_match(broadcast_shapes(c.name(), s, c.in_shape(i), "ref", ("input " + std::to_string(i + 1)).c_str()), s))
      fail(c.name(), ": input ", i + 1, " is ", shape_str(c.input(i)), "; it must broadcast to ref ", shape_str(s));
  check_writable(c, ref, "ref");
  c.set_view(0, s, Shape(ref.strides, ref.strides + ref.ndim), 0);
}

void fused_type(InferCtx& c) {
  int dt = c.input(0).dtype_id;
  if (!dtype_is_float(dt)) fail(c.name(), ": input 1 is ", dtype_name(dt), "; expected float32 or float64");
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.input(i).dtype_id != dt)
      fail(c.name(), ": input ", i + 1, " is ", dtype_name(c.input(i).dtype_id), ", input 1 is ", dtype_name(dt),
           "; expected one dtype");
  c.out[0].dtype_id = dt;
}

const char* const kProgramDoc =
    "Flat list of (op, a, b) triples, one per step: op is the pointwise code of a fusable op (mf.kernels.U: "
    "unary without params; mf.kernels.B: binary but comparisons); a and b name values: 0..n-1 the inputs, n+s "
    "the result of step s (0-based); b is ignored for unary steps. The last step's result is the output.";

}  // namespace

void register_fused_ops() {
  MF_REGISTER_OP(fused_elementwise)
      .describe("Evaluates a program of pointwise ops over broadcast inputs in one pass over memory "
                "(what graph fusion turns elementwise chains into). No gradient: fusion runs after autodiff.")
      .inputs({"inputs"})
      .strided()
      .variadic()
      .param(Field::int_list("program", "", kProgramDoc).mandatory())
      .infer_shape(fused_shape)
      .infer_type(fused_type)
      .inplace()
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y = outs[1]
  local prog, list, n = K.fused_program(#ins, p.program), K.tensor_list(ins), #ins
  K.fused_prepare(prog, y)  -- on cuda: the kernel is generated and compiled now, at bind time
  return function() K.fused(prog, y, n, list) end
end)lua");

  MF_REGISTER_OP(fused_assign)
      .describe("Evaluates a fused_elementwise program and writes the result into the variable ref (input 1, "
                "which the program may read as value 0) in the same pass; returns ref.")
      .inputs({"inputs"})
      .variadic()
      .param(Field::int_list("program", "", kProgramDoc).mandatory())
      .view()
      .writes()
      .infer_shape(fused_assign_shape)
      .infer_type(fused_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, ref = outs[1], ins[1]
  local prog, list, n = K.fused_program(#ins, p.program), K.tensor_list(ins), #ins
  K.fused_prepare(prog, ref)
  if ref._is_contig == 0 then  -- a strided ref: evaluate densely, then write through its strides
    local tmp = mf._new_like_meta(ref, 'fused_assign')
    return function() K.fused(prog, tmp, n, list); K.copy(ref, tmp); K.alias(y, ref, 0) end
  end
  return function() K.fused(prog, ref, n, list); K.alias(y, ref, 0) end
end)lua");
}

}  // namespace mf
