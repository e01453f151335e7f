/* moonflow C ABI: plain C. LuaJIT's ffi.cdef reads it after the C preprocessor has expanded it
   with MF_CDEF defined (cmake/embed_lua.cmake makes that text the module moonflow.abi_cdef).
   A function that returns a status returns 0 (MF_OK) on success; one that returns a pointer, an
   index or a count returns NULL or -1 on failure (and 0.0 or 0 for a number read). On failure
   mf_last_error() says why and mf_last_status() gives the status. */
/* dtypes, devices, statuses, limits and the mf_tensor struct */
#include "../core/types.h"
/* mf_kernel_table, a device's native routines (and the opaque mf_rng, mf_fused) */
#include "../core/kernel_table.h"

/* the op flags (MF_OPF_*) */
#include "../op/flags.h"
/* param kinds (MF_PARAM_*) */
#include "../param/types.h"
/* graph node kinds (MF_NODE_*) and the memory planner's entry */
#include "../graph/types.h"

typedef struct mf_params mf_params;
typedef struct mf_graph mf_graph;

const char *mf_last_error(void);
/* the mf_status of the last failed call on this thread (for entries that return NULL or -1):
   MF_ERR_ARG a caller's mistake, MF_ERR_MEMORY out of memory (the message says how many bytes were
   asked when known), MF_ERR_INTERNAL a bug (the message names the entry) */
int mf_last_status(void);
/* test only: the next C ABI call on this thread throws the chosen kind inside the boundary wrapper
   (src/lua/guard.h), which must turn it into its status and message; MF_INJECT_NONE disarms */
typedef enum { MF_INJECT_NONE, MF_INJECT_ERROR, MF_INJECT_OUT_OF_MEMORY, MF_INJECT_BAD_ALLOC, MF_INJECT_STD_EXCEPTION,
               MF_INJECT_UNKNOWN } mf_inject_kind;
int mf_test_inject(int32_t kind);
/* The interrupt flag a host (the REPL's Ctrl-C) sets; eager calls check it and raise "interrupted". */
volatile int32_t *mf_interrupt_flag(void);
const char *mf_version(void);
/* seconds on a monotonic clock (for timing; the origin is arbitrary) */
double mf_clock(void);

/* tensors */
int mf_tensor_init(mf_tensor *t, int32_t ndim, const int64_t *shape, int32_t dtype, int32_t device);
int mf_tensor_wrap(mf_tensor *t, void *data, int32_t ndim, const int64_t *shape, int32_t dtype);
int mf_tensor_share(mf_tensor *dst, const mf_tensor *src);
int mf_tensor_restride(mf_tensor *t, int32_t ndim, const int64_t *shape, const int64_t *strides, int64_t offset);
void mf_tensor_release(mf_tensor *t);
int64_t mf_tensor_nbytes(const mf_tensor *t);
/* 1 when a and b have the same dtype, device, rank, shape and strides (where they point may differ): the
   eager dispatcher's cache test, one call per input instead of a field read per dim in Lua */
int mf_tensor_same_layout(const mf_tensor *a, const mf_tensor *b);
int mf_storage_refcount(const mf_tensor *t);
/* the write count of t's storage (every write by any engine: eager write ops, element writes, graph
   sessions; the eager tape compares it) and, when last_writer is not NULL, who wrote last: an op index,
   or a negative code of lua/moonflow/tape.lua (-1: none). mf_storage_bump counts one write. */
int64_t mf_storage_version(const mf_tensor *t, int32_t *last_writer);
void mf_storage_bump(const mf_tensor *t, int32_t writer);
int mf_dtype_size(int32_t dtype);
/* the write rule (src/core/writes.h), for writers outside the kernels (element and row assignment):
   t has no overlapping elements; v fits dtype. what names the caller in the error */
int mf_check_writable(const mf_tensor *t, const char *what);
int mf_check_value(double v, int32_t dtype, const char *what);

