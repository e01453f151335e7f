// REPL on libedit's readline-compatible API. Lua does the formatting and completion
// (lua/moonflow/repl.lua); this file owns the terminal, history, Ctrl-C, exit() and the exit status.
//
// Ctrl-C, as built here (the README's REPL paragraph tells users the same):
// * At the prompt, SIGINT is blocked except inside the pselect() of our libedit getc function; the
//   handler only sets a flag, getc sees it and ends the line with '\n', and the REPL drops that line
//   (and any unfinished statement): a fresh prompt. libedit's own signal handling is off: it would
//   re-raise SIGINT with kill(0, ...) and leave the terminal mode behind.
// * While a statement runs, each Ctrl-C sets mf_interrupt_flag (every eager op checks it at its
//   entry, also inside compiled traces, where the check is a guard) and installs a count hook that
//   raises "interrupted" at the next bytecode of user code the interpreter executes (luajit.c sets
//   its hook from the handler too; LuaJIT's profiler updates the dispatch table from one). Inside
//   moonflow's own Lua the hook waits for user code, so library state is never left half-updated.
//   Globals and tensors survive.
// * LuaJIT's compiled traces never call hooks, and a loop compiled into a trace that calls no op
//   never returns to the interpreter, so no signal-safe code can stop it. Flushing the JIT does not
//   help: lj_trace_flushall frees the machine code the running trace executes (from the handler
//   that is a crash), and every point where a flush would be safe (the hook, an op call) already
//   raises. So code typed at the prompt runs with the JIT off for its functions (jit.off(f, true)
//   on each statement's chunk): it is always interruptible, at interpreter speed; the library and
//   code loaded by require, dofile or load keep the JIT. A second Ctrl-C while the first is still
//   pending means such compiled code (or a long native kernel) is running: it prints a note, and
//   the statement stops at its next op call or interpreted bytecode. Ctrl-\ (SIGQUIT) still quits.
// Ctrl-C never ends an interactive session. Piped input keeps the default SIGINT action, as scripts.
#include "repl.h"

#include <editline/readline.h>
#include <fcntl.h>
#include <lua.hpp>
#include <pthread.h>
#include <sys/select.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "../lua/capi.h"
#include "../lua/state.h"

namespace mf {

namespace {

lua_State* g_L = nullptr;  // the state being evaluated, for the SIGINT hook and completion
pthread_t g_main_thread;   // Lua runs here; SIGINT taken by another thread is forwarded to it
volatile int32_t* g_interrupt = nullptr;   // mf_interrupt_flag(): checked by every eager op call
volatile sig_atomic_t g_running = 0;       // a statement is running (else: prompt or bookkeeping)
volatile sig_atomic_t g_hook_pending = 0;  // a Ctrl-C's count hook has not fired yet
volatile sig_atomic_t g_noted = 0;         // the "cannot interrupt here" note was printed
volatile sig_atomic_t g_pressed = 0;       // Ctrl-C during this statement (the tty echoed ^C)
volatile sig_atomic_t g_prompt_int = 0;    // Ctrl-C at the prompt, for read_key
bool g_line_cancelled = false;             // read_key ended the line because of Ctrl-C
bool g_exit_requested = false;             // exit()/quit() was called
int g_exit_code = 0;

const char kStuckNote[] =
    "\nmoonflow: still running compiled Lua, a native kernel or moonflow's own code, which Ctrl-C does "
    "not stop in place; it stops at its next eager op or interpreted line of your code (Ctrl-\\ quits "
    "moonflow)\n";

void block_sigint(bool block) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, nullptr);
}

// moonflow's own Lua (library files and kernel strings): the rule of K.raise in kernels.lua.
bool is_library(const char* source) {
  if (!source) return true;
  size_t n = std::strlen(source);
  return std::strncmp(source, "@lua/moonflow/", 14) == 0 || (n >= 7 && std::strcmp(source + n - 7, "kernel)") == 0);
}

