-- The C ABI (src/lua/abi.h) declared to LuaJIT once per state; returns the C namespace.
local ffi = require 'ffi'
ffi.cdef(require 'moonflow.abi_cdef')
return ffi.C