/* allocator statistics, in bytes and counts */
typedef struct mf_memory_stats {
  int64_t in_use;
  int64_t peak;
  int64_t cached;
  int64_t allocations;
  int64_t system_allocations;
  int64_t live_blocks;
} mf_memory_stats;
int mf_memory_stats_get(int32_t device, mf_memory_stats *out);
int mf_memory_empty_cache(int32_t device);

/* threads: one OpenMP pool shared with OpenBLAS */
int mf_set_num_threads(int n);
int mf_get_num_threads(void);
/* the BLAS library libmoonflow loaded when it loaded (src/kernels/cpu/blas.h): strings owned by the
   library, valid for the process's life; loaded 0: error says why (every other field but the
   flags is ""); parallel: 0 sequential, 1 pthreads, 2 OpenMP, -1 unknown. Fails only when out
   is NULL. */
typedef struct mf_blas_info {
  int32_t loaded;
  int32_t chosen;        /* moonflow set OPENBLAS_CORETYPE for the load (an AVX-512 CPU) */
  int32_t user_coretype; /* OPENBLAS_CORETYPE was set: the user's choice won */
  int32_t preloaded;     /* an OpenBLAS was in the process already: its choice held */
  int32_t parallel;
  const char *library;   /* the file the routines come from */
  const char *core;      /* openblas_get_corename(): "SkylakeX", "Haswell", ... */
  const char *config;    /* openblas_get_config(): version and build options */
  const char *error;
} mf_blas_info;
int mf_blas_info_get(mf_blas_info *out);

/* operator registry */
int mf_op_count(void);
int mf_op_find(const char *name);
const char *mf_op_name(int op);
const char *mf_op_doc(int op);
int mf_op_num_inputs(int op);
const char *mf_op_input_name(int op, int i);
/* the op's kernel string for a strings slot (MF_CPU, MF_CUDA): the CUDA slot gives the CPU string
   when the block has no CUDA string of its own (OpDef::lua_compute_for) */
const char *mf_op_lua_compute(int op, int32_t device);
const char *mf_op_lua_gradient(int op);
int mf_op_flags(int op);
/* 1-based index of the input that is a selection mask (where's cond; a Lua number among the operands
   never takes its dtype), or 0 */
int mf_op_mask_input(int op);
/* write ops: inputs 1..n are written in place (0 for other ops) */
int mf_op_num_written(int op);
/* 1 when input i (0-based) lends only its shape and dtype (its block's lends_shape: zeros_like's x,
   sum_to's like): the op never reads its values and no gradient flows to it; else 0 */
int mf_op_lends_shape(int op, int i);
/* an in-place op's out-of-place form (its block's in_place_of: "add" for add_), else "" */
const char *mf_op_in_place_of(int op);
/* the op whose gradient rule builds this gradient-less op (its block's gradient_of: "cumprod" for
   cumprod_grad), else "" */
const char *mf_op_gradient_of(int op);
/* how many outputs the op returns for params p (NULL: the defaults) when the params alone decide it
   (sort: 2; max: 2 over one dim, else 1), else -1 (the shape rule decides: split, or undeclared) */
int mf_op_num_outputs(int op, const mf_params *p);
/* Lua source of the op's call syntax when the default (inputs, then params in order, then a table of
   named params) does not fit, else "" */
const char *mf_op_lua_adapter(int op);
/* Lua-registered ops: the source of the shape rule function(in_shapes, p) when it was given as a
   string, else "" (a native rule, or a Lua function held by the registering engine: MF_OPF_LOCAL_SHAPE) */
const char *mf_op_lua_shape(int op);
/* the op's other names (its block's alias()): i = 0 .. mf_op_num_aliases(op) - 1 */
int mf_op_num_aliases(int op);
const char *mf_op_alias(int op, int i);
/* pointwise ops (one scalar functor, src/op/elemwise.h): the code the kernel entries unary, binary and fused
   programs take, or -1 for any other op; *arity: 1 or 2; *fusable: 1 when fused programs may hold it */
