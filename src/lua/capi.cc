// The extern "C" entry points LuaJIT binds. Each one runs through guard() (guard.h), which turns
// every exception into a status and mf_last_error(), so no C++ exception ever crosses the FFI.
#include "capi.h"

#include <chrono>
#include <cstring>
#include <new>

#include "../core/allocator.h"
#include "../core/device.h"
#include "../core/error.h"
#include "../core/pointwise.h"
#include "../core/rng.h"
#include "../core/tensor.h"
#include "../core/threads.h"
#include "../core/writes.h"
#include "../kernels/cpu/blas.h"
#include "../kernels/cpu/kernels.h"
#include "../op/registry.h"
#include "guard.h"

using namespace mf;

namespace {

// The dims count and shape pointer a caller passes; builds nothing (tensor creation is a hot path).
void check_shape_args(int32_t ndim, const int64_t* shape) {
  if (ndim < 0 || ndim > kMaxDims) fail("tensor: ", ndim, " dims requested; expected 0..", kMaxDims);
  if (ndim > 0 && !shape) fail("tensor: ", ndim, " dims requested but the shape array is null");
}

Shape to_shape(int32_t ndim, const int64_t* shape) {
  check_shape_args(ndim, shape);
  return Shape(shape, shape + ndim);
}

std::string list_str(const Shape& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

void need(const void* p, const char* what) {
  if (!p) fail(what, ": null tensor");
}

const OpDef& op_at(int op) { return Registry::get().at(op); }

// Returns a pointer to a string that lives as long as the registry (or "" for missing).
const char* cstr(const std::string& s) { return s.c_str(); }

}  // namespace

struct mf_params {
  ParamValues values;
};

// Entries that only read a field, a constant or a clock (no allocation, no lock, nothing that
// throws) skip the wrapper; every other one runs its body through guard() or guard_value().
extern "C" {

const char* mf_last_error(void) { return last_error(); }

volatile int32_t* mf_interrupt_flag(void) {
  static volatile int32_t flag = 0;
  return &flag;
}
const char* mf_version(void) { return "0.1.0"; }

double mf_clock(void) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// -- tensors ---------------------------------------------------------------------------------
int mf_tensor_init(mf_tensor* t, int32_t ndim, const int64_t* shape, int32_t dtype, int32_t device) {
  return guard(__func__, [&] {
    need(t, "tensor");
    check_shape_args(ndim, shape);
    tensor_init(*t, ndim, shape, dtype, device);
  });
}

int mf_tensor_wrap(mf_tensor* t, void* data, int32_t ndim, const int64_t* shape, int32_t dtype) {
  return guard(__func__, [&] {
    need(t, "wrap");
    tensor_wrap(*t, data, to_shape(ndim, shape), dtype);
  });
}

int mf_tensor_share(mf_tensor* dst, const mf_tensor* src) {
  return guard(__func__, [&] {
    need(dst, "share");
    need(src, "share");
    tensor_share(*dst, *src);
  });
}

int mf_tensor_restride(mf_tensor* t, int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t offset) {
  return guard(__func__, [&] {
    need(t, "view");
    if (!t->store) fail("view: tensor has no storage");
    Shape s = to_shape(ndim, shape);
    if (ndim > 0 && !strides) fail("view: ", ndim, " dims requested but the strides array is null");
    Shape st(strides, strides + ndim);
    checked_numel(s, "view");  // negative sizes, too many elements
    int64_t es = dtype_size(t->dtype_id);
    if (es == 0) fail("view: tensor has invalid dtype code ", t->dtype_id);
    if (offset < 0) fail("view: offset ", offset, " is negative");
    // every addressed element must stay inside the storage (arithmetic that overflows is refused)
    int64_t lo = offset, hi = offset, end = 0;
    bool empty = false;
    for (int i = 0; i < ndim; ++i) empty = empty || s[i] == 0;
    for (int i = 0; i < ndim && !empty; ++i) {
      int64_t span;
      bool over = __builtin_mul_overflow(s[i] - 1, st[i], &span);
      over = over || (span < 0 ? __builtin_add_overflow(lo, span, &lo) : __builtin_add_overflow(hi, span, &hi));
      if (over) fail("view: shape ", shape_str(s), " with stride ", st[i], " at dim ", i + 1, " overflows the address range");
    }
    if (!empty && (lo < 0 || __builtin_add_overflow(hi, 1, &end) || __builtin_mul_overflow(end, es, &end) ||
                   end > t->store->nbytes))
      fail("view: shape ", shape_str(s), " with strides (", list_str(st), ") and offset ", offset,
           " reaches outside the storage of ", t->store->nbytes / es, " elements");
    char* base = (char*)t->store->ptr;  // offsets count from the storage's first element
    set_strided(*t, s, st, offset);
    t->ptr = base + offset * es;
  });
}

void mf_tensor_release(mf_tensor* t) {
  guard(__func__, [&] {
    if (t) tensor_release(*t);
  });
}
int64_t mf_tensor_nbytes(const mf_tensor* t) { return t ? tensor_nbytes(*t) : 0; }
int mf_tensor_same_layout(const mf_tensor* a, const mf_tensor* b) {
  if (!a || !b) return 0;
  if (a->ndim != b->ndim || a->dtype_id != b->dtype_id || a->device_id != b->device_id) return 0;
  for (int32_t d = 0; d < a->ndim; ++d)
    if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return 0;
  return 1;
}
int mf_storage_refcount(const mf_tensor* t) { return t && t->store ? t->store->refs.load() : 0; }
int64_t mf_storage_version(const mf_tensor* t, int32_t* last_writer) {
  if (!t || !t->store) return 0;
  if (last_writer) *last_writer = t->store->last_writer.load(std::memory_order_relaxed);
  return t->store->version.load(std::memory_order_relaxed);
}
void mf_storage_bump(const mf_tensor* t, int32_t writer) {
  if (!t || !t->store) return;
  // a plain increment, not a locked add: right after a kernel a locked instruction waits for the
  // kernel's stores to drain (a 64 KB eager fill paid 4 ns); writers of one storage on two threads at
  // once race on its bytes anyway, and the tape needs the count to change, not to be exact
  auto& v = t->store->version;
  v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  t->store->last_writer.store(writer, std::memory_order_relaxed);
}
int mf_dtype_size(int32_t dtype) { return dtype_size(dtype); }
int mf_check_writable(const mf_tensor* t, const char* what) {
  return guard(__func__, [&] {
    need(t, what ? what : "write");
    check_meta(*t, what ? what : "write", "tensor");
    check_writable(*t, what ? what : "write", "tensor");
  });
}
int mf_check_value(double v, int32_t dtype, const char* what) {
  return guard(__func__, [&] { check_value_fits(v, dtype, what ? what : "write"); });
}

int mf_memory_stats_get(int32_t device, mf_memory_stats* out) {
  return guard(__func__, [&] {
    AllocatorStats s = mf::device(device).allocator->stats();
    *out = mf_memory_stats{s.in_use, s.peak, s.cached, s.allocations, s.system_allocations, s.live_blocks};
  });
}

int mf_memory_empty_cache(int32_t device) {
  return guard(__func__, [&] {
    mf::device(device).allocator->empty_cache();
  });
}

int mf_set_num_threads(int n) {
  return guard(__func__, [&] {
    if (n < 1) fail("set_num_threads: n is ", n, "; expected at least 1");
    set_num_threads(n);
  });
}
int mf_get_num_threads(void) { return get_num_threads(); }
int mf_blas_info_get(mf_blas_info* out) {
  return guard(__func__, [&] {
    if (!out) fail("blas_info: the output struct is null");
    const BlasInfo& b = blas_info();
    *out = mf_blas_info{b.loaded, b.chosen, b.user_coretype, b.preloaded, b.parallel,
                        b.library, b.core, b.config, b.error};
  });
}

// -- registry --------------------------------------------------------------------------------
int mf_op_count(void) { return guard_value(__func__, -1, [&] { return Registry::get().size(); }); }
int mf_op_find(const char* name) {
  return guard_value(__func__, -1, [&] { return Registry::get().index_of(name ? name : ""); });
}

// A registry read through the boundary wrapper: expr's value, or fallback when it throws.
#define MF_OP_FIELD(expr, fallback) return guard_value(__func__, fallback, [&] { return (expr); });

const char* mf_op_name(int op) { MF_OP_FIELD(cstr(op_at(op).name_), nullptr) }
const char* mf_op_doc(int op) { MF_OP_FIELD(cstr(op_at(op).doc_), nullptr) }
int mf_op_num_inputs(int op) { MF_OP_FIELD(int(op_at(op).inputs_.size()), -1) }
const char* mf_op_input_name(int op, int i) { MF_OP_FIELD(cstr(op_at(op).inputs_.at(size_t(i))), nullptr) }
const char* mf_op_lua_compute(int op, int32_t device) {
  MF_OP_FIELD(device == MF_CPU || device == MF_CUDA ? cstr(op_at(op).lua_compute_for(device)) : nullptr, nullptr)
}
const char* mf_op_lua_gradient(int op) { MF_OP_FIELD(cstr(op_at(op).lua_gradient_), nullptr) }
int mf_op_flags(int op) { MF_OP_FIELD(op_at(op).flags_, -1) }
int mf_op_pointwise(int op, int32_t* arity, int32_t* fusable) {
  MF_OP_FIELD([&] {
    const PointwiseKernels* k = pointwise_at(op_at(op).pointwise_);
    if (arity) *arity = k ? k->arity : 0;
    if (fusable) *fusable = k && k->fusable;
    return k ? op_at(op).pointwise_ : -1;
  }(), -1)
}
int mf_op_mask_input(int op) { MF_OP_FIELD(op_at(op).mask_input_, -1) }
int mf_op_num_written(int op) { MF_OP_FIELD(op_at(op).num_written_, -1) }
int mf_op_lends_shape(int op, int i) { MF_OP_FIELD(op_at(op).lends_shape_of(size_t(i)) ? 1 : 0, -1) }
const char* mf_op_in_place_of(int op) { MF_OP_FIELD(cstr(op_at(op).in_place_of_), nullptr) }
const char* mf_op_gradient_of(int op) { MF_OP_FIELD(cstr(op_at(op).gradient_of_), nullptr) }
int mf_op_num_outputs(int op, const mf_params* p) {
  return guard_value(__func__, -1, [&] {
    const OpDef& def = op_at(op);
    if (p) return def.declared_outputs(p->values);
    return Registry::get().read(op, [&](const OpDef& d) {
      return d.declared_outputs(ParamValues::parse(d.name_, d.params_, ""));
    });
  });
}
const char* mf_op_lua_adapter(int op) { MF_OP_FIELD(cstr(op_at(op).lua_adapter_), nullptr) }
const char* mf_op_lua_shape(int op) { MF_OP_FIELD(cstr(op_at(op).lua_shape_), nullptr) }
int mf_op_num_aliases(int op) { MF_OP_FIELD(int(op_at(op).aliases_.size()), -1) }
const char* mf_op_alias(int op, int i) { MF_OP_FIELD(cstr(op_at(op).aliases_.at(size_t(i))), nullptr) }
int mf_op_num_params(int op) { MF_OP_FIELD(Registry::get().read(op, [](const OpDef& d) { return int(d.params_.size()); }), -1) }
const char* mf_op_param_name(int op, int i) {
  MF_OP_FIELD(Registry::get().read(op, [&](const OpDef& d) { return cstr(d.params_.at(size_t(i)).name); }), nullptr)
}
const char* mf_op_param_type(int op, int i) {
  MF_OP_FIELD(Registry::get().read(op, [&](const OpDef& d) { return d.params_.at(size_t(i)).kind_name(); }), nullptr)
}
const char* mf_op_param_default(int op, int i) {
  MF_OP_FIELD(Registry::get().read(op, [&](const OpDef& d) {
                const Field& f = d.params_.at(size_t(i));
                return f.required ? "(required)" : cstr(f.default_text);
              }),
              nullptr)
}
const char* mf_op_param_doc(int op, int i) {
  MF_OP_FIELD(Registry::get().read(op, [&](const OpDef& d) { return cstr(d.params_.at(size_t(i)).doc); }), nullptr)
}

// A param of a Lua-registered op from its declaration (register_op's params table).
static Field lua_param(const std::string& op, const char* name, const char* kind, const char* default_text,
                       const char* doc) {
  std::string k = kind ? kind : "", n = name ? name : "";
  if (n.empty()) fail(op, ": a param needs a name");
  Field f{n, FieldKind::Float, default_text ? default_text : "", doc ? doc : ""};
  if (k == "boolean") f.kind = FieldKind::Bool;
  else if (k == "integer") f.kind = FieldKind::Int;
  else if (k == "number") f.kind = FieldKind::Float;
  else if (k == "dtype") f.kind = FieldKind::Dtype;
  else if (k == "integer list") f.kind = FieldKind::IntList;
  else if (k.rfind("enum:", 0) == 0) {
    f.kind = FieldKind::Enum;
    std::string rest = k.substr(5);
    size_t pos = 0;
    while (pos <= rest.size()) {
      size_t bar = rest.find('|', pos);
      if (bar == std::string::npos) bar = rest.size();
      f.choices.push_back(rest.substr(pos, bar - pos));
      pos = bar + 1;
    }
  } else {
    fail(op, ": param '", n, "' has kind '", k, "'; expected boolean, integer, number, dtype, integer list or enum:a|b");
  }
  f.required = default_text == nullptr;
  if (!f.required) ParamValues::parse(op, {f}, "");  // the default must itself be valid
  return f;
}

// The op is complete (params included) before it becomes visible to other threads and engines,
// and never changes afterwards.
int mf_op_register_lua(const char* name, const char* doc, int num_inputs, const char* cpu_src,
                       const char* gradient_src, const char* shape_src, int flags, int num_params,
                       const char* const* param_names, const char* const* param_kinds,
                       const char* const* param_defaults, const char* const* param_docs,
                       const mf_op_lua_attrs* attrs) {
  int index = -1;
  int st = guard(__func__, [&] {
    if (!name || !*name) fail("register_op: name is required");
    if (num_inputs < 0 || num_inputs > 64) fail("register_op: ", name, ": num_inputs is ", num_inputs, "; expected 0..64");
    if (num_params < 0 || num_params > 64) fail("register_op: ", name, ": ", num_params, " params; expected 0..64");
    OpDef op;
    op.name_ = name;
    op.describe(doc ? doc : "");
    std::vector<std::string> ins;
    for (int i = 0; i < num_inputs; ++i) ins.push_back("x" + std::to_string(i + 1));
    op.inputs(ins);
    if (cpu_src) op.lua_compute(MF_CPU, cpu_src);
    if (gradient_src) op.gradient(gradient_src);
    op.flags_ |= (flags | MF_OPF_LUA);
    if (flags & MF_OPF_WRITES) {
      int n = attrs ? attrs->num_written : 0;
      if (n < 1 || n > num_inputs)
        fail("register_op ", name, ": writes ", n, " inputs; expected 1..", num_inputs, " (inputs 1..n are written)");
      op.writes(n);
    }
    if (attrs) {
      for (int i = 0; i < attrs->num_shape_inputs; ++i) op.lends_shape(attrs->shape_inputs[i]);
      if (attrs->in_place_of) op.in_place_of(attrs->in_place_of);
      if (attrs->cuda_src) op.lua_compute(MF_CUDA, attrs->cuda_src);
    }
    if (shape_src) {
      op.lua_shape_ = shape_src;
    } else if (!(flags & MF_OPF_LOCAL_SHAPE)) {  // 'same': a native rule, so every engine has it
      if (num_inputs == 0) fail("register_op ", name, ": infer_shape 'same' needs an input; give a shape rule");
      op.infer_shape(same_shape);
    }
    if (num_params > 0 && (!param_names || !param_kinds || !param_defaults || !param_docs))
      fail("register_op ", name, ": ", num_params, " params but a null param array");
    for (int i = 0; i < num_params; ++i) {
      Field f = lua_param(op.name_, param_names[i], param_kinds[i], param_defaults[i], param_docs[i]);
      for (const Field& g : op.params_)
        if (g.name == f.name) fail(op.name_, ": param '", f.name, "' declared twice");
      op.param(std::move(f));
    }
    index = Registry::get().add(std::move(op));
  });
  return st == MF_OK ? index : -1;
}

// -- params ----------------------------------------------------------------------------------
mf_params* mf_params_parse(int op, const char* text) {
  return guard_value(__func__, nullptr, [&] {
    return Registry::get().read(op, [&](const OpDef& def) {
      return new mf_params{ParamValues::parse(def.name_, def.params_, text ? text : "")};
    });
  });
}
void mf_params_free(mf_params* p) { delete p; }
// The readers of parsed params: field i (and list item j) checked, so a bad index is an error, not a
// read out of bounds.
namespace {
const ParamValues& values_of(const mf_params* p) {
  if (!p) fail("params: null handle");
  return p->values;
}
size_t field_index(const mf_params* p, int i) {
  size_t n = values_of(p).fields().size();
  if (i < 0 || size_t(i) >= n) fail("params: field ", i, " out of range (", n, " fields)");
  return size_t(i);
}
}  // namespace
const char* mf_params_canonical(const mf_params* p) {
  return guard_value(__func__, (const char*)nullptr, [&] { return values_of(p).canonical().c_str(); });
}
int mf_params_count(const mf_params* p) {
  return guard_value(__func__, -1, [&] { return int(values_of(p).fields().size()); });
}
const char* mf_params_key(const mf_params* p, int i) {
  return guard_value(__func__, (const char*)nullptr, [&] { return p->values.fields()[field_index(p, i)].name.c_str(); });
}
int mf_params_kind(const mf_params* p, int i) {
  return guard_value(__func__, -1, [&] { return int(p->values.fields()[field_index(p, i)].kind); });
}
double mf_params_number(const mf_params* p, int i) {
  return guard_value(__func__, 0.0, [&] { return p->values.value(field_index(p, i)).num; });
}
const char* mf_params_string(const mf_params* p, int i) {
  return guard_value(__func__, (const char*)nullptr, [&] { return p->values.value(field_index(p, i)).str.c_str(); });
}
int mf_params_list_len(const mf_params* p, int i) {
  return guard_value(__func__, -1, [&] { return int(p->values.value(field_index(p, i)).list.size()); });
}
int64_t mf_params_list_item(const mf_params* p, int i, int j) {
  return guard_value(__func__, int64_t(0), [&] {
    const auto& list = p->values.value(field_index(p, i)).list;
    if (j < 0 || size_t(j) >= list.size()) fail("params: item ", j, " out of range (", list.size(), " items)");
    return list[size_t(j)];
  });
}

int mf_op_infer(int op, const mf_params* p, int n_in, const mf_tensor* const* in_meta, int max_out, mf_tensor* out_meta,
                int* out_alias, int* n_out) {
  return mf_op_infer_partial(op, p, n_in, in_meta, 0, max_out, out_meta, out_alias, n_out);
}

int mf_op_infer_partial(int op, const mf_params* p, int n_in, const mf_tensor* const* in_meta, int64_t unknown,
                        int max_out, mf_tensor* out_meta, int* out_alias, int* n_out) {
  return guard(__func__, [&] {
    UnknownDims scope(unknown);  // 0: every size is known
    const OpDef& def = op_at(op);
    if (!def.infer_shape_) fail(def.name_, ": has no native shape rule");
    ParamValues none;
    if (!p) none = Registry::get().read(op, [&](const OpDef& d) { return ParamValues::parse(d.name_, d.params_, ""); });
    InferCtx ctx{def, p ? p->values : none, {}, {}, {}};
    size_t want = def.inputs_.size();
    if (!(def.flags_ & MF_OPF_VARIADIC) && size_t(n_in) != want)
      fail(def.name_, ": takes ", want, " input", want == 1 ? "" : "s", ", got ", n_in);
    for (int i = 0; i < n_in; ++i) ctx.in.push_back(in_meta[i]);
    def.infer_shape_(ctx);
    (def.infer_type_ ? def.infer_type_ : same_type)(ctx);
    int declared = def.declared_outputs(ctx.p);  // what a graph built on unknown shapes took it to be
    if (declared >= 0 && size_t(declared) != ctx.out.size())
      fail(def.name_, ": its shape rule gave ", ctx.out.size(), " outputs, its block declares ", declared,
           " (an error in the op)");
    *n_out = int(ctx.out.size());
    if (*n_out > max_out) return;  // the caller's arrays are too small: it learns the count, nothing written
    for (size_t i = 0; i < ctx.out.size(); ++i) {
      mf_tensor& o = ctx.out[i];
      o.ptr = nullptr;
      o.store = nullptr;
      o.owns = 0;
      out_meta[i] = o;
      out_alias[i] = i < ctx.alias.size() ? ctx.alias[i] : 0;
    }
  });
}

// -- generator -------------------------------------------------------------------------------
mf_rng* mf_rng_new(uint64_t seed) { return guard_value(__func__, nullptr, [&] { return new mf_rng{seed, 0}; }); }
void mf_rng_free(mf_rng* g) { delete g; }
void mf_rng_seed(mf_rng* g, uint64_t seed) { *g = mf_rng{seed, 0}; }
uint64_t mf_rng_get_seed(const mf_rng* g) { return g->seed; }
uint64_t mf_rng_get_offset(const mf_rng* g) { return g->offset; }
void mf_rng_set_offset(mf_rng* g, uint64_t offset) { g->offset = offset; }

// -- devices ---------------------------------------------------------------------------------
int mf_device_count(void) { return device_count(); }
const char* mf_device_name(int32_t device) {
  return guard_value(__func__, static_cast<const char*>(nullptr), [&] { return mf::device(device).name.c_str(); });
}
int mf_device_find(const char* name) { return guard_value(__func__, -1, [&] { return find_device(name ? name : ""); }); }
int mf_device_strings(int32_t device) { return guard_value(__func__, -1, [&] { return mf::device(device).strings; }); }
const mf_kernel_table* mf_device_kernels(int32_t device) {
  return guard_value(__func__, static_cast<const mf_kernel_table*>(nullptr), [&] { return &device_kernels(device); });
}

// -- kernels: the CPU device's table (members listed in src/core/kernel_table.h) --------------
int mf_k_unary(int32_t code, mf_tensor* y, const mf_tensor* x, double a, double b) {
  return guard(__func__, [&] { unary_cpu(code, *y, *x, a, b); });
}
int mf_k_binary(int32_t code, mf_tensor* z, const mf_tensor* x, const mf_tensor* y) {
  return guard(__func__, [&] { binary_cpu(code, *z, *x, *y); });
}
mf_fused* mf_fused_compile(int32_t nin, int32_t nprog, const int64_t* prog) {
  return guard_value(__func__, nullptr, [&] { return new mf_fused{fused_compile(nin, nprog, prog)}; });
}
void mf_fused_free(mf_fused* p) { delete p; }
int mf_k_fused(const mf_fused* p, mf_tensor* out, int32_t nin, const mf_tensor* const* ins) {
  return guard(__func__, [&] { fused_cpu(p->prog, *out, nin, ins); });
}
int mf_k_where(mf_tensor* out, const mf_tensor* c, const mf_tensor* a, const mf_tensor* b) {
  return guard(__func__, [&] { where_cpu(*out, *c, *a, *b); });
}
int mf_k_copy(mf_tensor* dst, const mf_tensor* src) { return guard(__func__, [&] { copy_cpu(*dst, *src); }); }
// the host is the CPU itself: a host copy is a copy
int mf_k_copy_from_host(mf_tensor* dst, const mf_tensor* src) { return mf_k_copy(dst, src); }
int mf_k_copy_to_host(mf_tensor* dst, const mf_tensor* src) { return mf_k_copy(dst, src); }
int mf_k_fill(mf_tensor* t, double value) { return guard(__func__, [&] { fill_cpu(*t, value); }); }
int mf_k_arange(mf_tensor* t, double start, double step) { return guard(__func__, [&] { arange_cpu(*t, start, step); }); }
int mf_k_eye(mf_tensor* t) { return guard(__func__, [&] { eye_cpu(*t); }); }
int mf_k_rand(mf_tensor* t, mf_rng* g, int32_t normal, double a, double b) {
  return guard(__func__, [&] { rand_cpu(*t, *g, normal != 0, a, b); });
}
int mf_k_reduce(int32_t code, mf_tensor* out, const mf_tensor* x, uint32_t dim_mask) {
  return guard(__func__, [&] { reduce_cpu(code, *out, *x, dim_mask); });
}

int mf_k_reduce_p(int32_t code, mf_tensor* out, const mf_tensor* x, uint32_t dim_mask, double p) {
  return guard(__func__, [&] { reduce_p_cpu(code, *out, *x, dim_mask, p); });
}
int mf_k_softmax(mf_tensor* y, const mf_tensor* x, int32_t dim, int32_t log) {
  return guard(__func__, [&] { softmax_cpu(*y, *x, dim, log != 0); });
}
int mf_k_matmul(mf_tensor* c, const mf_tensor* a, const mf_tensor* b, int32_t trans_a, int32_t trans_b) {
  return guard(__func__, [&] { matmul_cpu(*c, *a, *b, trans_a != 0, trans_b != 0); });
}
int mf_k_gemm(mf_tensor* c, const mf_tensor* a, const mf_tensor* b, int32_t trans_a, int32_t trans_b, double alpha,
              double beta) {
  return guard(__func__, [&] { gemm_cpu(*c, *a, *b, trans_a != 0, trans_b != 0, alpha, beta); });
}
int mf_k_alias(mf_tensor* view, const mf_tensor* base, int64_t offset) {
  return guard(__func__, [&] {
    need(view, "alias");
    need(base, "alias");
    if (view->dtype_id != base->dtype_id)
      fail("alias: view is ", dtype_name(view->dtype_id), ", base ", dtype_name(base->dtype_id), "; expected one dtype");
    mf_tensor v = *view;  // the view as it would be: every element inside the base's storage
    v.store = base->store;
    v.ptr = (char*)base->ptr + offset * dtype_size(base->dtype_id);
    check_in_storage(v, "alias", "view");
    if (!base->store && v.count > 0 && (offset < 0 || offset + v.count > base->count))  // borrowed memory: stay in base
      fail("alias: view of size ", shape_str(v), " at offset ", offset, " reaches outside its base of ", base->count,
           " elements");
    view->store = base->store;
    view->owns = 0;
    view->offset = base->offset + offset;
    view->ptr = (char*)base->ptr + offset * dtype_size(base->dtype_id);
  });
}
int mf_k_concat(mf_tensor* out, int32_t n, const mf_tensor* const* ins, int32_t dim) {
  return guard(__func__, [&] { concat_cpu(*out, n, ins, dim); });
}
int mf_k_max_dim(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int32_t is_min) {
  return guard(__func__, [&] { max_dim_cpu(*values, *indices, *x, dim, is_min != 0); });
}
int mf_k_sort(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int32_t descending) {
  return guard(__func__, [&] { sort_cpu(*values, *indices, *x, dim, 0, kSortAll, descending != 0, true); });
}
int mf_k_topk(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int64_t k, int32_t largest,
              int32_t sorted) {
  return guard(__func__, [&] { sort_cpu(*values, *indices, *x, dim, k, kSortTop, largest != 0, sorted != 0); });
}
int mf_k_kthvalue(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int64_t k) {
  return guard(__func__, [&] { sort_cpu(*values, *indices, *x, dim, k, kSortKth, false, true); });
}
int mf_k_cumulate(mf_tensor* y, const mf_tensor* x, int32_t dim, int32_t prod, int32_t reverse) {
  return guard(__func__, [&] { cumulate_cpu(*y, *x, dim, prod != 0, reverse != 0); });
}
int mf_k_cumprod_grad(mf_tensor* gx, const mf_tensor* x, const mf_tensor* gy, int32_t dim, int32_t reverse) {
  return guard(__func__, [&] { cumprod_grad_cpu(*gx, *x, *gy, dim, reverse != 0); });
}
int mf_k_index_select(mf_tensor* out, const mf_tensor* x, const mf_tensor* idx, int32_t dim) {
  return guard(__func__, [&] { index_select_cpu(*out, *x, *idx, dim); });
}
int mf_k_index_add_like(mf_tensor* out, const mf_tensor* g, const mf_tensor* idx, int32_t dim) {
  return guard(__func__, [&] { index_add_like_cpu(*out, *g, *idx, dim); });
}
int mf_k_one_hot(mf_tensor* out, const mf_tensor* labels) { return guard(__func__, [&] { one_hot_cpu(*out, *labels); }); }
int mf_k_gather(mf_tensor* out, const mf_tensor* x, const mf_tensor* idx, int32_t dim) {
  return guard(__func__, [&] { gather_cpu(*out, *x, *idx, dim); });
}
int mf_k_scatter(mf_tensor* out, const mf_tensor* x, const mf_tensor* idx, const mf_tensor* src, int32_t dim, int32_t add) {
  return guard(__func__, [&] { scatter_cpu(*out, *x, *idx, *src, dim, add != 0); });
}
int mf_k_index_add(mf_tensor* out, const mf_tensor* x, const mf_tensor* idx, const mf_tensor* src, int32_t dim) {
  return guard(__func__, [&] { index_add_cpu(*out, *x, *idx, *src, dim); });
}
int mf_k_masked_select(mf_tensor* out, const mf_tensor* x, const mf_tensor* mask, double fill) {
  return guard(__func__, [&] { masked_select_cpu(*out, *x, *mask, fill); });
}
int mf_k_nonzero(mf_tensor* out, const mf_tensor* x, int64_t fill) {
  return guard(__func__, [&] { nonzero_cpu(*out, *x, fill); });
}
int mf_k_batch_norm(mf_tensor* y, const mf_tensor* x, const mf_tensor* w, const mf_tensor* b, double eps) {
  return guard(__func__, [&] { batch_norm_cpu(*y, *x, *w, *b, eps); });
}
int mf_k_dropout_mask(mf_tensor* mask, mf_rng* g, double p) { return guard(__func__, [&] { dropout_mask_cpu(*mask, *g, p); }); }
int mf_k_periodic_copy(mf_tensor* out, const mf_tensor* x, const int64_t* shift, uint32_t flip_mask) {
  return guard(__func__, [&] { periodic_copy_cpu(*out, *x, shift, flip_mask); });
}
int mf_k_tri(mf_tensor* out, const mf_tensor* x, int64_t k, int32_t upper) {
  return guard(__func__, [&] { tri_cpu(*out, *x, k, upper != 0); });
}
int mf_k_linspace(mf_tensor* t, double start, double stop, double base) {
  return guard(__func__, [&] { linspace_cpu(*t, start, stop, base); });
}
int mf_k_randint(mf_tensor* t, mf_rng* g, double low, double high) {
  return guard(__func__, [&] { randint_cpu(*t, *g, low, high); });
}
int mf_k_randperm(mf_tensor* t, mf_rng* g) { return guard(__func__, [&] { randperm_cpu(*t, *g); }); }
int mf_k_multinomial(mf_tensor* out, mf_rng* g, const mf_tensor* probs, int32_t replacement) {
  return guard(__func__, [&] { multinomial_cpu(*out, *g, *probs, replacement != 0); });
}

#define MF_CPU_ENTRY_(name, params) int mf_k_##name params;
MF_KERNELS(MF_CPU_ENTRY_)  // (the updates, conv and pooling entries are in capi_graph.cc)
#undef MF_CPU_ENTRY_

}  // extern "C"

namespace {

#define MF_CPU_MEMBER_(name, params) mf_k_##name,
const mf_kernel_table kCpuKernels = {MF_KERNELS(MF_CPU_MEMBER_)};
#undef MF_CPU_MEMBER_

// Attaches the CPU table to device 0 when the library loads (before any engine or host call).
[[maybe_unused]] const bool kCpuKernelsAttached = (set_device_kernels(MF_CPU, &kCpuKernels), true);

}  // namespace

