// extern "C" entry points for graphs, the memory planner and the graph-mode kernels; like capi.cc,
// each runs through guard() or guard_value() (guard.h), so nothing throws across.
#include "../core/error.h"
#include "../core/kcheck.h"
#include "../core/update_math.h"
#include "../graph/graph.h"
#include "../kernels/cpu/kernels.h"
#include "capi.h"
#include "guard.h"

using namespace mf;

struct mf_graph {
  Graph g;
};

extern "C" {

mf_graph* mf_graph_new(void) { return guard_value(__func__, nullptr, [&] { return new mf_graph(); }); }

void mf_graph_free(mf_graph* g) { delete g; }

int mf_graph_add(mf_graph* g, int kind, int op, const char* params, int n_in, const int32_t* in_nodes,
                 const int32_t* in_index, int n_out, const char* name) {
  return guard_value(__func__, -1, [&] {
    std::vector<NodeEntry> ins;
    for (int i = 0; i < n_in; ++i) ins.push_back({in_nodes[i], in_index[i]});
    return int(g->g.add(kind, op, params ? params : "", ins, n_out, name ? name : ""));
  });
}

int mf_graph_add_control(mf_graph* g, int node, int before) {
  return guard_value(__func__, -1, [&] {
    g->g.add_control(node, before);
    return 0;
  });
}

int mf_graph_size(const mf_graph* g) { return g->g.size(); }
int mf_graph_node_kind(const mf_graph* g, int node) { return guard_value(__func__, -1, [&] { return g->g.node(node).kind; }); }
int mf_graph_node_op(const mf_graph* g, int node) { return guard_value(__func__, -1, [&] { return g->g.node(node).op; }); }
int mf_graph_node_num_inputs(const mf_graph* g, int node) {
  return guard_value(__func__, -1, [&] { return int(g->g.node(node).inputs.size()); });
}
int mf_graph_node_num_outputs(const mf_graph* g, int node) {
  return guard_value(__func__, -1, [&] { return int(g->g.node(node).num_outputs); });
}

const char* mf_graph_node_params(const mf_graph* g, int node) {
  return guard_value(__func__, nullptr, [&] { return g->g.node(node).params.c_str(); });
}

const char* mf_graph_node_name(const mf_graph* g, int node) {
  return guard_value(__func__, nullptr, [&] { return g->g.node(node).name.c_str(); });
}

int mf_graph_node_input(const mf_graph* g, int node, int i, int32_t* in_node, int32_t* in_index) {
  return guard_value(__func__, -1, [&] {
    const Node& n = g->g.node(node);
    if (i < 0 || size_t(i) >= n.inputs.size()) fail("graph: node ", node, " has no input ", i);
    NodeEntry e = g->g.resolve(n.inputs[size_t(i)]);
    *in_node = e.node;
    *in_index = e.index;
    return 0;
  });
}

int mf_graph_resolve(const mf_graph* g, int node, int index, int32_t* out_node, int32_t* out_index) {
  return guard_value(__func__, -1, [&] {
    g->g.node(node);
    NodeEntry e = g->g.resolve({node, index});
    *out_node = e.node;
    *out_index = e.index;
    return 0;
  });
}

int mf_graph_order(const mf_graph* g, int n_targets, const int32_t* targets, int32_t* out, int max_out) {
  return guard_value(__func__, -1, [&] {
    std::vector<int32_t> t(targets, targets + n_targets);
    for (int32_t x : t) g->g.node(x);
    std::vector<int32_t> order = g->g.order(t);
    if (int(order.size()) > max_out) fail("graph: order has ", order.size(), " nodes; buffer holds ", max_out);
    for (size_t i = 0; i < order.size(); ++i) out[i] = order[i];
    return int(order.size());
  });
}

int mf_graph_cse(mf_graph* g) { return guard_value(__func__, -1, [&] { return int(g->g.cse()); }); }
int mf_graph_simplify(mf_graph* g) { return guard_value(__func__, -1, [&] { return int(g->g.simplify()); }); }

int mf_plan_memory(int n, const mf_plan_entry* entries, int32_t* slot_out, int64_t* slot_bytes_out, int32_t* n_slots,
                   int64_t* planned_bytes, int64_t* naive_bytes, int32_t* inplace_count) {
  return guard_value(__func__, -1, [&] {
    MemoryPlan p = plan_memory(std::vector<PlanEntry>(entries, entries + n));
    for (int i = 0; i < n; ++i) slot_out[i] = p.slot[size_t(i)];
    for (size_t s = 0; s < p.slot_bytes.size(); ++s) slot_bytes_out[s] = p.slot_bytes[s];
    *n_slots = int32_t(p.slot_bytes.size());
    *planned_bytes = p.planned_bytes;
    *naive_bytes = p.naive_bytes;
    *inplace_count = p.inplace;
    return 0;
  });
}

// -- graph-mode kernels ------------------------------------------------------------------------
int mf_k_sum_to(mf_tensor* out, const mf_tensor* g) { return guard(__func__, [&] { sum_to_cpu(*out, *g); }); }
int mf_k_pad_like(mf_tensor* out, const mf_tensor* g, int32_t dim, int64_t start, int64_t step) {
  return guard(__func__, [&] { pad_like_cpu(*out, *g, dim, start, step); });
}
// The updates read lr (and adam's step count) from their one-element tensors here, on the host; the
// CUDA entries read them in the kernel (src/core/update_math.h holds the math both run).
namespace {
double scalar_value(const char* op, const char* name, const mf_tensor& t) {
  kcheck::scalar(op, name, t);
  return upd::scalar_at(t.ptr, t.dtype_id == MF_FLOAT64);
}
}  // namespace
int mf_k_sgd_update(mf_tensor* var, const mf_tensor* grad, const mf_tensor* lr, double weight_decay) {
  return guard(__func__, [&] { sgd_update_cpu(*var, *grad, scalar_value("sgd_update", "lr", *lr), weight_decay); });
}
int mf_k_momentum_update(mf_tensor* var, mf_tensor* accum, const mf_tensor* grad, const mf_tensor* lr,
                         double momentum, double dampening, double weight_decay, int32_t nesterov) {
  return guard(__func__, [&] {
    double a = scalar_value("momentum_update", "lr", *lr);
    momentum_update_cpu(*var, *accum, *grad, a, momentum, dampening, weight_decay, nesterov != 0);
  });
}
int mf_k_adam_update(mf_tensor* var, mf_tensor* m, mf_tensor* v, const mf_tensor* grad, const mf_tensor* step,
                     const mf_tensor* lr, double beta1, double beta2, double epsilon, double weight_decay,
                     int32_t form) {
  return guard(__func__, [&] {
    double t = scalar_value("adam_update", "step", *step), a = scalar_value("adam_update", "lr", *lr);
    adam_update_cpu(*var, *m, *v, *grad, t, a, beta1, beta2, epsilon, weight_decay, form);
  });
}
int mf_k_softmax_xent(mf_tensor* loss, const mf_tensor* logits, const mf_tensor* labels, int32_t dim) {
  return guard(__func__, [&] { softmax_xent_cpu(*loss, *logits, *labels, dim); });
}


// -- convolution and pooling -------------------------------------------------------------------
int mf_k_conv2d_workspace(int32_t kind, const mf_tensor* out, const mf_tensor* a, const mf_tensor* b, int32_t sh,
                          int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw, int64_t* bytes) {
  const int32_t hp[6] = {sh, sw, ph, pw, dh, dw};
  return guard(__func__, [&] { *bytes = conv2d_workspace_cpu(kind, *out, *a, *b, hp); });
}
int mf_k_conv2d(mf_tensor* y, const mf_tensor* x, const mf_tensor* w, mf_tensor* ws, int32_t sh, int32_t sw, int32_t ph,
                int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[6] = {sh, sw, ph, pw, dh, dw};
  return guard(__func__, [&] { conv2d_cpu(*y, *x, *w, ws, hp); });
}
int mf_k_conv2d_backward_input(mf_tensor* gx, const mf_tensor* gy, const mf_tensor* w, mf_tensor* ws, int32_t sh,
                               int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[6] = {sh, sw, ph, pw, dh, dw};
  return guard(__func__, [&] { conv2d_backward_input_cpu(*gx, *gy, *w, ws, hp); });
}
int mf_k_conv2d_backward_weight(mf_tensor* gw, const mf_tensor* gy, const mf_tensor* x, mf_tensor* ws, int32_t sh,
                                int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[6] = {sh, sw, ph, pw, dh, dw};
  return guard(__func__, [&] { conv2d_backward_weight_cpu(*gw, *gy, *x, ws, hp); });
}
int mf_k_max_pool2d(mf_tensor* y, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph,
                    int32_t pw) {
  const int32_t kp[6] = {kh, kw, sh, sw, ph, pw};
  return guard(__func__, [&] { max_pool2d_cpu(*y, *x, kp); });
}
int mf_k_max_pool2d_backward(mf_tensor* gx, const mf_tensor* gy, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh,
                             int32_t sw, int32_t ph, int32_t pw) {
  const int32_t kp[6] = {kh, kw, sh, sw, ph, pw};
  return guard(__func__, [&] { max_pool2d_backward_cpu(*gx, *gy, *x, kp); });
}
int mf_k_avg_pool2d(mf_tensor* y, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph,
                    int32_t pw, int32_t count_include_pad) {
  const int32_t kp[6] = {kh, kw, sh, sw, ph, pw};
  return guard(__func__, [&] { avg_pool2d_cpu(*y, *x, kp, count_include_pad != 0); });
}
int mf_k_avg_pool2d_backward(mf_tensor* gx, const mf_tensor* gy, int32_t kh, int32_t kw, int32_t sh, int32_t sw,
                             int32_t ph, int32_t pw, int32_t count_include_pad) {
  const int32_t kp[6] = {kh, kw, sh, sw, ph, pw};
  return guard(__func__, [&] { avg_pool2d_backward_cpu(*gx, *gy, kp, count_include_pad != 0); });
}
int mf_k_adaptive_avg_pool2d(mf_tensor* y, const mf_tensor* x) {
  return guard(__func__, [&] { adaptive_avg_pool2d_cpu(*y, *x); });
}
int mf_k_adaptive_avg_pool2d_backward(mf_tensor* gx, const mf_tensor* gy) {
  return guard(__func__, [&] { adaptive_avg_pool2d_backward_cpu(*gx, *gy); });
}

}  // extern "C"