// The count hook a Ctrl-C installs. It raises only while user code runs (level 0: a C hook adds no
// frame), so an interrupt never leaves moonflow's own Lua state half-updated; inside the library it
// looks again every 100 bytecodes (eager ops raise at their entry through the flag meanwhile).
void interrupt_hook(lua_State* L, lua_Debug*) {
  lua_Debug ar;
  bool user = lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && !is_library(ar.source);
  block_sigint(true);  // the handler calls lua_sethook too; never let it interrupt this one
  if (!user) {
    if (g_hook_pending) lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, 100);
    block_sigint(false);
    return;
  }
  lua_sethook(L, nullptr, 0, 0);
  g_hook_pending = 0;
  *g_interrupt = 0;
  block_sigint(false);
  if (ar.currentline > 0) lua_pushfstring(L, "%s:%d: interrupted", ar.short_src, ar.currentline);
  else lua_pushliteral(L, "interrupted");
  lua_error(L);
}

// Async-signal-safe: sets flags, writes with write(2), and calls lua_sethook (see the file header).
void on_sigint(int) {
  int saved = errno;
  if (!pthread_equal(pthread_self(), g_main_thread)) {
    pthread_kill(g_main_thread, SIGINT);
  } else if (g_running) {
    g_pressed = 1;
    *g_interrupt = 1;
    if (g_hook_pending && !g_noted) {
      g_noted = 1;
      ssize_t w = write(STDERR_FILENO, kStuckNote, sizeof kStuckNote - 1);
      (void)w;
    }
    g_hook_pending = 1;
    lua_sethook(g_L, interrupt_hook, LUA_MASKCOUNT, 1);
  } else {
    g_prompt_int = 1;
  }
  errno = saved;
}

// libedit's getc: one byte from the terminal; Ctrl-C (SIGINT unblocked only inside pselect, so a
// Ctrl-C is never lost between the flag test and the wait) ends the line and marks it cancelled.
int read_key(FILE* in) {
  int fd = fileno(in);
  sigset_t during_wait;
  pthread_sigmask(SIG_SETMASK, nullptr, &during_wait);
  sigdelset(&during_wait, SIGINT);
  for (;;) {
    if (g_prompt_int) {
      g_prompt_int = 0;
      g_line_cancelled = true;
      ssize_t w = write(STDOUT_FILENO, "^C", 2);
      (void)w;
      return '\n';
    }
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(fd, &readable);
    int n = pselect(fd + 1, &readable, nullptr, nullptr, nullptr, &during_wait);
    if (n < 0) {
      if (errno == EINTR) continue;
      return EOF;
    }
    unsigned char c;
    ssize_t k = read(fd, &c, 1);
    if (k == 1) return c;
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return EOF;
  }
}

// exit([status]) and quit([status]) in the REPL: leave after this statement with status (default
// 0; true is 0 and false is 1, as os.exit). Raises to unwind the statement; the REPL sees the flag
// even if a pcall catches the error.
int l_exit(lua_State* L) {
  int code = 0;
  if (lua_isboolean(L, 1)) {
    code = lua_toboolean(L, 1) ? 0 : 1;
  } else if (!lua_isnoneornil(L, 1)) {
    if (lua_type(L, 1) != LUA_TNUMBER || lua_tonumber(L, 1) != double(lua_tointeger(L, 1)))
      return luaL_error(L, "exit: expected an integer status, got %s", luaL_typename(L, 1));
    code = int(lua_tointeger(L, 1));
  }
  g_exit_requested = true;
  g_exit_code = code;
  lua_pushliteral(L, "exit");
  return lua_error(L);
}

// Calls require('moonflow.repl')[fn] with the nargs values on top of the stack; leaves one result.
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

