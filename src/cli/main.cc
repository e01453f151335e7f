// The moonflow executable: runs a script (moonflow file.lua args...), a chunk (-e), prints op docs
// (--help-op, --list-ops), or starts the REPL when given nothing to run.
#include <lua.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "../core/error.h"
#include "../lua/state.h"
#include "repl.h"

namespace {

const char* kUsage =
    "usage: moonflow [options] [script.lua [args...]]\n"
    "  -e CODE          run CODE (several -e run in order), then exit unless -i\n"
    "  -i               enter the REPL after running a script or -e\n"
    "  --help-op NAME   print the docs of op NAME\n"
    "  --list-ops       print the names of every registered op\n"
    "  --version        print the version\n"
    "  -h, --help       this text\n"
    "With no script and no -e, starts the interactive REPL.\n";

int run_chunk(lua_State* L, int load_status) {
  if (load_status != 0) {
    std::fprintf(stderr, "moonflow: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  mf::set_entry_chunk(L);  // an error after `return f()` on its last line still names the line
  std::string err;
  bool ok = mf::pcall_traceback(L, 0, 0, &err);
  mf::clear_entry_chunk(L);
  if (!ok) {
    std::fprintf(stderr, "moonflow: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  lua_State* L = nullptr;
  try {
    L = mf::new_lua_state();
  } catch (const std::exception& e) {  // mf::Error, or std::bad_alloc before the state exists
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  lua_getglobal(L, "mf");  // help() is a global in scripts and the REPL alike
  lua_getfield(L, -1, "help");
  lua_setglobal(L, "help");
  lua_pop(L, 1);
  int status = 0;
  bool ran = false, interactive = false;
  int i = 1;
  for (; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--version")) {
      lua_getglobal(L, "mf");
      lua_getfield(L, -1, "_VERSION");
      std::printf("moonflow %s (%s)\n", lua_tostring(L, -1), LUAJIT_VERSION);
      lua_pop(L, 2);
      ran = true;
    } else if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      std::fputs(kUsage, stdout);
      ran = true;
    } else if (!std::strcmp(a, "--list-ops")) {
      if (luaL_dostring(L, "for _, n in ipairs(mf.list_ops()) do print(n) end") != 0) status = 1;
      ran = true;
    } else if (!std::strcmp(a, "--help-op")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "moonflow: --help-op needs an op name\n");
        status = 2;
        break;
      }
      lua_getglobal(L, "mf");
      lua_getfield(L, -1, "op_doc");
      lua_pushstring(L, argv[++i]);
      lua_call(L, 1, 1);
      if (lua_isstring(L, -1)) {
        std::printf("%s\n", lua_tostring(L, -1));
      } else {
        std::fprintf(stderr, "moonflow: no op named '%s' (moonflow --list-ops lists them)\n", argv[i]);
        status = 1;
      }
      lua_pop(L, 2);
      ran = true;
    } else if (!std::strcmp(a, "-e")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "moonflow: -e needs code\n");
        status = 2;
        break;
      }
      status = run_chunk(L, luaL_loadbuffer(L, argv[i + 1], std::strlen(argv[i + 1]), "=(command line)"));
      ++i;
      ran = true;
      if (status) break;
    } else if (!std::strcmp(a, "-i")) {
      interactive = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      std::fprintf(stderr, "moonflow: unknown option '%s'\n%s", a, kUsage);
      status = 2;
      break;
    } else {
      // a script: arg[0] is its path, arg[1..] the rest, as in lua.c
      lua_createtable(L, argc - i - 1, 1);
      for (int k = i; k < argc; ++k) {
        lua_pushstring(L, argv[k]);
        lua_rawseti(L, -2, k - i);
      }
      lua_setglobal(L, "arg");
      status = run_chunk(L, luaL_loadfile(L, a));
      ran = true;
      break;
    }
  }
  if (status == 0 && (!ran || interactive)) status = mf::run_repl(L);
  lua_close(L);
  return status;
}
