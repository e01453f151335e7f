// Graph::order and Graph::cse against independent references: random graphs with variables,
// writers and control edges checked against the rules computed by brute force (reachability by
// plain search), and graphs deep enough that a recursive walk would overflow the C stack.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "op/registry.h"

using mf::Graph;
using mf::NodeEntry;

namespace {

int op(const char* name) {
  mf::register_builtin_ops();
  int i = mf::Registry::get().index_of(name);
  REQUIRE(i >= 0);
  return i;
}

// Is `to` reachable from `from` along input and control edges (from a consumer to what it reads)?
bool depends(const Graph& g, int32_t from, int32_t to) {
  std::vector<char> seen(size_t(g.size()), 0);
  std::vector<int32_t> todo{from};
  while (!todo.empty()) {
    int32_t x = todo.back();
    todo.pop_back();
    if (x == to) return true;
    const mf::Node& n = g.node(x);
    std::vector<int32_t> next;
    for (const NodeEntry& e : n.inputs) next.push_back(g.resolve(e).node);
    for (int32_t c : n.control) next.push_back(g.resolve({c, 0}).node);
    for (int32_t m : next)
      if (!seen[size_t(m)]) {
        seen[size_t(m)] = 1;
        todo.push_back(m);
      }
  }
  return false;
}

bool writes(const Graph& g, int32_t id) {
  const mf::Node& n = g.node(id);
  return n.kind == mf::kOpNode && (mf::Registry::get().at(n.op).flags_ & MF_OPF_WRITES);
}

// The needed nodes' ordering edges before the read-before-write rule: inputs, control edges, and
// every needed writer of a variable to each later (by id) needed writer of it. succ[a] lists b for
// each edge a -> b.
std::vector<std::vector<int32_t>> base_edges(const Graph& g, const std::vector<char>& need) {
  int32_t n = g.size();
  auto succ = std::vector<std::vector<int32_t>>(size_t(n));
  auto var_of = [&](const NodeEntry& e) {
    int32_t v = g.resolve(e).node;
    return g.node(v).kind == mf::kVariable ? v : -1;
  };
  for (int32_t id = 0; id < n; ++id) {
    if (!need[size_t(id)]) continue;
    for (const NodeEntry& e : g.node(id).inputs) succ[size_t(g.resolve(e).node)].push_back(id);
    for (int32_t c : g.node(id).control) succ[size_t(g.resolve({c, 0}).node)].push_back(id);
    if (!writes(g, id)) continue;
    for (int32_t w = 0; w < id; ++w) {
      if (!need[size_t(w)] || !writes(g, w)) continue;
      bool shared = false;
      for (const NodeEntry& a : g.node(w).inputs)
        for (const NodeEntry& b : g.node(id).inputs) shared = shared || (var_of(a) >= 0 && var_of(a) == var_of(b));
      if (shared) succ[size_t(w)].push_back(id);
    }
  }
  return succ;
}

// Is b reachable from a along succ?
bool reaches(const std::vector<std::vector<int32_t>>& succ, int32_t a, int32_t b) {
  std::vector<char> seen(succ.size(), 0);
  std::vector<int32_t> todo{a};
  while (!todo.empty()) {
    int32_t x = todo.back();
    todo.pop_back();
    if (x == b) return true;
    for (int32_t s : succ[size_t(x)])
      if (!seen[size_t(s)]) seen[size_t(s)] = 1, todo.push_back(s);
  }
  return false;
}

std::vector<char> needed(const Graph& g, const std::vector<int32_t>& targets) {
  std::vector<char> need(size_t(g.size()), 0);
  for (int32_t id = 0; id < g.size(); ++id)
    for (int32_t t : targets) need[size_t(id)] = need[size_t(id)] || depends(g, g.resolve({t, 0}).node, id);
  return need;
}

// Checks the documented order rules on `order` for `targets`: exactly the needed nodes, each once;
// every input and control predecessor first; ops writing one variable in creation order; every
// read of a variable before an op writing it unless the read depends on that op.
void check_order(const Graph& g, const std::vector<int32_t>& targets, const std::vector<int32_t>& order) {
  std::vector<int32_t> at(size_t(g.size()), -1);
  for (size_t k = 0; k < order.size(); ++k) {
    REQUIRE(at[size_t(order[k])] == -1);
    at[size_t(order[k])] = int32_t(k);
  }
  const std::vector<char> need = needed(g, targets);
  const std::vector<std::vector<int32_t>> succ = base_edges(g, need);
  for (int32_t id = 0; id < g.size(); ++id) {
    INFO("node " << id);
    CHECK(bool(need[size_t(id)]) == (at[size_t(id)] >= 0));
  }
  for (int32_t id : order) {
    const mf::Node& n = g.node(id);
    for (const NodeEntry& e : n.inputs) CHECK(at[size_t(g.resolve(e).node)] < at[size_t(id)]);
    for (int32_t c : n.control) CHECK(at[size_t(g.resolve({c, 0}).node)] < at[size_t(id)]);
    if (!writes(g, id)) continue;
    for (const NodeEntry& we : n.inputs) {
      int32_t var = g.resolve(we).node;
      if (g.node(var).kind != mf::kVariable) continue;
      for (int32_t r : order) {
        if (r != id && writes(g, r)) {  // another writer of var: creation order
          for (const NodeEntry& oe : g.node(r).inputs)
            if (g.resolve(oe).node == var) CHECK((r < id) == (at[size_t(r)] < at[size_t(id)]));
        }
        if (r == id || writes(g, r) || g.node(r).kind != mf::kOpNode) continue;
        bool reads = false;
        for (const NodeEntry& re : g.node(r).inputs) reads = reads || g.resolve(re).node == var;
        if (!reads) continue;
        INFO("reader " << r << ", writer " << id);
        CHECK((reaches(succ, id, r) || at[size_t(r)] < at[size_t(id)]));
      }
    }
  }
}

// Whether the rules admit no order at all: the needed nodes with the input and control edges, plus
// reader -> writer for every read of a variable that does not depend on the writer, have a cycle
// (Kahn's algorithm leaves nodes over).
bool rules_cycle(const Graph& g, const std::vector<int32_t>& targets) {
  int32_t n = g.size();
  const std::vector<char> need = needed(g, targets);
  const std::vector<std::vector<int32_t>> base = base_edges(g, need);
  std::vector<std::vector<int32_t>> succ = base;
  for (int32_t w = 0; w < n; ++w) {
    if (!need[size_t(w)] || !writes(g, w)) continue;
    for (const NodeEntry& we : g.node(w).inputs) {
      int32_t var = g.resolve(we).node;
      if (g.node(var).kind != mf::kVariable) continue;
      for (int32_t r = 0; r < n; ++r) {
        if (!need[size_t(r)] || r == w || writes(g, r) || g.node(r).kind != mf::kOpNode) continue;
        bool reads = false;
        for (const NodeEntry& re : g.node(r).inputs) reads = reads || g.resolve(re).node == var;
        if (reads && !reaches(base, w, r)) succ[size_t(r)].push_back(w);
      }
    }
  }
  std::vector<int32_t> indeg(size_t(n), 0), ready;
  for (const auto& l : succ)
    for (int32_t t : l) ++indeg[size_t(t)];
  int32_t left = 0;
  for (int32_t id = 0; id < n; ++id)
    if (need[size_t(id)]) (indeg[size_t(id)] == 0 ? ready.push_back(id) : void(++left));
  while (!ready.empty()) {
    int32_t x = ready.back();
    ready.pop_back();
    for (int32_t t : succ[size_t(x)])
      if (--indeg[size_t(t)] == 0) ready.push_back(t), --left;
  }
  return left > 0;
}

}  // namespace

