// Graph structure passes: execution order with the variable read/assign rule, CSE, the rewrite
// rules op blocks declare, and liveness-based memory planning.
#include "graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <utility>

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

namespace {

// Every registered op's flags, read once per pass instead of under the registry lock per node.
std::vector<int> op_flags_table() {
  const Registry& reg = Registry::get();
  std::vector<int> flags(size_t(reg.size()));
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = reg.at(int(i)).flags_;
  return flags;
}

using Edge = std::pair<int32_t, int32_t>;  // (from, to)

// The edges grouped by their `from` node, in one array: the targets of node i are
// to[at[i]] .. to[at[i + 1] - 1]. Built by counting, so linear in nodes plus edges.
struct Adjacency {
  std::vector<int32_t> at, to;
  Adjacency(int32_t n, const std::vector<Edge>& edges) : at(size_t(n) + 1, 0), to(edges.size()) {
    for (const Edge& e : edges) ++at[size_t(e.first) + 1];
    for (int32_t i = 0; i < n; ++i) at[size_t(i) + 1] += at[size_t(i)];
    std::vector<int32_t> next(at.begin(), at.end() - 1);
    for (const Edge& e : edges) to[size_t(next[size_t(e.first)]++)] = e.second;
  }
  int32_t count(int32_t i) const { return at[size_t(i) + 1] - at[size_t(i)]; }
  const int32_t* begin(int32_t i) const { return to.data() + at[size_t(i)]; }
  const int32_t* end(int32_t i) const { return to.data() + at[size_t(i) + 1]; }
};

// Positions in one topological order of the needed nodes (-1 for the others): a node's ancestors
// all come before it. Kahn's algorithm with a FIFO, linear.
std::vector<int32_t> topological_positions(const std::vector<char>& need, const Adjacency& succs) {
  int32_t n = int32_t(need.size());
  std::vector<int32_t> indeg(size_t(n), 0), pos(size_t(n), -1), fifo;
  for (int32_t t : succs.to) ++indeg[size_t(t)];
  for (int32_t id = 0; id < n; ++id)
    if (need[size_t(id)] && indeg[size_t(id)] == 0) fifo.push_back(id);
  for (size_t k = 0; k < fifo.size(); ++k) {
    pos[size_t(fifo[k])] = int32_t(k);
    for (const int32_t* s = succs.begin(fifo[k]); s != succs.end(fifo[k]); ++s)
      if (--indeg[size_t(*s)] == 0) fifo.push_back(*s);
  }
  return pos;
}

}  // namespace

