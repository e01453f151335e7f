/* moonflow's data model in plain C: element types, devices, statuses, limits and the tensor struct.
   It compiles as C, C++ and CUDA. src/lua/abi.h includes it; the build runs abi.h through the C
   preprocessor with MF_CDEF defined (cmake/embed_lua.cmake) to make the text LuaJIT's ffi.cdef
   reads, so Lua reads these constants as C.MF_* instead of retyping them. Constants are enums, not
   #defines, for that reason. */
#ifndef MF_CORE_TYPES_H
#define MF_CORE_TYPES_H

#ifndef MF_CDEF
#include <stdint.h> /* LuaJIT's cdef knows the fixed-width integer types already */
#endif

/* Element types. MF_DTYPE_COUNT: codes run 0 .. MF_DTYPE_COUNT - 1. */
typedef enum { MF_FLOAT32 = 0, MF_FLOAT64 = 1, MF_INT32 = 2, MF_INT64 = 3, MF_UINT8 = 4, MF_DTYPE_COUNT = 5 } mf_dtype;
typedef enum { MF_CPU = 0, MF_CUDA = 1 } mf_device;
/* What every C ABI function returns; mf_last_error() has the message of the last failure. */
typedef enum { MF_OK = 0, MF_ERR_ARG = 1, MF_ERR_SHAPE = 2, MF_ERR_MEMORY = 3, MF_ERR_INTERNAL = 4 } mf_status;
/* MF_MAX_DIMS: the most dims a tensor has (the length of mf_tensor's shape and strides). */
enum { MF_MAX_DIMS = 8 };
/* MF_STREAM_BYTES: fresh outputs of this many bytes and more are written by streaming stores
   (src/kernels/cpu/copy.h's stream_into); the collector's nudge counts them apart (lua/moonflow/tensor.lua). */
enum { MF_STREAM_BYTES = 16 << 20 };
/* What a reduction kernel computes (mf_k_reduce; VAR, STD and NORM take a number: mf_k_reduce_p). */
typedef enum {
  MF_R_SUM, MF_R_MEAN, MF_R_MAX, MF_R_MIN, MF_R_PROD, MF_R_ARGMAX, MF_R_ARGMIN, MF_R_ANY, MF_R_ALL, MF_R_LOGSUMEXP,
  MF_R_VAR, MF_R_STD, MF_R_NORM, MF_R_COUNT
} mf_reduce_code;

typedef struct mf_storage mf_storage;

/* MF_FIELD(name): the name of an mf_tensor field. C, C++ and CUDA see name; the Lua view (the
   MF_CDEF text) sees _name, private by the leading underscore, so that a script's x.shape and
   x.ndim reach the tensor metatype's read-only properties (x:size(), 1-based, and x:dim()) and a
   write to x.shape, x.ndim, x.ptr ... raises instead of corrupting the header (lua/moonflow/tensor.lua).
   Lua code of the library and kernel strings read the header as t._shape[0], t._ndim, t._ptr ... */
#ifdef MF_CDEF
#define MF_FIELD(name) _##name
#else
#define MF_FIELD(name) name
#endif

/* A strided view of a storage; the struct itself belongs to the caller (a Lua cdata, a C++ object).
   ptr is the first element (storage base + offset elements); strides and offset count elements.
   owns = 1: the struct holds one reference to store, dropped by mf_tensor_release.
   owns = 0: a borrowed view (executor slots), never released. */
typedef struct mf_tensor {
  void *MF_FIELD(ptr);
  int64_t MF_FIELD(count);
  int64_t MF_FIELD(shape)[MF_MAX_DIMS];
  int64_t MF_FIELD(strides)[MF_MAX_DIMS];
  int64_t MF_FIELD(offset);
  int32_t MF_FIELD(ndim);
  int32_t MF_FIELD(dtype_id);
  int32_t MF_FIELD(device_id);
  int32_t MF_FIELD(is_contig);
  int32_t MF_FIELD(owns);
  /* autograd: the eager tape (lua/moonflow/tape.lua) sets it to 1 on a tensor that may have autograd state,
     so the dispatcher tests one field per input. Native code never reads it; a header shared into a fresh
     struct (mf_tensor_share copies it) must reset it, as that struct has no autograd state. */
  int32_t MF_FIELD(autograd);
  mf_storage *MF_FIELD(store);
} mf_tensor;
#undef MF_FIELD

#endif /* MF_CORE_TYPES_H */