TEST_CASE("graph passes: order follows the read-before-write rule on random graphs", "[graph]") {
  const int add = op("add"), mul = op("mul"), tanh_op = op("tanh"), assign = op("assign");
  std::mt19937 rng(20);
  int ordered = 0, cycles = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Graph g;
    std::vector<int32_t> vars, values;
    for (int v = 0; v < 3; ++v) vars.push_back(g.add(mf::kVariable, -1, "", {}, 1, "v"));
    values.push_back(g.add(mf::kPlaceholder, -1, "", {}, 1, "x"));
    values.insert(values.end(), vars.begin(), vars.end());
    std::vector<int32_t> writers;
    auto pick = [&](const std::vector<int32_t>& from) { return from[rng() % from.size()]; };
    for (int k = 0; k < 40; ++k) {
      unsigned what = rng() % 10;
      int32_t id;
      if (what < 2) {  // an assign of a variable, from a value computed so far
        id = g.add(mf::kOpNode, assign, "", {{pick(vars), 0}, {pick(values), 0}}, 1, "assign");
        writers.push_back(id);
      } else if (what < 6) {
        id = g.add(mf::kOpNode, what < 4 ? add : mul, "", {{pick(values), 0}, {pick(values), 0}}, 1, "bin");
      } else {
        id = g.add(mf::kOpNode, tanh_op, "", {{pick(values), 0}}, 1, "tanh");
      }
      values.push_back(id);
      if (what == 9 && id > 5) g.add_control(id, int32_t(rng() % uint32_t(id)));  // an earlier node first
    }
    std::vector<int32_t> targets{values.back()};
    for (int32_t w : writers)
      if (rng() % 2) targets.push_back(w);
    std::vector<int32_t> order;
    try {
      order = g.order(targets);
    } catch (const mf::Error& e) {  // only when the rules are unsatisfiable
      CHECK_THAT(e.what(), Catch::Contains("cycle"));
      CHECK(rules_cycle(g, targets));
      ++cycles;
      continue;
    }
    CHECK_FALSE(rules_cycle(g, targets));
    check_order(g, targets, order);
    ++ordered;
  }
  CHECK(ordered >= 30);
  CHECK(cycles < 30);
}

