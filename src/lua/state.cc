// Lua state set-up: embedded modules are served through package.preload, so the engine needs no
// files at run time and tracebacks still name lua/moonflow/<file>.lua and the line.
#include "state.h"

#include <lua.hpp>

#include "../core/error.h"
#include "../core/threads.h"
#include "../kernels/cpu/blas.h"
#include "../op/registry.h"
#include "embedded.h"

namespace mf {

namespace {

int load_embedded(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  for (const EmbeddedModule* m = kEmbeddedModules; m->name; ++m) {
    if (std::string(m->name) != name) continue;
    if (luaL_loadbuffer(L, m->source, std::char_traits<char>::length(m->source), m->chunkname) != 0)
      return lua_error(L);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    return 1;
  }
  return luaL_error(L, "moonflow: no embedded module '%s'", name);
}

}  // namespace

int lua_traceback_handler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  lua_getglobal(L, "debug");
  lua_getfield(L, -1, "traceback");
  lua_pushstring(L, msg);
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

bool pcall_traceback(lua_State* L, int nargs, int nresults, std::string* err) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, lua_traceback_handler);
  lua_insert(L, base);
  int st = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (st != 0) {
    const char* m = lua_tostring(L, -1);
    if (err) *err = m ? m : "(error object is not a string)";
    lua_pop(L, 1);
    return false;
  }
  return true;
}

lua_State* new_lua_state() {
  (void)blas();  // OpenBLAS failed to load with libmoonflow (blas.cc): every engine start says why
  register_builtin_ops();
  static bool threads_done = (init_threads_from_env(), true);
  (void)threads_done;
  adopt_num_threads();
  lua_State* L = luaL_newstate();
  if (!L) fail("moonflow: cannot create a Lua state (out of memory)");
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  for (const EmbeddedModule* m = kEmbeddedModules; m->name; ++m) {
    lua_pushcfunction(L, load_embedded);
    lua_setfield(L, -2, m->name);
  }
  lua_pop(L, 2);
  lua_getglobal(L, "require");
  lua_pushstring(L, "moonflow");
  std::string err;
  if (!pcall_traceback(L, 1, 1, &err)) {
    lua_close(L);
    fail("moonflow: loading the Lua library failed: ", err);
  }
  lua_setglobal(L, "mf");
  return L;
}

}  // namespace mf