// Time: linear in the needed nodes and edges, but for the ready queue of step 4 (a binary heap,
// n log n: the construction-order tie break is a sort) and, in step 3, one walk of a writer's
// descendants for a writer that a topological order places before some reader of its variable
// (none does in a training graph, whose updates come last).
std::vector<int32_t> Graph::order(const std::vector<int32_t>& targets) const {
  const int32_t n = size();
  const std::vector<int> flags = op_flags_table();
  auto writes = [&](int32_t id) {
    const Node& x = nodes_[size_t(id)];
    return x.kind == kOpNode && (flags[size_t(x.op)] & MF_OPF_WRITES);
  };
  // 1. the nodes the targets need (an explicit stack: a deep graph does not touch the C stack)
  std::vector<char> need(size_t(n), 0);
  std::vector<int32_t> stack;
  auto reach = [&](int32_t m) {
    m = resolve({m, 0}).node;
    if (!need[size_t(m)]) {
      need[size_t(m)] = 1;
      stack.push_back(m);
    }
  };
  for (int32_t t : targets) reach(t);
  while (!stack.empty()) {
    const Node& x = nodes_[size_t(stack.back())];
    stack.pop_back();
    for (const NodeEntry& e : x.inputs) reach(e.node);
    for (int32_t c : x.control) reach(c);
  }
  // 2. dependency edges pred -> succ: inputs and control edges, after forwards, and from each op
  //    that writes a variable to the next one (by id) writing it; and which needed op nodes that
  //    write nothing read each variable
  std::vector<Edge> edges, reads;  // reads: (variable, reader)
  std::vector<int32_t> last_writer(size_t(n), -1);  // by variable
  for (int32_t id = 0; id < n; ++id) {
    if (!need[size_t(id)]) continue;
    const Node& x = nodes_[size_t(id)];
    bool writer = writes(id);
    for (const NodeEntry& e : x.inputs) {
      int32_t p = resolve(e).node;
      edges.emplace_back(p, id);
      if (nodes_[size_t(p)].kind != kVariable || x.kind != kOpNode) continue;
      if (!writer) {
        reads.emplace_back(p, id);
      } else if (last_writer[size_t(p)] != id) {
        if (last_writer[size_t(p)] >= 0) edges.emplace_back(last_writer[size_t(p)], id);
        last_writer[size_t(p)] = id;
      }
    }
    for (int32_t c : x.control) edges.emplace_back(resolve({c, 0}).node, id);
  }
  // 3. reads of a variable before an op that writes it: an edge reader -> writer for every reader
  //    that does not itself depend on the writer. A writer placed after the reader in a topological
  //    order cannot be its ancestor; for the others one walk from the writer, pruned at the
  //    farthest such reader's position, tells which readers it reaches.
  {
    const Adjacency succs(n, edges), readers(n, reads);
    const std::vector<int32_t> pos = topological_positions(need, succs);
    std::vector<int32_t> walked(size_t(n), -1);  // the writer whose walk last reached the node
    std::vector<Edge> extra;
    std::vector<int32_t> vars;
    for (int32_t w = 0; w < n; ++w) {
      if (!need[size_t(w)] || !writes(w)) continue;
      vars.clear();
      int32_t limit = -1;  // the farthest position of a reader of a variable w writes
      for (const NodeEntry& we : nodes_[size_t(w)].inputs) {
        int32_t var = resolve(we).node;
        if (nodes_[size_t(var)].kind != kVariable) continue;
        vars.push_back(var);
        for (const int32_t* r = readers.begin(var); r != readers.end(var); ++r) limit = std::max(limit, pos[size_t(*r)]);
      }
      if (limit > pos[size_t(w)]) {  // mark the descendants of w up to that position
        walked[size_t(w)] = w;
        stack.assign(1, w);
        while (!stack.empty()) {
          int32_t x = stack.back();
          stack.pop_back();
          for (const int32_t* s = succs.begin(x); s != succs.end(x); ++s)
            if (walked[size_t(*s)] != w && pos[size_t(*s)] <= limit) {
              walked[size_t(*s)] = w;
              stack.push_back(*s);
            }
        }
      }
      for (int32_t var : vars)
        for (const int32_t* r = readers.begin(var); r != readers.end(var); ++r)
          if (walked[size_t(*r)] != w) extra.emplace_back(*r, w);
    }
    edges.insert(edges.end(), extra.begin(), extra.end());
  }
  // 4. Kahn's algorithm: sources and writers (optimizer updates) as soon as they are ready, so the
  //    gradient buffers updates consume die early; otherwise smallest id first (construction order)
  const Adjacency succs(n, edges);
  std::vector<int32_t> indeg(size_t(n), 0);
  for (int32_t t : succs.to) ++indeg[size_t(t)];
  auto key = [&](int32_t id) {
    const Node& x = nodes_[size_t(id)];
    bool early = x.kind != kOpNode || x.inputs.empty() || writes(id);
    return int64_t(early ? 0 : 1) << 32 | id;
  };
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ready;
  for (int32_t id = 0; id < n; ++id)
    if (need[size_t(id)] && indeg[size_t(id)] == 0) ready.push(key(id));
  std::vector<int32_t> out;
  while (!ready.empty()) {
    int32_t id = int32_t(ready.top() & 0xffffffff);
    ready.pop();
    out.push_back(id);
    for (const int32_t* s = succs.begin(id); s != succs.end(id); ++s)
      if (--indeg[size_t(*s)] == 0) ready.push(key(*s));
  }
  if (out.size() != size_t(std::count(need.begin(), need.end(), 1)))
    fail("graph: the nodes form a cycle (through control edges or assigns)");
  return out;
}

// A node's op, params and (resolved) inputs, hashed for CSE.
static size_t node_hash(const Node& n) {
  size_t h = std::hash<std::string>()(n.params) ^ (size_t(n.op) * 0x9E3779B97F4A7C15ull);
  for (const NodeEntry& e : n.inputs) h = (h ^ (size_t(uint32_t(e.node)) << 8 ^ size_t(e.index))) * 0x100000001B3ull;
  h ^= h >> 33;  // the low bits pick the slot: fold the high bits in (MurmurHash3's finaliser)
  h *= 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 33);
}

// One pass in id order with an open-addressing table of node ids (no key strings): linear in nodes
// plus edges (expected; the table is kept at most half full).
int32_t Graph::cse() {
  const std::vector<int> flags = op_flags_table();
  size_t cap = 16;
  while (cap < 2 * nodes_.size()) cap *= 2;
  std::vector<int32_t> table(cap, -1);  // node ids that stand for their op, params and inputs
  int32_t merged = 0;
  for (int32_t id = 0; id < size(); ++id) {
    Node& n = nodes_[size_t(id)];
    if (n.forward >= 0 || n.kind != kOpNode) continue;
    for (NodeEntry& e : n.inputs) e = resolve(e);
    if ((flags[size_t(n.op)] & (MF_OPF_RANDOM | MF_OPF_WRITES)) || !n.control.empty()) continue;
    for (size_t slot = node_hash(n) & (cap - 1);; slot = (slot + 1) & (cap - 1)) {
      int32_t other = table[slot];
      if (other < 0) {
        table[slot] = id;
        break;
      }
      const Node& o = nodes_[size_t(other)];
      if (o.op == n.op && o.inputs == n.inputs && o.params == n.params) {
        n.forward = other;
        ++merged;
        break;
      }
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