// ~/.moonflow_history ($HOME's; none without HOME): one entry per line, appended with O_APPEND as
// each line is entered, so a session that is killed keeps what was typed. Files that libedit's
// write_history wrote (older moonflow: a "_HiStOrY_V2_" cookie, then vis(3)-encoded lines) are
// read and rewritten plainly; the file is cut back to the last kKeep entries when it doubles.
class History {
 public:
  ~History() {
    if (fd_ >= 0) close(fd_);
  }
  void open() {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return;
    path_ = std::string(home) + "/.moonflow_history";
    std::vector<std::string> lines;
    bool legacy = false;
    {
      std::ifstream in(path_);
      std::string l;
      while (std::getline(in, l)) {
        if (lines.empty() && !legacy && l == "_HiStOrY_V2_") {
          legacy = true;
          continue;
        }
        lines.push_back(legacy ? unvis(l) : l);
      }
    }
    bool rewrite = legacy || lines.size() > 2 * kKeep;
    if (lines.size() > kKeep) lines.erase(lines.begin(), lines.end() - kKeep);
    if (rewrite) {
      std::string tmp = path_ + ".tmp";
      std::ofstream out(tmp, std::ios::trunc);
      for (const auto& l : lines) out << l << '\n';
      out.close();
      if (!out || std::rename(tmp.c_str(), path_.c_str()) != 0) std::remove(tmp.c_str());
    }
    stifle_history(int(kKeep));
    for (const auto& l : lines)
      if (!l.empty()) add_history(l.c_str());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  }
  void append(const std::string& line) {
    add_history(line.c_str());
    if (fd_ < 0) return;
    std::string rec = line + '\n';
    ssize_t w = write(fd_, rec.data(), rec.size());  // one write: whole lines even if killed
    (void)w;
  }

 private:
  static constexpr size_t kKeep = 1000;
  // Decodes strvis(VIS_WHITE): \ooo octal, \\, \^X control and \M-x meta forms.
  static std::string unvis(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      char c = s[++i];
      if (c >= '0' && c <= '7' && i + 2 < s.size()) {
        out += char(((c - '0') << 6) | ((s[i + 1] - '0') << 3) | (s[i + 2] - '0'));
        i += 2;
      } else if (c == '^' && i + 1 < s.size()) {
        out += char(s[++i] == '?' ? 0x7f : s[i] & 0x1f);
      } else if (c == 'M' && i + 2 < s.size()) {
        char m = s[i + 2];
        out += char(0x80 | (s[i + 1] == '^' ? (m == '?' ? 0x7f : m & 0x1f) : m));
        i += 2;
      } else {
        out += c;
      }
    }
    return out;
  }
  std::string path_;
  int fd_ = -1;
};

enum Compiled { kOk, kIncomplete, kSyntaxError };

// Compiles one statement; on success pushes the function, else sets *msg. An expression (or
// `=expr`, the Lua 5.1 REPL's spelling) becomes `return select(1, expr)`: its values print, and
// unlike `return expr` a call in it is no tail call, whose vanished frame would leave an error
// without the user's line. first_line pads the chunk so that line numbers are the input's.
Compiled compile(lua_State* L, const std::string& code, int first_line, std::string* msg) {
  bool eq = code[0] == '=';
  std::string expr = eq ? code.substr(1) : code;
  auto load = [&](const std::string& s) { return luaL_loadbuffer(L, s.data(), s.size(), "=stdin") == 0; };
  // The source is picked by compiling without the padding (cheap), then compiled once with it.
  std::string src;
  if (load("return " + expr)) {
    lua_pop(L, 1);
    // `return E` parses, so `select(1, E)` holds the same expression list (else keep `return E`:
    // a trailing ';' parses only there)
    src = "return select(1, " + expr + "\n)";
    bool ok = load(src);
    lua_pop(L, 1);
    if (!ok) src = "return " + expr;
  } else {
    lua_pop(L, 1);
    src = eq ? "return " + expr : code;
  }
  if (load(std::string(size_t(first_line - 1), '\n') + src)) return kOk;
  *msg = lua_tostring(L, -1);
  lua_pop(L, 1);
  size_t len = msg->size();
  if (len >= 7 && msg->compare(len - 7, 7, "'<eof>'") == 0) return kIncomplete;  // ended too early
  return kSyntaxError;
}

