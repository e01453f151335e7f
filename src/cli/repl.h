// The interactive REPL: libedit line editing with history appended after every line, continuation of
// incomplete statements, pretty results, `=expr`, tab completion, help(), exit(), and Ctrl-C that
// clears the line at the prompt and interrupts the running statement without losing the session.
#pragma once

struct lua_State;

namespace mf {

// Reads, evaluates and prints until end of input or exit(n); returns the process exit status.
// When stdin is not a terminal it reads plain lines (piped sessions, tests) and returns 1 if any
// statement failed or the input ended inside a statement, the exit(n) status if one was called.
int run_repl(lua_State* L);

// Marks the function on top of the stack (left there) as the chunk the host is running, so that an
// error raised after a tail call replaced its frame can still name its line (K.raise in kernels.lua).
void set_entry_chunk(lua_State* L);
// Forgets it once the chunk has returned (a later error, from a finalizer say, is not its doing).
void clear_entry_chunk(lua_State* L);

}  // namespace mf
