/* Op flags in plain C, shared by the registry (src/op/registry.h), the graph passes and the C ABI
   (src/lua/abi.h includes this header; Lua reads the flags as C.MF_OPF_*). */
#ifndef MF_OP_FLAGS_H
#define MF_OP_FLAGS_H

/* op flags: VIEW output 1.. alias input 1; VARIADIC any number of inputs; LUA registered from Lua;
   RANDOM draws from the generator; WRITES updates the variables among its inputs; INPLACE output 1
   may reuse the storage of an input of the same shape and dtype that dies at this op; STRIDED the
   kernel takes its inputs as they are (any sizes, strides, offset): without it the engine hands it
   contiguous inputs, copying a non-contiguous view first (the kernel layout contract) */
typedef enum { MF_OPF_VIEW = 1, MF_OPF_VARIADIC = 2, MF_OPF_LUA = 4, MF_OPF_RANDOM = 8, MF_OPF_WRITES = 16,
               MF_OPF_INPLACE = 32, MF_OPF_STRIDED = 64 } mf_op_flag;

#endif /* MF_OP_FLAGS_H */
