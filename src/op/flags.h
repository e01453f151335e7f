/* Op flags in plain C, shared by the registry (src/op/registry.h), the graph passes and the C ABI
   (src/lua/abi.h includes this header; Lua reads the flags as C.MF_OPF_*). */
#ifndef MF_OP_FLAGS_H
#define MF_OP_FLAGS_H

/* op flags: VIEW output 1.. alias input 1; VARIADIC any number of inputs; LUA registered from Lua;
   RANDOM draws from the generator; WRITES updates the variables among its inputs; INPLACE output 1
   may reuse the storage of an input of the same shape and dtype that dies at this op; STRIDED the
   kernel takes its inputs as they are (any sizes, strides, offset): without it the engine hands it
   contiguous inputs, copying a non-contiguous view first (the kernel layout contract);
   OVERWRITES writes input 1 whole from input 2 without reading it (assign); LIST_OUTPUT returns its
   outputs as one list (split); LIST_ARGS its first param, an integer list, may be given as separate
   numbers (reshape(x, 2, 3)); SAME_SHAPE_IDENTITY returns input 1 when inputs 1 and 2 have the same
   shape (sum_to); LOCAL_SHAPE, LOCAL_GRADIENT (Lua-registered ops) that rule is a Lua function held
   by the engine that registered the op, so other engines cannot run it; DIM_FIRST its call also takes
   PyTorch's order, its first param (dim) right after input 1: x:gather(dim, index). The builder methods
   of src/op/registry.h say more. */
typedef enum { MF_OPF_VIEW = 1, MF_OPF_VARIADIC = 2, MF_OPF_LUA = 4, MF_OPF_RANDOM = 8, MF_OPF_WRITES = 16,
               MF_OPF_INPLACE = 32, MF_OPF_STRIDED = 64, MF_OPF_OVERWRITES = 128, MF_OPF_LIST_OUTPUT = 256,
               MF_OPF_LIST_ARGS = 512, MF_OPF_SAME_SHAPE_IDENTITY = 1024, MF_OPF_LOCAL_SHAPE = 2048,
               MF_OPF_LOCAL_GRADIENT = 4096, MF_OPF_DIM_FIRST = 8192 } mf_op_flag;

#endif /* MF_OP_FLAGS_H */
