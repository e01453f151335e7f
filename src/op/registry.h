// The operator registry: one OpDef per op holds its doc, inputs, params, shape and type rules,
// gradient and per-device Lua kernel source. Eager calls, graphs, help() and tests all read it.
#pragma once
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "../core/dtype.h"
#include "../core/shape.h"
#include "../param/param.h"
#include "flags.h"

namespace mf {

struct OpDef;

// What shape and type rules see: the op, its params, input metadata and the outputs to fill.
struct InferCtx {
  const OpDef& op;
  const ParamValues& p;
  std::vector<const mf_tensor*> in;
  std::vector<mf_tensor> out;
  std::vector<int> alias;  // alias[i]: output i is a view of input 1 (strides and offset set by set_view)
  const char* name() const;
  const mf_tensor& input(size_t i) const { return *in[i]; }
  Shape in_shape(size_t i) const { return shape_of(*in[i]); }
  // Declares output i with a contiguous shape (dtype filled by the type rule).
  void set_out(size_t i, const Shape& s);
  // Declares output i as a view of input 1: shape, strides and offset relative to input 1's data.
  void set_view(size_t i, const Shape& s, const Shape& stride, int64_t rel_offset);
};

using InferFn = void (*)(InferCtx&);

// Build time only (an UnknownDims scope, src/core/shape.h): the output shape depends on unknown
// sizes in a way a size cannot express (how many parts split makes, whether squeeze drops a dim).
// Throws an error carrying kUnknownOutput, which graph building reads as "shape known at run".
[[noreturn]] void unknown_output(InferCtx& c);
extern const char* const kUnknownOutput;

struct OpDef {
  std::string name_;
  std::string doc_;
  std::vector<std::string> inputs_;
  std::vector<Field> params_;
  InferFn infer_shape_ = nullptr;
  InferFn infer_type_ = nullptr;
  std::string lua_compute_[2];  // indexed by mf_device
  std::string lua_gradient_;    // Lua source of the gradient rule (graph mode)
  int flags_ = 0;               // mf_op_flag bits
  int pointwise_ = -1;          // code of its functor's loops in the pointwise table (src/op/elemwise.h), or -1
  int mask_input_ = 0;          // 1-based index of the input that is a selection mask (mask_input), or 0
  int num_written_ = 0;         // writes(n): inputs 1..n are written in place
  std::string lua_adapter_;     // Lua source of the call syntax when the default does not fit (lua_adapter)
  std::string lua_shape_;       // Lua-registered ops: source of the shape rule function(in_shapes, p), or empty
  struct Fold {                 // a graph simplification rule (replaces)
    std::string outer, inner;
  };
  std::vector<Fold> folds_;
  std::vector<std::string> aliases_;  // other names of its function and method (alias)
  int num_outputs_ = -1;              // outputs(n), or -1: the shape rule decides
  int (*count_outputs_)(const ParamValues&) = nullptr;  // outputs(f)
  std::vector<int> shape_inputs_;     // lends_shape(i): 1-based input indices
  std::string in_place_of_;           // in_place_of(op): the out-of-place op it is the in-place form of
  std::string gradient_of_;           // gradient_of(op): the op whose gradient rule builds this one

