// C++ view of the C ABI in abi.h (which stays free of preprocessor lines for LuaJIT's ffi.cdef).
#pragma once
#include <cstdint>
extern "C" {
#include "abi.h"
}
