/* The graph layer's types in plain C, shared by the graph IR (src/graph/graph.h, which documents
   the plan entry's fields) and the C ABI (src/lua/abi.h includes this header; Lua reads the kinds
   as C.MF_NODE_*). */
#ifndef MF_GRAPH_TYPES_H
#define MF_GRAPH_TYPES_H

#ifndef MF_CDEF
#include <stdint.h>
#endif

/* What a graph node is: an op application, or a placeholder, variable or constant (no inputs). */
typedef enum { MF_NODE_OP = 0, MF_NODE_PLACEHOLDER = 1, MF_NODE_VARIABLE = 2, MF_NODE_CONSTANT = 3 } mf_node_kind;

/* One entry of the memory planner (mf_plan_memory). */
typedef struct mf_plan_entry {
  int64_t nbytes;
  int32_t step;
  int32_t last_use;
  int32_t alias_of;
  int32_t inplace_of;
  int32_t external;
  int32_t pad_;
} mf_plan_entry;

#endif /* MF_GRAPH_TYPES_H */
