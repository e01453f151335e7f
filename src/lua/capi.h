// C++ view of the C ABI in abi.h (which the build preprocesses into the text LuaJIT's ffi.cdef reads).
#pragma once
#include <cstdint>
extern "C" {
#include "abi.h"
}
