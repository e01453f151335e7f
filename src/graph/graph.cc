// Graph structure passes: execution order with the variable read/assign rule, CSE, the rewrite
// rules op blocks declare, and liveness-based memory planning.
#include "graph.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "../core/error.h"
#include "../op/registry.h"

namespace mf {

int32_t Graph::add(int kind, int op, const std::string& params, const std::vector<NodeEntry>& inputs,
                   int32_t num_outputs, const std::string& name) {
  if (kind < kOpNode || kind > kConstant) fail("graph: bad node kind ", kind);
  if (kind == kOpNode) Registry::get().at(op);  // throws for a bad op index
  for (const NodeEntry& e : inputs)
    if (e.node < 0 || e.node >= size() || e.index < 0 || e.index >= nodes_[size_t(e.node)].num_outputs)
      fail("graph: node '", name, "' reads output ", e.index + 1, " of node ", e.node, ", which does not exist");
  if (num_outputs < 0) fail("graph: node '", name, "' has a negative output count");
  Node n;
  n.kind = kind;
  n.op = op;
  n.params = params;
  n.inputs = inputs;
  n.num_outputs = num_outputs;
  n.name = name;
  nodes_.push_back(std::move(n));
  return size() - 1;
}

void Graph::add_control(int32_t node, int32_t before) {
  if (node < 0 || node >= size() || before < 0 || before >= size()) fail("graph: control edge names a missing node");
  nodes_[size_t(node)].control.push_back(before);
}

const Node& Graph::node(int32_t id) const {
  if (id < 0 || id >= size()) fail("graph: no node ", id);
  return nodes_[size_t(id)];
}

NodeEntry Graph::resolve(NodeEntry e) const {
  while (nodes_[size_t(e.node)].forward >= 0) e.node = nodes_[size_t(e.node)].forward;
  return e;
}

bool Graph::op_has_flag(const Node& n, int flag) const {
  return n.kind == kOpNode && (Registry::get().at(n.op).flags_ & flag);
}

std::vector<int32_t> Graph::order(const std::vector<int32_t>& targets) const {
  // 1. the nodes the targets need
  std::vector<char> need(static_cast<size_t>(size()), 0);
  std::vector<int32_t> stack;
  for (int32_t t : targets) {
    int32_t r = resolve({t, 0}).node;
    if (!need[size_t(r)]) { need[size_t(r)] = 1; stack.push_back(r); }
  }
  while (!stack.empty()) {
    int32_t id = stack.back();
    stack.pop_back();
    const Node& n = nodes_[size_t(id)];
    auto visit = [&](int32_t m) {
      m = resolve({m, 0}).node;
      if (!need[size_t(m)]) { need[size_t(m)] = 1; stack.push_back(m); }
    };
    for (const NodeEntry& e : n.inputs) visit(e.node);
    for (int32_t c : n.control) visit(c);
  }
  // 2. dependency edges (pred -> succ), plus "reads of a variable before an assign to it"
  std::vector<std::set<int32_t>> preds(static_cast<size_t>(size()));
  for (int32_t id = 0; id < size(); ++id) {
    if (!need[size_t(id)]) continue;
    for (const NodeEntry& e : nodes_[size_t(id)].inputs) preds[size_t(id)].insert(resolve(e).node);
    for (int32_t c : nodes_[size_t(id)].control) preds[size_t(id)].insert(resolve({c, 0}).node);
  }
  auto depends_on = [&](int32_t from, int32_t target) {  // is target an ancestor of from?
    std::vector<char> seen(static_cast<size_t>(size()), 0);
    std::vector<int32_t> st{from};
    while (!st.empty()) {
      int32_t x = st.back();
      st.pop_back();
      if (x == target) return true;
      for (int32_t p : preds[size_t(x)])
        if (!seen[size_t(p)]) { seen[size_t(p)] = 1; st.push_back(p); }
    }
    return false;
  };
  for (int32_t w = 0; w < size(); ++w) {
    if (!need[size_t(w)] || !op_has_flag(nodes_[size_t(w)], MF_OPF_WRITES)) continue;
    for (const NodeEntry& we : nodes_[size_t(w)].inputs) {
      int32_t var = resolve(we).node;
      if (nodes_[size_t(var)].kind != kVariable) continue;
      for (int32_t r = 0; r < size(); ++r) {
        if (r == w || !need[size_t(r)]) continue;
        if (op_has_flag(nodes_[size_t(r)], MF_OPF_WRITES)) continue;  // writers of one variable keep creation order
        bool reads = false;
        for (const NodeEntry& re : nodes_[size_t(r)].inputs) reads = reads || resolve(re).node == var;
        if (reads && !depends_on(r, w)) preds[size_t(w)].insert(r);
      }
    }
  }
  // 3. Kahn's algorithm: sources and writers (optimizer updates) as soon as they are ready, so the
  //    gradient buffers updates consume die early; otherwise smallest id first (construction order)
  std::vector<int32_t> indeg(static_cast<size_t>(size()), 0);
  std::vector<std::vector<int32_t>> succs(static_cast<size_t>(size()));
  for (int32_t id = 0; id < size(); ++id) {
    if (!need[size_t(id)]) continue;
    for (int32_t p : preds[size_t(id)]) {
      succs[size_t(p)].push_back(id);
      indeg[size_t(id)]++;
    }
  }
  auto early = [&](int32_t id) {
    const Node& n = nodes_[size_t(id)];
    return n.kind != kOpNode || n.inputs.empty() || op_has_flag(n, MF_OPF_WRITES);
  };
  auto key = [&](int32_t id) { return int64_t(early(id) ? 0 : 1) << 32 | id; };
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ready;
  for (int32_t id = 0; id < size(); ++id)
    if (need[size_t(id)] && indeg[size_t(id)] == 0) ready.push(key(id));
  std::vector<int32_t> out;
  while (!ready.empty()) {
    int32_t id = int32_t(ready.top() & 0xffffffff);
    ready.pop();
    out.push_back(id);
    for (int32_t s : succs[size_t(id)])
      if (--indeg[size_t(s)] == 0) ready.push(key(s));
  }
  size_t total = 0;
  for (char c : need) total += size_t(c);
  if (out.size() != total) fail("graph: the nodes form a cycle (through control edges or assigns)");
  return out;
}

int32_t Graph::cse() {
  std::map<std::string, int32_t> seen;
  int32_t merged = 0;
  for (int32_t id = 0; id < size(); ++id) {
    Node& n = nodes_[size_t(id)];
    if (n.forward >= 0 || n.kind != kOpNode) continue;
    for (NodeEntry& e : n.inputs) e = resolve(e);
    if (op_has_flag(n, MF_OPF_RANDOM | MF_OPF_WRITES) || !n.control.empty()) continue;
    std::string key = std::to_string(n.op) + "|" + n.params + "|";
    for (const NodeEntry& e : n.inputs) key += std::to_string(e.node) + ":" + std::to_string(e.index) + ",";
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(key, id);
    } else {
      n.forward = it->second;
      ++merged;
    }
  }
  return merged;
}

