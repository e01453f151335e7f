// Element types and the dispatch helper that instantiates a kernel per dtype.
#pragma once
#include <cstdint>
#include <string>

#include "types.h"
#include "error.h"

namespace mf {

inline int dtype_size(int dt) {
  switch (dt) {
    case MF_FLOAT32: return 4;
    case MF_FLOAT64: return 8;
    case MF_INT32: return 4;
    case MF_INT64: return 8;
    case MF_UINT8: return 1;
  }
  return 0;
}

inline const char* dtype_name(int dt) {
  switch (dt) {
    case MF_FLOAT32: return "float32";
    case MF_FLOAT64: return "float64";
    case MF_INT32: return "int32";
    case MF_INT64: return "int64";
    case MF_UINT8: return "uint8";
  }
  return "invalid";
}

inline bool dtype_valid(int dt) { return dt >= 0 && dt < MF_DTYPE_COUNT; }
inline bool dtype_is_float(int dt) { return dt == MF_FLOAT32 || dt == MF_FLOAT64; }

// Parses "float32" (also "float", "double", "int", "long", "byte"); throws naming the bad text.
int dtype_from_name(const std::string& name);

// The dtype both operands convert to: floats beat ints, wider beats narrower.
int promote_types(int a, int b);

// MF_DISPATCH(dt, T, body) runs body with T bound to the C++ type of dt.
#define MF_DISPATCH(dt, T, ...)                                         \
  switch (dt) {                                                         \
    case MF_FLOAT32: { using T = float; __VA_ARGS__; break; }           \
    case MF_FLOAT64: { using T = double; __VA_ARGS__; break; }          \
    case MF_INT32: { using T = int32_t; __VA_ARGS__; break; }           \
    case MF_INT64: { using T = int64_t; __VA_ARGS__; break; }           \
    case MF_UINT8: { using T = uint8_t; __VA_ARGS__; break; }           \
    default: ::mf::fail("invalid dtype code ", int(dt));                \
  }

#define MF_DISPATCH_FLOAT(dt, T, what, ...)                                                   \
  switch (dt) {                                                                               \
    case MF_FLOAT32: { using T = float; __VA_ARGS__; break; }                                 \
    case MF_FLOAT64: { using T = double; __VA_ARGS__; break; }                                \
    default: ::mf::fail(what, ": dtype ", ::mf::dtype_name(dt), " not supported; expected float32 or float64"); \
  }

}  // namespace mf