  // Builder used by MF_REGISTER_OP blocks.
  OpDef& describe(std::string d) { doc_ = std::move(d); return *this; }
  OpDef& inputs(std::vector<std::string> n) { inputs_ = std::move(n); return *this; }
  OpDef& variadic() { flags_ |= MF_OPF_VARIADIC; return *this; }  // any number of inputs named inputs_[0]
  OpDef& view() { flags_ |= MF_OPF_VIEW | MF_OPF_STRIDED; return *this; }  // output aliases input 1's storage (so strided)
  // The kernel reads (and writes) its inputs through their sizes, strides and offset. Without it the
  // engine hands the kernel contiguous inputs, copying other views first (eager and graph); an op
  // that writes its inputs in place must be strided. Outputs are always fresh and contiguous.
  OpDef& strided() { flags_ |= MF_OPF_STRIDED; return *this; }
  OpDef& random() { flags_ |= MF_OPF_RANDOM; return *this; }      // draws from the generator
  // updates the variables among its inputs; eagerly, inputs 1..n are the tensors it writes (their
  // storages' versions count the write: an optimizer update writes its state buffers too)
  OpDef& writes(int n = 1) { flags_ |= MF_OPF_WRITES; num_written_ = n; return *this; }
  OpDef& inplace() { flags_ |= MF_OPF_INPLACE; return *this; }    // output may take over a dying input's storage
  // Writes input 1 whole from input 2 without reading it first (assign): a variable it writes needs
  // no value before, and fusion may compute input 2 straight into it.
  OpDef& overwrites() { flags_ |= MF_OPF_OVERWRITES; return *this; }
  // Returns its outputs as one Lua list, however many its params and input shapes make (split).
  OpDef& list_output() { flags_ |= MF_OPF_LIST_OUTPUT; return *this; }
  // Its first param, an integer list, may also be given as separate numbers after the inputs:
  // reshape(x, 2, 3), zeros(2, 3); its other params then come in a trailing table.
  OpDef& list_args() { flags_ |= MF_OPF_LIST_ARGS; return *this; }
  // Input i (1-based) lends only its shape and dtype: the op never reads its values (zeros_like's x,
  // sum_to's like), so no gradient flows to it, and a gradient rule that passes a saved tensor there
  // does not read that tensor (the tape checks the versions only of what rules read). An op whose
  // every input lends its shape gets the rule kNoInputGradient from the registry (it must give none).
  OpDef& lends_shape(int i) { shape_inputs_.push_back(i); return *this; }  // checked when registered
  bool lends_shape_of(size_t i) const {  // i: 0-based
    for (int k : shape_inputs_)
      if (size_t(k) == i + 1) return true;
    return false;
  }
  // Every input lends only its shape (and there is one): the outputs do not depend on input values.
  bool lends_only_shapes() const {
    if (inputs_.empty() || (flags_ & MF_OPF_VARIADIC)) return false;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!lends_shape_of(i)) return false;
    return true;
  }
  // This write op is the in-place form of op (add_ of add): a graph refusing the write points there.
  OpDef& in_place_of(std::string op) { in_place_of_ = std::move(op); return *this; }
  // This op is what op's gradient rule builds (cumprod_grad of cumprod) and has no gradient itself:
  // op is differentiable once only, and a second-order gradient through it says so by name.
  OpDef& gradient_of(std::string op) { gradient_of_ = std::move(op); return *this; }
  // Returns input 1 unchanged when inputs 1 and 2 have the same shape (sum_to, broadcast_like):
  // graph building adds no node for it then.
  OpDef& identity_if_same_shape() { flags_ |= MF_OPF_SAME_SHAPE_IDENTITY; return *this; }
  // Input i (1-based) is a selection mask (where's cond): a Lua number among the operands never
  // takes its dtype.
  OpDef& mask_input(int i) { mask_input_ = i; return *this; }
  // Its number of outputs where the params alone decide it: n always (sort's values and indices), or
  // f(params) (max: two over exactly one dim, else one). A graph reads it (mf_op_num_outputs) where
  // input shapes are unknown until run time; the shape rule must agree (checked at every inference).
  // Undeclared, such a graph node gets one output. list_output ops (split) cannot declare one.
  OpDef& outputs(int n) { num_outputs_ = n; return *this; }
  OpDef& outputs(int (*f)(const ParamValues&)) { count_outputs_ = f; return *this; }
  // The declared count for params p, or -1 when the shape rule alone knows it.
  int declared_outputs(const ParamValues& p) const { return count_outputs_ ? count_outputs_(p) : num_outputs_; }
  // The Lua call syntax, for an op where inputs, then params in declared order, then a table of
  // named params does not fit: the source of function(op, ...) returning the inputs list and the
  // params table (or nil). Compiled once per engine, like a kernel string.
  OpDef& lua_adapter(std::string src) { lua_adapter_ = std::move(src); return *this; }
  // Its call also takes PyTorch's order, the first param (dim) right after input 1 and before the
  // other inputs: x:gather(dim, index), x:scatter(dim, index, src), beside the inputs-then-params
  // mf.gather(x, index[, dim]). A number second argument followed by exactly the other inputs is
  // that order (in the other, argument 2 is an input). The eager dispatcher (lua/moonflow/ops.lua)
  // runs both orders on its path without tables or varargs (a Lua adapter string ran interpreted).
  // Checked when registered: a first param, two or three fixed inputs, no lua_adapter or list_args.
  OpDef& dim_first() { flags_ |= MF_OPF_DIM_FIRST; return *this; }
  // Another name for mf.<name> and its tensor method: TensorFlow's reduce_sum for sum, Torch7's cmul
  // for mul.
  OpDef& alias(std::string a) {
    aliases_.push_back(std::move(a));
    return *this;
  }
  // Graph simplification (Graph::simplify): a node outer(inner(x..., p)), whose outer op takes no
  // params, becomes this op on x... with p: log_softmax replaces log over softmax.
  OpDef& replaces(std::string outer, std::string inner) {
    folds_.push_back({std::move(outer), std::move(inner)});
    return *this;
  }
  OpDef& param(Field f) { params_.push_back(std::move(f)); return *this; }
  OpDef& infer_shape(InferFn f) { infer_shape_ = f; return *this; }
  OpDef& infer_type(InferFn f) { infer_type_ = f; return *this; }
  // The kernel string for a device's strings slot (MF_CPU, MF_CUDA). A CPU string is device-generic
  // when it reaches native code only through K (the kernel table of the device the op runs on) and
  // reads no host memory: nearly all are, so the CUDA slot runs the CPU string unless the block
  // gives lua_compute(MF_CUDA, ...) of its own (for a string that reads values on the host, or a
  // faster CUDA path). Host reads that remain (x:item()) copy and wait for the device: correct, slow.
  OpDef& lua_compute(int device, std::string src) { lua_compute_[device] = std::move(src); return *this; }
  const std::string& lua_compute_for(int strings) const {
    // a native op's CPU string serves cuda too when it only calls the device's kernel table (K);
    // an op registered from Lua reads memory itself, so it runs on cuda only with its own string
    bool fallback = strings == MF_CUDA && lua_compute_[MF_CUDA].empty() && !(flags_ & MF_OPF_LUA);
    return fallback ? lua_compute_[MF_CPU] : lua_compute_[strings];
  }
  OpDef& gradient(std::string src) { lua_gradient_ = std::move(src); return *this; }
};