int mf_op_pointwise(int op, int32_t *arity, int32_t *fusable);
int mf_op_num_params(int op);
const char *mf_op_param_name(int op, int i);
const char *mf_op_param_type(int op, int i);
const char *mf_op_param_default(int op, int i);
const char *mf_op_param_doc(int op, int i);
/* The registry is process-wide and thread safe: an op registered from one Lua state is visible to
   every state (engine) in the process, and a second registration of its name, from any state, fails.
   Sources given as text (kernel, gradient, shape rule) serve every engine; shape_src NULL without
   MF_OPF_LOCAL_SHAPE in flags: the output has input 1's shape and dtype. The op's num_params params
   come complete with it: names, kinds ("boolean", "integer", "number", "dtype", "integer list" or
   "enum:a|b|c"), defaults as user text (NULL: required) and docs. attrs (NULL: none) are the block
   attributes register_op takes beyond flags. */
typedef struct {
  int32_t num_written;      /* MF_OPF_WRITES in flags: inputs 1..n are written in place (writes(n)) */
  int32_t num_shape_inputs; /* shape_inputs[0 .. n): 1-based inputs that lend only their shape */
  const int32_t *shape_inputs;
  const char *in_place_of;  /* the out-of-place op this write op is the in-place form of, or NULL */
  const char *cuda_src;     /* the kernel string for device cuda, or NULL: the op has none (its CPU
                               kernel is not used for cuda tensors, as a native op's may be) */
} mf_op_lua_attrs;
int mf_op_register_lua(const char *name, const char *doc, int num_inputs, const char *cpu_src, const char *gradient_src,
                       const char *shape_src, int flags, int num_params, const char *const *param_names,
                       const char *const *param_kinds, const char *const *param_defaults, const char *const *param_docs,
                       const mf_op_lua_attrs *attrs);

/* params: parsed from "key=value;key=value" text, validated against the op's fields */
mf_params *mf_params_parse(int op, const char *text);
void mf_params_free(mf_params *p);
const char *mf_params_canonical(const mf_params *p);
int mf_params_count(const mf_params *p);
const char *mf_params_key(const mf_params *p, int i);
int mf_params_kind(const mf_params *p, int i);  /* an mf_param_kind */
double mf_params_number(const mf_params *p, int i);
const char *mf_params_string(const mf_params *p, int i);
int mf_params_list_len(const mf_params *p, int i);
int64_t mf_params_list_item(const mf_params *p, int i, int j);

/* shape and type inference of a registered op: in_meta are the inputs (data unused);
   fills out_meta[0..*n_out) with shape, dtype, device and strides; out_alias[i] = 1 marks an output that
   is a view of input 1, whose offset field is then relative to input 1's data. When the op gives more
   than max_out outputs (unbind of many slices), *n_out is their count and nothing else is written:
   call again with arrays that hold them. */
int mf_op_infer(int op, const mf_params *p, int n_in, const mf_tensor *const *in_meta, int max_out, mf_tensor *out_meta, int *out_alias, int *n_out);
/* the same at graph-build time: a size equal to unknown (a sentinel no real size takes) is not known
   yet; rules check every size they know (a mismatch is an error naming the op and the shapes, with
   unknown sizes printed as '?') and give output sizes that depend on unknown ones as unknown or a
   value derived from it; an error containing "[unknown-output]" means the output shape itself
   cannot be told before the run */
int mf_op_infer_partial(int op, const mf_params *p, int n_in, const mf_tensor *const *in_meta, int64_t unknown,
                        int max_out, mf_tensor *out_meta, int *out_alias, int *n_out);

/* counter-based generator (Philox4x32-10), one per Lua state */
mf_rng *mf_rng_new(uint64_t seed);
void mf_rng_free(mf_rng *g);
void mf_rng_seed(mf_rng *g, uint64_t seed);
uint64_t mf_rng_get_seed(const mf_rng *g);
uint64_t mf_rng_get_offset(const mf_rng *g);
void mf_rng_set_offset(mf_rng *g, uint64_t offset);

