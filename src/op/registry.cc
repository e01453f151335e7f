// Registry storage and the shared shape/type rules.
#include "registry.h"

#include <functional>
#include <mutex>

#include "../core/writes.h"

namespace mf {

const char* InferCtx::name() const { return op.name_.c_str(); }

void InferCtx::set_out(size_t i, const Shape& s) {
  checked_numel(s, name());
  if (out.size() <= i) out.resize(i + 1, mf_tensor{});
  // build time: strides and count as if unknown sizes were 1 (no overflow), the sizes themselves kept
  Shape known = s;
  for (auto& d : known)
    if (is_unknown(d)) d = 1;
  set_meta(out[i], known, in.empty() ? MF_FLOAT32 : in[0]->dtype_id, in.empty() ? MF_CPU : in[0]->device_id);
  for (size_t d = 0; d < s.size(); ++d) out[i].shape[d] = s[d];
}

void unknown_output(InferCtx& c) {
  fail(c.name(), ": the output shape depends on sizes unknown until the graph runs ", kUnknownOutput);
}

const char* const kUnknownOutput = "[unknown-output]";

void InferCtx::set_view(size_t i, const Shape& s, const Shape& stride, int64_t rel_offset) {
  set_out(i, s);
  set_strided(out[i], s, stride, rel_offset);
  if (alias.size() <= i) alias.resize(i + 1, 0);
  alias[i] = 1;
}

const char* const kNoInputGradient = "function() return {} end";

// The attributes a block declares that refer to its inputs or to other ops, checked once the op is
// complete (has_op: whether an op of that name is registered). An op whose every input lends its
// shape gets kNoInputGradient: nothing can flow back to inputs whose values it never reads.
static void complete_attributes(OpDef& op, const std::function<bool(const std::string&)>& has_op) {
  for (int i : op.shape_inputs_)
    if (i < 1 || size_t(i) > op.inputs_.size() || (op.flags_ & MF_OPF_VARIADIC))
      fail(op.name_, ": lends_shape(", i, "), but the op has ", op.inputs_.size(), " fixed input",
           op.inputs_.size() == 1 ? "" : "s");
  if (op.lends_only_shapes()) {
    if ((!op.lua_gradient_.empty() && op.lua_gradient_ != kNoInputGradient) || (op.flags_ & MF_OPF_LOCAL_GRADIENT))
      fail(op.name_, ": every input lends only its shape, so no gradient flows to them; it must declare no gradient");
    op.lua_gradient_ = kNoInputGradient;
  }
  if ((op.flags_ & MF_OPF_DIM_FIRST) &&
      (op.params_.empty() || op.inputs_.size() < 2 || op.inputs_.size() > 3 || !op.lua_adapter_.empty() ||
       (op.flags_ & (MF_OPF_VARIADIC | MF_OPF_LIST_ARGS))))
    fail(op.name_, ": dim_first() needs a first param (dim), two or three fixed inputs, and no other call syntax");
  if (!op.in_place_of_.empty()) {
    if (!(op.flags_ & MF_OPF_WRITES))
      fail(op.name_, ": in_place_of('", op.in_place_of_, "') on an op that writes nothing");
    if (!has_op(op.in_place_of_)) fail(op.name_, ": in_place_of('", op.in_place_of_, "'), an unknown op");
  }
  if (!op.gradient_of_.empty()) {
    if (!op.lua_gradient_.empty() || (op.flags_ & MF_OPF_LOCAL_GRADIENT))
      fail(op.name_, ": gradient_of('", op.gradient_of_, "') on an op with a gradient (gradient_of says it has none)");
    if (!has_op(op.gradient_of_)) fail(op.name_, ": gradient_of('", op.gradient_of_, "'), an unknown op");
  }
}

Registry& Registry::get() {
  static Registry r;
  return r;
}

OpDef& Registry::add(const std::string& name) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (find_unlocked(name)) fail("register_op: an op named '", name, "' is already registered");
  ops_.emplace_back();
  ops_.back().name_ = name;
  return ops_.back();
}

int Registry::add(OpDef op) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (find_unlocked(op.name_)) fail("register_op: an op named '", op.name_, "' is already registered");
  complete_attributes(op, [&](const std::string& n) { return find_unlocked(n) != nullptr; });
  ops_.push_back(std::move(op));
  return int(ops_.size()) - 1;
}

const OpDef* Registry::find_unlocked(const std::string& name) const {
  for (auto& op : ops_)
    if (op.name_ == name) return &op;
  return nullptr;
}

const OpDef* Registry::find(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return find_unlocked(name);
}

int Registry::index_of(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].name_ == name) return int(i);
  return -1;
}

const OpDef& Registry::at_unlocked(int i) const {
  if (i < 0 || i >= int(ops_.size())) fail("no op with index ", i);
  return ops_[size_t(i)];
}

const OpDef& Registry::at(int i) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return at_unlocked(i);
}

int Registry::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return int(ops_.size());
}

void register_builtin_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_elemwise_ops();
    register_matmul_ops();
    register_reduce_ops();
    register_nn_ops();
    register_shape_ops();
    register_init_ops();
    register_autodiff_ops();
    register_optim_ops();
    register_conv_ops();
    register_fused_ops();
    register_transfer_ops();
    register_stats_ops();
    register_linalg_ops();
    register_shape_ext_ops();
    register_factory_ext_ops();
    register_sort_ops();
    register_index_ops();
    register_inplace_ops();
    Registry& reg = Registry::get();
    auto has_op = [&](const std::string& n) { return reg.find_unlocked(n) != nullptr; };
    for (OpDef& op : reg.ops_) complete_attributes(op, has_op);
    // the simplification rules, by index; a rule naming a missing op, or an outer op that takes
    // params or more than one input (they would be lost), is a mistake in its block
    for (int i = 0; i < reg.size(); ++i) {
      for (const OpDef::Fold& f : reg.at(i).folds_) {
        int outer = reg.index_of(f.outer), inner = reg.index_of(f.inner);
        if (outer < 0 || inner < 0) fail(reg.at(i).name_, ": replaces ", f.outer, "(", f.inner, "(...)), an unknown op");
        if (!reg.at(outer).params_.empty() || reg.at(outer).inputs_.size() != 1)
          fail(reg.at(i).name_, ": replaces ", f.outer, "(", f.inner, "(...)); ", f.outer, " must take one input and no params");
        reg.rewrites_.push_back({outer, inner, i});
      }
    }
  });
}

void same_shape(InferCtx& c) { c.set_out(0, c.in_shape(0)); }

void same_type(InferCtx& c) {
  for (auto& o : c.out) o.dtype_id = c.in.empty() ? MF_FLOAT32 : c.input(0).dtype_id;
}

void float_type(InferCtx& c) {
  int dt = c.input(0).dtype_id;
  if (!dtype_is_float(dt))
    fail(c.name(), ": input ", c.op.inputs_.empty() ? "1" : c.op.inputs_[0], " is ", dtype_name(dt),
         "; expected float32 or float64 (cast it with :float())");
  for (auto& o : c.out) o.dtype_id = dt;
}

void int64_type(InferCtx& c) {
  for (auto& o : c.out) o.dtype_id = MF_INT64;
}

void dtype_param(InferCtx& c) { c.out[0].dtype_id = int(c.p.get("dtype").num); }

void write_x(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  check_writable(c, x, "x");
  c.set_view(0, shape_of(x), strides_of(x), 0);
}

void check_writable(InferCtx& c, const mf_tensor& t, const std::string& name) {
  check_writable(t, c.name(), name.c_str());  // the one rule, src/core/writes.h
}

}  // namespace mf
