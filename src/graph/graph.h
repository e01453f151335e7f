// Graph IR: nodes (ops, placeholders, variables, constants) with indexed inputs, and the passes
// that need only structure: execution order, common-subexpression elimination, simplification
// and the memory plan. Shape inference and binding run per node through the registry (Lua side).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace mf {

enum NodeKind {
  kOpNode = MF_NODE_OP, kPlaceholder = MF_NODE_PLACEHOLDER, kVariable = MF_NODE_VARIABLE, kConstant = MF_NODE_CONSTANT
};

struct NodeEntry {
  int32_t node;
  int32_t index;  // which output of the node
  bool operator==(const NodeEntry& o) const { return node == o.node && index == o.index; }
};

struct Node {
  int kind = kOpNode;
  int op = -1;                   // registry index for op nodes
  std::string params;            // canonical params text
  std::vector<NodeEntry> inputs;
  std::vector<int32_t> control;  // nodes that must run first
  int32_t num_outputs = 1;
  std::string name;
  int32_t forward = -1;          // after CSE or simplification: the node that now stands for this one
};

class Graph {
 public:
  // Adds a node; inputs must name existing nodes and outputs. Returns its id.
  int32_t add(int kind, int op, const std::string& params, const std::vector<NodeEntry>& inputs,
              int32_t num_outputs, const std::string& name);
  void add_control(int32_t node, int32_t before);
  const Node& node(int32_t id) const;
  int32_t size() const { return int32_t(nodes_.size()); }
  // Follows forwards left by CSE and simplification.
  NodeEntry resolve(NodeEntry e) const;

  // The nodes the targets need, inputs before consumers. Reads of a variable come before an op
  // that writes it (MF_OPF_WRITES: assign, optimizer updates; the documented order) unless the read
  // itself depends on that op; ops that write one variable keep their creation order.
  std::vector<int32_t> order(const std::vector<int32_t>& targets) const;
  // Merges op nodes with the same op, params and inputs, except those that draw random numbers
  // (MF_OPF_RANDOM), write their inputs (MF_OPF_WRITES) or have control edges; returns how many
  // were merged.
  int32_t cse();
  // Applies the rewrite rules op blocks declare (OpDef::replaces, src/op/registry.h) to the op
  // nodes in one pass: a node outer(inner(x..., p)) becomes result(x..., p), as log(softmax(x, d))
  // becomes log_softmax(x, d). The inner node stays for its other readers. Returns how many rewrites
  // happened.
  int32_t simplify();

 private:
  std::vector<Node> nodes_;
};

// One entry (a node output) as the memory planner sees it (mf_plan_entry in the C ABI):
// nbytes; step that produces it; last_use, the last step that reads it (itself or through a view);
// alias_of, the entry it is a view of (no storage of its own) or -1; inplace_of, the entry whose
// storage it may take over when that one dies at this step, or -1; external = 1 when its storage
// lives outside the plan (feeds, variables, constants, fetched outputs).
using PlanEntry = mf_plan_entry;

struct MemoryPlan {
  std::vector<int32_t> slot;         // per entry: slot index, or -1 (external or alias)
  std::vector<int64_t> slot_bytes;   // per slot
  int64_t planned_bytes = 0;         // sum of slot sizes
  int64_t naive_bytes = 0;           // one buffer per planned entry, no reuse
  int32_t inplace = 0;               // entries that took over their input's storage
};

// Liveness-based slot assignment: an entry takes its input's slot in place when allowed, else
// the best-fitting free slot (grown if needed), else a new one; slots free after their last use.
MemoryPlan plan_memory(const std::vector<PlanEntry>& entries);

}  // namespace mf