TEST_CASE("graph passes: rules no order can satisfy are a cycle error", "[graph]") {
  const int mul = op("mul"), assign = op("assign");
  Graph g;
  int32_t v1 = g.add(mf::kVariable, -1, "", {}, 1, "v1"), v2 = g.add(mf::kVariable, -1, "", {}, 1, "v2");
  int32_t x = g.add(mf::kPlaceholder, -1, "", {}, 1, "x");
  int32_t w1 = g.add(mf::kOpNode, assign, "", {{v1, 0}, {x, 0}}, 1, "w1");
  int32_t r2 = g.add(mf::kOpNode, mul, "", {{v2, 0}, {v2, 0}}, 1, "r2");
  g.add_control(r2, w1);  // r2 after w1; r2 must precede w2 ...
  int32_t w2 = g.add(mf::kOpNode, assign, "", {{v2, 0}, {x, 0}}, 1, "w2");
  int32_t r1 = g.add(mf::kOpNode, mul, "", {{v1, 0}, {v1, 0}}, 1, "r1");
  g.add_control(r1, w2);  // ... r1 after w2, and r1 must precede w1
  REQUIRE(rules_cycle(g, {r1, r2}));
  CHECK_THROWS_WITH(g.order({r1, r2}), Catch::Contains("cycle"));
  CHECK_FALSE(rules_cycle(g, {r1}));  // r1 alone needs w2 but not w1: an order exists
  std::vector<int32_t> order = g.order({r1});
  check_order(g, {r1}, order);
}