// Process-wide: every engine (Lua state) on every thread shares it. Lookups take a shared lock and
// additions an exclusive one; an OpDef, once added, stays at its address for the life of the process.
class Registry {
 public:
  static Registry& get();
  // Adds a new op and returns it for the MF_REGISTER_OP chain, which then writes it unlocked: only for
  // register_builtin_ops(), which runs once (std::call_once) before any lookup. Throws if the name is taken.
  OpDef& add(const std::string& name);
  // Adds a complete op (registered from Lua: params and all, it never changes afterwards) and
  // returns its index; throws if the name is taken.
  int add(OpDef op);
  const OpDef* find(const std::string& name) const;
  // A simplification rule as Graph::simplify applies it: outer(inner(x..., p)) -> result(x..., p),
  // by registry index. Built from the built-in ops' replaces() once, by register_builtin_ops().
  struct Rewrite {
    int outer, inner, result;
  };
  const std::vector<Rewrite>& rewrites() const { return rewrites_; }
  int index_of(const std::string& name) const;
  const OpDef& at(int i) const;
  int size() const;
  // Runs f(op i) under the shared lock.
  template <typename F>
  auto read(int i, F&& f) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return f(at_unlocked(i));
  }

 private:
  const OpDef* find_unlocked(const std::string& name) const;
  const OpDef& at_unlocked(int i) const;
  mutable std::shared_mutex mu_;
  std::deque<OpDef> ops_;  // deque: references stay valid as ops are added
  std::vector<Rewrite> rewrites_;
  friend void register_builtin_ops();
};