/* devices (src/core/device.h): id 0 is the CPU; ids run 0 .. mf_device_count() - 1 */
int mf_device_count(void);
/* the device's name, NULL for an unknown id */
const char *mf_device_name(int32_t device);
/* the id of the device called name, -1 when none is */
int mf_device_find(const char *name);
/* which lua_compute strings the device's kernel table runs (MF_CPU or MF_CUDA); -1 for an unknown id */
int mf_device_strings(int32_t device);
/* The device's native routines (src/core/kernel_table.h), which kernel strings call as K.<name>;
   NULL for an unknown id. unary and binary take an op's pointwise code (mf_op_pointwise); a and b:
   the params of a unary op that has them, in its block's order. The table lives as long as the process. */
const mf_kernel_table *mf_device_kernels(int32_t device);

/* the CUDA backend (src/kernels/cuda/backend.h, src/lua/capi_cuda.cc): 1 when device "cuda" is
   registered (the build has the backend and the runtime found a GPU when the library loaded), else 0;
   mf_cuda_reason() then says why ("this build has no CUDA backend", "no CUDA device: <runtime's
   text>"), "" when available. mf_cuda_device_count: GPUs the runtime reports (0 without the backend).
   mf_cuda_synchronize waits for the compute stream (MF_OK when there is no device). TF32 in cuBLAS
   matrix products: off unless mf_cuda_set_allow_tf32(1). */
int mf_cuda_available(void);
const char *mf_cuda_reason(void);
int mf_cuda_device_count(void);
int mf_cuda_synchronize(void);
int mf_cuda_set_allow_tf32(int32_t allow);
int mf_cuda_allow_tf32(void);
/* how many times the host has waited for the GPU's compute stream since load (0 without a GPU): a
   training step's count shows its host synchronisations */
int64_t mf_cuda_sync_count(void);
/* fused elementwise program: nprog numbers, (op, a, b) triples over values 0..nin-1 (inputs) and
   nin + s (step s's result); the last step's result is the output. Compiled once, run many times. */
mf_fused *mf_fused_compile(int32_t nin, int32_t nprog, const int64_t *prog);
void mf_fused_free(mf_fused *p);
/* makes p's form for device (id) at bind time, for an output of dtype: on a CUDA device the generated
   kernel, compiled by NVRTC (cached by its text) and loaded; nothing on the CPU. src/lua/capi_fused.cc */
int mf_fused_prepare(const mf_fused *p, int32_t device, int32_t dtype);

/* graphs: kind is an mf_node_kind; ids and output indices 0-based */
mf_graph *mf_graph_new(void);
void mf_graph_free(mf_graph *g);
int mf_graph_add(mf_graph *g, int kind, int op, const char *params, int n_in, const int32_t *in_nodes,
                 const int32_t *in_index, int n_out, const char *name);
int mf_graph_add_control(mf_graph *g, int node, int before);
int mf_graph_size(const mf_graph *g);
int mf_graph_node_kind(const mf_graph *g, int node);
int mf_graph_node_op(const mf_graph *g, int node);
int mf_graph_node_num_inputs(const mf_graph *g, int node);
int mf_graph_node_num_outputs(const mf_graph *g, int node);
const char *mf_graph_node_params(const mf_graph *g, int node);
const char *mf_graph_node_name(const mf_graph *g, int node);
/* input i of node, after CSE/simplification forwards */
int mf_graph_node_input(const mf_graph *g, int node, int i, int32_t *in_node, int32_t *in_index);
int mf_graph_resolve(const mf_graph *g, int node, int index, int32_t *out_node, int32_t *out_index);
/* execution order of what the targets need; returns the count, or -1 */
int mf_graph_order(const mf_graph *g, int n_targets, const int32_t *targets, int32_t *out, int max_out);
int mf_graph_cse(mf_graph *g);
int mf_graph_simplify(mf_graph *g);

/* memory plan over the entries of a run order (mf_plan_entry: src/graph/types.h) */
int mf_plan_memory(int n, const mf_plan_entry *entries, int32_t *slot_out, int64_t *slot_bytes_out, int32_t *n_slots,
                   int64_t *planned_bytes, int64_t *naive_bytes, int32_t *inplace_count);