TEST_CASE("graph passes: a reader created after an assign still runs before it", "[graph]") {
  const int mul = op("mul"), assign = op("assign");
  Graph g;
  int32_t v = g.add(mf::kVariable, -1, "", {}, 1, "v");
  int32_t c = g.add(mf::kConstant, -1, "", {}, 1, "c");
  int32_t w = g.add(mf::kOpNode, assign, "", {{v, 0}, {c, 0}}, 1, "assign");
  int32_t late = g.add(mf::kOpNode, mul, "", {{v, 0}, {v, 0}}, 1, "late");  // independent: before w
  int32_t after = g.add(mf::kOpNode, mul, "", {{w, 0}, {v, 0}}, 1, "after");  // reads w's result: after
  std::vector<int32_t> order = g.order({w, late, after});
  auto at = [&](int32_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  CHECK(at(late) < at(w));
  CHECK(at(w) < at(after));
  CHECK(order.size() == 5);
}

TEST_CASE("graph passes: a 1M-node chain is ordered and CSE'd without recursion", "[graph]") {
  const int add = op("add"), tanh_op = op("tanh");
  Graph g;
  int32_t x = g.add(mf::kPlaceholder, -1, "", {}, 1, "x");
  int32_t y = x;
  for (int i = 0; i < 500000; ++i) {
    int32_t t = g.add(mf::kOpNode, tanh_op, "", {{y, 0}}, 1, "t");
    int32_t t2 = g.add(mf::kOpNode, tanh_op, "", {{y, 0}}, 1, "t");  // a duplicate of t
    y = g.add(mf::kOpNode, add, "", {{t, 0}, {t2, 0}}, 1, "a");
  }
  // CSE merges each duplicate into its twin; the sums then read one node twice
  CHECK(g.cse() == 500000);
  CHECK(g.resolve({2, 0}).node == 1);  // nodes 1 (t), 2 (t2), 3 (their sum), 4 (the next t), ...
  CHECK(g.resolve({5, 0}).node == 4);
  std::vector<int32_t> order = g.order({y});
  REQUIRE(order.size() == 1000001);  // x, then (t, sum) per step
  CHECK(order.front() == x);
  CHECK(order.back() == y);
  for (size_t k = 1; k < order.size(); k += 2) {
    CHECK(order[k] == int32_t(3 * (k / 2) + 1));  // each t ...
    CHECK(order[k + 1] == int32_t(3 * (k / 2) + 3));  // ... then its sum
    if (order[k] != int32_t(3 * (k / 2) + 1)) break;
  }
  CHECK(g.cse() == 0);  // a second pass finds nothing new
}

TEST_CASE("graph passes: CSE keeps random and writing ops, and nodes with control edges", "[graph]") {
  const int add = op("add"), dropout = op("dropout_mask"), assign = op("assign");
  Graph g;
  int32_t v = g.add(mf::kVariable, -1, "", {}, 1, "v");
  int32_t x = g.add(mf::kPlaceholder, -1, "", {}, 1, "x");
  int32_t a1 = g.add(mf::kOpNode, add, "", {{x, 0}, {v, 0}}, 1, "a1");
  int32_t a2 = g.add(mf::kOpNode, add, "", {{x, 0}, {v, 0}}, 1, "a2");      // same as a1: merged
  int32_t a3 = g.add(mf::kOpNode, add, "", {{v, 0}, {x, 0}}, 1, "a3");      // other input order: kept
  int32_t d1 = g.add(mf::kOpNode, dropout, "p=0.5", {{x, 0}}, 1, "d1");
  int32_t d2 = g.add(mf::kOpNode, dropout, "p=0.5", {{x, 0}}, 1, "d2");    // random: kept
  int32_t w1 = g.add(mf::kOpNode, assign, "", {{v, 0}, {x, 0}}, 1, "w1");
  int32_t w2 = g.add(mf::kOpNode, assign, "", {{v, 0}, {x, 0}}, 1, "w2");  // writes: kept
  int32_t c1 = g.add(mf::kOpNode, add, "", {{a3, 0}, {x, 0}}, 1, "c1");
  int32_t c2 = g.add(mf::kOpNode, add, "", {{a3, 0}, {x, 0}}, 1, "c2");    // has a control edge: kept
  g.add_control(c2, w1);
  int32_t p1 = g.add(mf::kOpNode, add, "k=1", {{x, 0}, {x, 0}}, 1, "p1");
  int32_t p2 = g.add(mf::kOpNode, add, "k=2", {{x, 0}, {x, 0}}, 1, "p2");  // other params: kept
  int32_t p3 = g.add(mf::kOpNode, add, "k=1", {{x, 0}, {x, 0}}, 1, "p3");  // same as p1: merged
  CHECK(g.cse() == 2);
  CHECK(g.resolve({a2, 0}).node == a1);
  CHECK(g.resolve({p3, 0}).node == p1);
  for (int32_t kept : {a1, a3, d1, d2, w1, w2, c1, c2, p1, p2}) CHECK(g.resolve({kept, 0}).node == kept);
}
