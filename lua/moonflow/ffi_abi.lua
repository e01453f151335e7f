-- The C ABI (src/lua/abi.h and the type headers it includes, preprocessed at build time) declared
-- to LuaJIT once per state; returns the C namespace, where Lua reads every constant (C.MF_*).
local ffi = require 'ffi'
ffi.cdef(require 'moonflow.abi_cdef')
return ffi.C