// Runs the compiled statement on top of the stack and prints its results; false if it failed.
bool execute(lua_State* L, bool interactive) {
  int base = lua_gettop(L) - 1;
  set_entry_chunk(L);
  std::string err;
  bool ok;
  if (interactive) {
    luaJIT_setmode(L, -1, LUAJIT_MODE_ALLFUNC | LUAJIT_MODE_OFF);  // interruptible: see the header
    *g_interrupt = 0;
    g_hook_pending = 0;
    g_noted = 0;
    g_pressed = 0;
    g_running = 1;
    block_sigint(false);
    ok = pcall_traceback(L, 0, LUA_MULTRET, &err);
    block_sigint(true);
    g_running = 0;
    lua_sethook(L, nullptr, 0, 0);
    *g_interrupt = 0;
    g_hook_pending = 0;
    if (g_pressed) std::fputc('\n', stderr);  // end the line the terminal's ^C echo began
  } else {
    ok = pcall_traceback(L, 0, LUA_MULTRET, &err);
  }
  clear_entry_chunk(L);
  if (!ok) {
    if (!g_exit_requested) std::fprintf(stderr, "%s\n", err.c_str());
    std::fflush(stderr);
    return g_exit_requested;
  }
  int nres = lua_gettop(L) - base;
  if (nres > 0 && !g_exit_requested) {
    if (repl_call(L, "show", nres) && lua_isstring(L, -1)) std::printf("%s\n", lua_tostring(L, -1));
  }
  lua_settop(L, base);
  std::fflush(stdout);
  return true;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

void set_entry_chunk(lua_State* L) {
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "moonflow.entry");
}

void clear_entry_chunk(lua_State* L) {
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "moonflow.entry");
}

int run_repl(lua_State* L) {
  g_L = L;
  g_main_thread = pthread_self();
  g_interrupt = mf_interrupt_flag();
  g_exit_requested = false;
  for (const char* name : {"exit", "quit"}) {
    lua_pushcfunction(L, l_exit);
    lua_setglobal(L, name);
  }
  bool tty = isatty(0);
  History hist;
  struct sigaction old_int;
  if (tty) {
    rl_readline_name = const_cast<char*>("moonflow");
    rl_catch_signals = 0;  // before libedit initialises: we own SIGINT
    rl_getc_function = read_key;
    rl_attempted_completion_function = complete;
    rl_completion_append_character = '\0';
    rl_basic_word_break_characters = const_cast<char*>(" \t\n\"\\'`@$><=;|&{(,+-*/");
    block_sigint(true);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: pselect must return EINTR
    sigaction(SIGINT, &sa, &old_int);
    hist.open();
    lua_getglobal(L, "mf");
    lua_getfield(L, -1, "_VERSION");
    std::printf("moonflow %s  (help() for help; exit() or Ctrl-D to quit)\n", lua_tostring(L, -1));
    lua_pop(L, 2);
  }
  std::string buffer, msg;
  int line_no = 0, first_line = 1;
  bool failed = false;
  while (!g_exit_requested) {
    std::string line;
    if (tty) {
      g_line_cancelled = false;
      char* l = readline(buffer.empty() ? "mf> " : "..> ");
      if (!l) break;
      line = l;
      std::free(l);
      if (g_line_cancelled) {  // Ctrl-C: drop the line and any unfinished statement
        buffer.clear();
        continue;
      }
      if (!blank(line)) hist.append(line);
    } else if (!std::getline(std::cin, line)) {
      break;
    }
    ++line_no;
    if (buffer.empty()) {
      if (blank(line)) continue;
      first_line = line_no;
    }
    buffer += buffer.empty() ? line : "\n" + line;
    Compiled st = compile(L, buffer, tty ? 1 : first_line, &msg);
    if (st == kIncomplete) continue;
    if (st == kSyntaxError) {
      std::fprintf(stderr, "%s\n", msg.c_str());
      std::fflush(stderr);
      failed = true;
    } else if (!execute(L, tty)) {
      failed = true;
    }
    buffer.clear();
  }
  int status = 0;
  if (g_exit_requested) {
    status = g_exit_code;
  } else {
    if (!buffer.empty()) {  // input ended inside a statement
      std::fprintf(stderr, "%s\nmoonflow: input ended inside an unfinished statement (line %d)\n", msg.c_str(),
                   first_line);
      failed = true;
    }
    if (!tty && failed) status = 1;
  }
  if (tty) {
    if (!g_exit_requested) std::printf("\n");
    sigaction(SIGINT, &old_int, nullptr);
    block_sigint(false);
  }
  std::fflush(stdout);
  return status;
}

}  // namespace mf
