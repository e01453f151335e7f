// The op test harness (tests/ops/harness.lua) driven by Catch2: one section per registered op and
// one nested section per case, so `mf_tests "ops: every case" -c matmul` runs the matmul cases.
#include <lua.hpp>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "lua/state.h"

namespace {

// One Lua state with moonflow and the harness loaded, shared by every section (Catch2 re-enters
// the test body once per section); lua_close runs at exit.
class Harness {
 public:
  Harness() : L_(mf::new_lua_state()) {
    std::string err;
    if (luaL_loadfile(L_, MF_SOURCE_DIR "/tests/ops/harness.lua") != 0) {
      err = lua_tostring(L_, -1);
      lua_close(L_);
      throw std::runtime_error(err);
    }
    lua_pushstring(L_, MF_SOURCE_DIR "/tests/ops");
    if (!mf::pcall_traceback(L_, 1, 1, &err)) {
      lua_close(L_);
      throw std::runtime_error("loading tests/ops/harness.lua failed: " + err);
    }
    ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
  }
  ~Harness() { lua_close(L_); }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // H.<fn>(arg): a list of strings for list functions.
  std::vector<std::string> list(const char* fn, const std::string* arg = nullptr) {
    call(fn, arg);
    std::vector<std::string> out;
    if (lua_istable(L_, -1)) {
      for (int i = 1;; ++i) {
        lua_rawgeti(L_, -1, i);
        if (lua_isnil(L_, -1)) {
          lua_pop(L_, 1);
          break;
        }
        out.emplace_back(lua_tostring(L_, -1));
        lua_pop(L_, 1);
      }
    }
    lua_pop(L_, 1);
    return out;
  }

  // H.<fn>(arg) for check functions: "" when it returned nil, else its message.
  std::string message(const char* fn, const std::string* arg = nullptr) {
    call(fn, arg);
    std::string out = lua_isnil(L_, -1) ? "" : lua_tostring(L_, -1);
    lua_pop(L_, 1);
    return out;
  }

 private:
  void call(const char* fn, const std::string* arg) {
    lua_rawgeti(L_, LUA_REGISTRYINDEX, ref_);
    lua_getfield(L_, -1, fn);
    lua_remove(L_, -2);
    if (arg) lua_pushlstring(L_, arg->data(), arg->size());
    std::string err;
    if (!mf::pcall_traceback(L_, arg ? 1 : 0, 1, &err)) lua_pushstring(L_, ("harness error: " + err).c_str());
  }

  lua_State* L_;
  int ref_ = LUA_NOREF;
};

Harness& harness() {
  static Harness h;
  return h;
}

}  // namespace

TEST_CASE("ops: every case", "[ops]") {
  static const std::vector<std::string> ops = harness().list("op_names");
  auto op = GENERATE(from_range(ops));
  DYNAMIC_SECTION(op) {
    std::vector<std::string> cases = harness().list("cases_of", &op);
    if (cases.empty()) FAIL_CHECK(op << ": no case in tests/ops/cases.lua");
    for (const std::string& name : cases) {
      DYNAMIC_SECTION(name) {
        std::string err = harness().message("run_case", &name);
        if (err.empty()) SUCCEED(name);
        else FAIL_CHECK(err);
      }
    }
  }
}

TEST_CASE("ops: every op has a case and docs", "[ops]") {
  std::string err = harness().message("check_coverage");
  INFO(err);
  CHECK(err.empty());
}