// Registers every built-in op exactly once (explicit, so static linking cannot drop it).
void register_builtin_ops();

// Family registration functions, one per src/op/<family>.cc.
void register_elemwise_ops();
void register_matmul_ops();
void register_reduce_ops();
void register_nn_ops();
void register_shape_ops();
void register_init_ops();
void register_autodiff_ops();
void register_optim_ops();
void register_conv_ops();
void register_fused_ops();
void register_transfer_ops();
void register_stats_ops();
void register_linalg_ops();
void register_shape_ext_ops();    // src/op/shape_ext.cc
void register_factory_ext_ops();  // src/op/factory_ext.cc
void register_sort_ops();
void register_index_ops();
void register_inplace_ops();

// Kernel factory of view ops: alias input 1 when the shape rule made the output a view (set_view),
// else copy input 1 into the output's shape, row-major (src/op/shape.cc).
extern const char* const kViewKernel;
// Kernel factory of ops whose outputs are all views of input 1 at the offsets their shape rule set
// (split, chunk, unbind; src/op/shape.cc).
extern const char* const kListViewKernel;

// Kernel factory of ops that write input 2 into input 1 and return input 1 (copy, assign): the
// device's copy routine, then output 1 aliases input 1 (src/op/transfer.cc).
extern const char* const kCopyKernel;

// Factories (src/op/init.cc; also empty, full_like, rand_like ...): their shape and dtype params, the
// shape rule that reads the shape param, and their kernel factories.
Field shape_field();
Field dtype_field();
void shape_param(InferCtx& c);  // output 1 has the shape param's sizes
// Kernel factory that fills output 1 with value, a Lua expression ("0", "p.value").
std::string fill_kernel(const char* value);
// Kernel factory that fills output 1 with draws from the seeded generator: uniform in [p.<a>, p.<b>),
// or normal with mean p.<a> and std p.<b>.
std::string draw_kernel(bool normal, const char* a, const char* b);

// Gradient rule through which nothing flows back to any input: one_hot's integer labels. An op
// whose every input lends only its shape (lends_shape) gets it from the registry.
extern const char* const kNoInputGradient;

// Common rules.
void same_shape(InferCtx& c);        // out 1 has input 1's shape
void same_type(InferCtx& c);         // every output has input 1's dtype
void float_type(InferCtx& c);        // input 1 must be float; outputs take its dtype
void int64_type(InferCtx& c);        // every output is int64 (indices, counts)
void dtype_param(InferCtx& c);       // output 1 has the dtype param's dtype (factories)
// t's strides as a Shape (shape_of's twin), for set_view (src/kernels/cpu keeps its own: it sits below op)
inline Shape strides_of(const mf_tensor& t) { return Shape(t.strides, t.strides + t.ndim); }
// x (input 1) is written in place: output 1 is x itself, a view of all of it; an x with overlapping
// elements is refused (check_writable). The in-place ops' shape rule, after their op's own checks.
void write_x(InferCtx& c);
// List-output ops (split, chunk, unbind): the most parts one call gives. Eager calls and graphs take
// any count up to it (their buffers grow); the bound keeps chunk(empty, 1e15) from asking for that
// many headers.
constexpr int64_t kMaxParts = 65536;
// Ops that write t in place: refuses a view with overlapping elements (expand), naming it
// (the rule of src/core/writes.h, which copy and fill apply at run time too).
void check_writable(InferCtx& c, const mf_tensor& t, const std::string& name);

}  // namespace mf

// MF_REGISTER_OP(name) starts a registration block inside a register_*_ops() function.
#define MF_REGISTER_OP(opname) ::mf::Registry::get().add(#opname)
