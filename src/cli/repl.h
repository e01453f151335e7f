// The interactive REPL: libedit line editing with history, continuation of incomplete statements,
// pretty results, tab completion, help(), and Ctrl-C that interrupts the running statement.
#pragma once

struct lua_State;

namespace mf {

// Reads, evaluates and prints until end of input; returns the process exit status.
// When stdin is not a terminal it reads plain lines (for piped sessions and tests).
int run_repl(lua_State* L);

}  // namespace mf
