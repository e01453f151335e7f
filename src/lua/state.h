// Creating a Lua state with moonflow loaded: the CLI and embedding hosts both start here.
#pragma once
#include <string>

struct lua_State;

namespace mf {

// A new LuaJIT state with the standard libraries, the embedded moonflow modules on package.preload,
// the built-in ops registered, and the global `mf` bound to require 'moonflow'. Throws mf::Error.
lua_State* new_lua_state();
// Message and traceback handler for lua_pcall: returns the error text with a traceback appended.
int lua_traceback_handler(lua_State* L);
// Runs the function on top of the stack (with nargs arguments below it) under the traceback handler;
// on error returns false and sets *err. Leaves nresults values on success.
bool pcall_traceback(lua_State* L, int nargs, int nresults, std::string* err);

}  // namespace mf
