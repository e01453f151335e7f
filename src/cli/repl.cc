// REPL on libedit's readline-compatible API. Lua does the formatting and completion
// (lua/moonflow/repl.lua); this file owns the terminal, history and Ctrl-C.
#include "repl.h"

#include <editline/readline.h>
#include <lua.hpp>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "../lua/capi.h"
#include "../lua/state.h"

namespace mf {

namespace {

lua_State* g_L = nullptr;  // the state being evaluated, for the SIGINT hook and completion

void interrupt_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted");
}

void on_sigint(int) {
  // Interpreted code stops at the hook (as in lua.c); JIT-compiled loops never see hooks, so the
  // flag that every eager op call checks stops those. A second Ctrl-C gets the default action.
  std::signal(SIGINT, SIG_DFL);
  *mf_interrupt_flag() = 1;
  if (g_L) lua_sethook(g_L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

// Calls require('moonflow.repl')[fn] with the string on top of the stack; leaves one result.
bool repl_call(lua_State* L, const char* fn, int nargs) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "moonflow.repl");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);
  lua_insert(L, -(nargs + 1));
  std::string err;
  if (!pcall_traceback(L, nargs, 1, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return false;
  }
  return true;
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;
  lua_State* L = g_L;
  lua_pushstring(L, text);
  if (!repl_call(L, "complete", 1)) return nullptr;
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return nullptr;
  }
  int n = int(lua_objlen(L, -1));
  if (n == 0) {
    lua_pop(L, 1);
    return nullptr;
  }
  // matches[0] is the common prefix (readline's convention), then every candidate
  char** matches = static_cast<char**>(std::calloc(size_t(n) + 2, sizeof(char*)));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, i);
    matches[i] = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  std::string common = matches[1];
  for (int i = 2; i <= n; ++i) {
    size_t k = 0;
    while (k < common.size() && matches[i][k] == common[k]) ++k;
    common.resize(k);
  }
  matches[0] = strdup(common.c_str());
  lua_pop(L, 1);
  return matches;
}

std::string history_path() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.moonflow_history";
}

// Compiles the statement; returns 0 ok, 1 incomplete (needs more lines), 2 syntax error.
int compile(lua_State* L, const std::string& code) {
  std::string expr = "return " + code;  // an expression prints its value
  if (luaL_loadbuffer(L, expr.data(), expr.size(), "=stdin") == 0) return 0;
  lua_pop(L, 1);
  if (luaL_loadbuffer(L, code.data(), code.size(), "=stdin") == 0) return 0;
  const char* msg = lua_tostring(L, -1);
  size_t len = std::strlen(msg);
  if (len >= 7 && std::strcmp(msg + len - 7, "'<eof>'") == 0) {  // the chunk ended too early
    lua_pop(L, 1);
    return 1;
  }
  return 2;
}

// Runs the compiled chunk on top of the stack and prints its results.
void execute(lua_State* L) {
  int base = lua_gettop(L) - 1;
  g_L = L;
  auto old = std::signal(SIGINT, on_sigint);
  std::string err;
  bool ok = pcall_traceback(L, 0, LUA_MULTRET, &err);
  std::signal(SIGINT, old);
  lua_sethook(L, nullptr, 0, 0);
  *mf_interrupt_flag() = 0;
  if (!ok) {
    std::fprintf(stderr, "%s\n", err.c_str());
    std::fflush(stderr);
    return;
  }
  int nres = lua_gettop(L) - base;
  if (nres > 0) {
    if (repl_call(L, "show", nres) && lua_isstring(L, -1)) std::printf("%s\n", lua_tostring(L, -1));
    lua_settop(L, base);
  }
  std::fflush(stdout);
}

}  // namespace

int run_repl(lua_State* L) {
  g_L = L;
  bool tty = isatty(0);
  std::string hist = history_path();
  if (tty) {
    rl_readline_name = const_cast<char*>("moonflow");
    rl_attempted_completion_function = complete;
    rl_completion_append_character = '\0';
    rl_basic_word_break_characters = const_cast<char*>(" \t\n\"\\'`@$><=;|&{(,+-*/");
    read_history(hist.c_str());
    lua_getglobal(L, "mf");
    lua_getfield(L, -1, "_VERSION");
    std::printf("moonflow %s  (help() for help, Ctrl-D to quit)\n", lua_tostring(L, -1));
    lua_pop(L, 2);
  }
  std::string buffer;
  for (;;) {
    std::string line;
    if (tty) {
      char* l = readline(buffer.empty() ? "mf> " : "..> ");
      if (!l) break;
      line = l;
      std::free(l);
      if (!line.empty()) add_history(line.c_str());
    } else if (!std::getline(std::cin, line)) {
      break;
    }
    if (buffer.empty() && line.empty()) continue;
    buffer += buffer.empty() ? line : "\n" + line;
    int st = compile(L, buffer);
    if (st == 1) continue;
    if (st == 2) {
      std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
      std::fflush(stderr);
      lua_pop(L, 1);
    } else {
      execute(L);
    }
    buffer.clear();
  }
  if (!buffer.empty()) {  // input ended inside a statement: report it as the syntax error it is
    if (compile(L, buffer) != 0) {
      if (lua_isstring(L, -1)) std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
      lua_settop(L, 0);
    }
  }
  if (tty) {
    write_history(hist.c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace mf