int32_t Graph::simplify() {
  // the rules op blocks declare (OpDef::replaces): outer(inner(x..., p)) -> result(x..., p), e.g.
  // log(softmax(x, dim)) -> log_softmax(x, dim): one stable pass instead of exp, divide, log
  const std::vector<Registry::Rewrite>& rules = Registry::get().rewrites();
  int32_t rewrites = 0;
  for (int32_t id = 0; id < size() && !rules.empty(); ++id) {
    Node& n = nodes_[size_t(id)];
    if (n.forward >= 0 || n.kind != kOpNode || n.inputs.size() != 1) continue;
    NodeEntry in = resolve(n.inputs[0]);
    const Node& s = nodes_[size_t(in.node)];
    if (s.kind != kOpNode || in.index != 0) continue;
    for (const Registry::Rewrite& r : rules) {
      if (n.op != r.outer || s.op != r.inner) continue;
      n.op = r.result;
      n.params = s.params;
      n.inputs = s.inputs;
      ++rewrites;
      break;
    }
  }
  return rewrites;
}

MemoryPlan plan_memory(const std::vector<PlanEntry>& in) {
  std::vector<PlanEntry> e = in;
  int32_t n = int32_t(e.size());
  // a view keeps its base alive: extend the base's last use over its views (chains included)
  for (int32_t i = n - 1; i >= 0; --i) {
    int32_t a = e[size_t(i)].alias_of;
    if (a >= 0) {
      if (a >= n) fail("plan_memory: entry ", i, " is a view of missing entry ", a);
      e[size_t(a)].last_use = std::max(e[size_t(a)].last_use, e[size_t(i)].last_use);
    }
  }
  for (auto& x : e) x.last_use = std::max(x.last_use, x.step);
  MemoryPlan plan;
  plan.slot.assign(size_t(n), -1);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) idx[size_t(i)] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return e[size_t(a)].step < e[size_t(b)].step; });
  std::multimap<int64_t, int32_t> free_slots;   // bytes -> slot
  std::map<int32_t, std::vector<int32_t>> dies;  // step -> entries whose storage frees after it
  std::vector<char> taken(size_t(n), 0);         // entry's slot was taken over in place
  size_t k = 0;
  while (k < idx.size()) {
    int32_t step = e[size_t(idx[k])].step;
    // storage read for the last time at an earlier step is free again
    while (!dies.empty() && dies.begin()->first < step) {
      for (int32_t d : dies.begin()->second)
        if (!taken[size_t(d)]) free_slots.emplace(plan.slot_bytes[size_t(plan.slot[size_t(d)])], plan.slot[size_t(d)]);
      dies.erase(dies.begin());
    }
    for (; k < idx.size() && e[size_t(idx[k])].step == step; ++k) {
      int32_t i = idx[k];
      const PlanEntry& x = e[size_t(i)];
      if (x.external || x.alias_of >= 0) continue;
      plan.naive_bytes += x.nbytes;
      int32_t src = x.inplace_of;
      if (src >= 0 && src < n && plan.slot[size_t(src)] >= 0 && !taken[size_t(src)] && e[size_t(src)].last_use == step &&
          plan.slot_bytes[size_t(plan.slot[size_t(src)])] >= x.nbytes) {
        plan.slot[size_t(i)] = plan.slot[size_t(src)];
        taken[size_t(src)] = 1;
        plan.inplace++;
      } else {
        auto it = free_slots.lower_bound(x.nbytes);
        int32_t s;
        if (it != free_slots.end()) {
          s = it->second;
          free_slots.erase(it);
        } else if (!free_slots.empty()) {  // grow the largest free slot rather than add one
          auto last = std::prev(free_slots.end());
          s = last->second;
          free_slots.erase(last);
          plan.slot_bytes[size_t(s)] = x.nbytes;
        } else {
          s = int32_t(plan.slot_bytes.size());
          plan.slot_bytes.push_back(x.nbytes);
        }
        plan.slot[size_t(i)] = s;
      }
      dies[e[size_t(i)].last_use].push_back(i);
    }
  }
  for (int64_t b : plan.slot_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace mf
