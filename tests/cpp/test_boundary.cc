// The C boundary's one wrapper (src/lua/guard.h): every kind of exception, injected through
// mf_test_inject into entries of each return style, comes back as its status and message; real
// allocation failures come back as MF_ERR_MEMORY naming the bytes; every extern "C" entry in
// src/lua runs through the wrapper; an engine survives each kind.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <moonflow/engine.hpp>

#include "lua/capi.h"
#include "op/registry.h"

using Catch::Contains;

namespace {

// One entry and how to call it: the status it reports (the return value of a status entry, else
// mf_last_status() after a NULL or -1 result, MF_OK after a good one).
struct Entry {
  const char* name;
  std::function<int()> call;
};

int status_of_value(bool failed) { return failed ? mf_last_status() : MF_OK; }

std::vector<Entry> entries_of_each_style() {
  return {
      {"mf_memory_stats_get",  // returns a status
       [] {
         mf_memory_stats s{};
         return mf_memory_stats_get(MF_CPU, &s);
       }},
      {"mf_tensor_init",  // returns a status; allocates
       [] {
         mf_tensor t{};
         int64_t shape[2] = {2, 3};
         int st = mf_tensor_init(&t, 2, shape, MF_FLOAT32, MF_CPU);
         if (st == MF_OK) mf_tensor_release(&t);
         return st;
       }},
      {"mf_graph_new",  // returns a handle or NULL
       [] {
         mf_graph* g = mf_graph_new();
         mf_graph_free(g);
         return status_of_value(g == nullptr);
       }},
      {"mf_op_find",  // returns an index or -1
       [] { return status_of_value(mf_op_find("matmul") < 0); }},
      {"mf_op_doc",  // a registry field: a string or NULL
       [] { return status_of_value(mf_op_doc(0) == nullptr); }},
  };
}

struct Kind {
  int kind;
  int status;
  std::function<std::string(const std::string& entry)> message;  // the exact text expected
};

std::vector<Kind> kinds() {
  return {
      {MF_INJECT_ERROR, MF_ERR_ARG, [](const std::string&) { return std::string("injected error"); }},
      {MF_INJECT_OUT_OF_MEMORY, MF_ERR_MEMORY,
       [](const std::string&) { return std::string("out of memory: 123456789 bytes asked (injected)"); }},
      {MF_INJECT_BAD_ALLOC, MF_ERR_MEMORY,
       [](const std::string& e) { return "out of memory (in " + e + "; size not known)"; }},
      {MF_INJECT_STD_EXCEPTION, MF_ERR_INTERNAL,
       [](const std::string& e) { return "internal error in " + e + ": injected std::logic_error"; }},
      {MF_INJECT_UNKNOWN, MF_ERR_INTERNAL,
       [](const std::string& e) { return "internal error in " + e + ": unknown exception"; }},
  };
}

}  // namespace

TEST_CASE("boundary: each injected kind maps to its status and message, in every return style", "[boundary]") {
  mf::register_builtin_ops();
  for (const Entry& e : entries_of_each_style()) {
    int before = e.call();
    INFO(e.name << ": " << mf_last_error());
    REQUIRE(before == MF_OK);  // works before
    for (const Kind& k : kinds()) {
      INFO(e.name << ", kind " << k.kind);
      REQUIRE(mf_test_inject(k.kind) == MF_OK);
      int st = MF_OK;
      REQUIRE_NOTHROW(st = e.call());
      CHECK(st == k.status);
      CHECK(mf_last_status() == k.status);
      CHECK(std::string(mf_last_error()) == k.message(e.name));
      CHECK(e.call() == MF_OK);  // one shot: the next call works again
    }
  }
}

TEST_CASE("boundary: injection is per thread, and NONE disarms", "[boundary]") {
  mf::register_builtin_ops();
  REQUIRE(mf_test_inject(MF_INJECT_ERROR) == MF_OK);
  int other = -2;
  std::thread([&] { other = mf_op_find("matmul"); }).join();
  CHECK(other >= 0);  // another thread's call is untouched
  CHECK(mf_op_find("matmul") == -1);
  CHECK(mf_last_status() == MF_ERR_ARG);
  CHECK(mf_op_find("matmul") >= 0);

  REQUIRE(mf_test_inject(MF_INJECT_BAD_ALLOC) == MF_OK);
  REQUIRE(mf_test_inject(MF_INJECT_NONE) == MF_OK);
  CHECK(mf_op_find("matmul") >= 0);

  CHECK(mf_test_inject(99) == MF_ERR_ARG);
  CHECK_THAT(std::string(mf_last_error()), Contains("kind 99"));
  CHECK(mf_op_find("matmul") >= 0);  // a refused kind arms nothing
}

TEST_CASE("boundary: a real allocation failure is MF_ERR_MEMORY naming the bytes", "[boundary]") {
  mf_tensor t{};
  // 4e15 bytes: beyond the 2^47-byte address space of x86-64 user processes, so no overcommit
  // setting lets the system grant it
  int64_t shape[2] = {100000000, 10000000};
  CHECK(mf_tensor_init(&t, 2, shape, MF_FLOAT32, MF_CPU) == MF_ERR_MEMORY);
  std::string msg = mf_last_error();
  CHECK_THAT(msg, Contains("out of memory") && Contains("4000000000000000 bytes") &&
                      Contains("100000000x10000000") && Contains("float32"));
  CHECK(t.store == nullptr);

  // a byte count past 2^62 is refused before asking the system, with the same status
  int64_t huge[2] = {1000000000, 1000000000};  // 8e18 bytes of float64
  CHECK(mf_tensor_init(&t, 2, huge, MF_FLOAT64, MF_CPU) == MF_ERR_MEMORY);
  CHECK_THAT(std::string(mf_last_error()), Contains("out of memory") && Contains("more than can be addressed"));

  int64_t ok[1] = {4};
  REQUIRE(mf_tensor_init(&t, 1, ok, MF_FLOAT32, MF_CPU) == MF_OK);
  mf_tensor_release(&t);
}

TEST_CASE("boundary: an engine turns each kind into a Lua error and stays usable", "[boundary]") {
  mf::Engine engine;
  for (const Kind& k : kinds()) {
    INFO("kind " << k.kind);
    // mf.Graph() calls mf_graph_new first; `local g` keeps the call from being a tail call, so the
    // error names the line. Graph mode loads on first use (lua/moonflow/init.lua), calling other
    // entries: `local _ = mf.Graph` loads it before the fault is armed
    std::string code = "local C = require 'moonflow.ffi_abi'; local _ = mf.Graph; C.mf_test_inject(" + std::to_string(k.kind) +
                       "); local g = mf.Graph(); return g";
    try {
      engine.eval(code, "inject.lua");
      FAIL("expected an mf::Error");
    } catch (const mf::Error& e) {
      CHECK_THAT(e.message(), Contains("inject.lua:1:") && Contains(k.message("mf_graph_new")));
    }
    CHECK(engine.eval("return mf.ones(3):sum():item()").at(0).number() == 3);
  }
  // a host function's bad_alloc becomes a Lua error worded as an out-of-memory failure
  engine.register_function("starved", [](const std::vector<mf::Value>&) -> mf::Values { throw std::bad_alloc(); });
  mf::Values r = engine.eval("local ok, err = pcall(starved) return ok, err");
  CHECK(r.at(0).boolean() == false);
  CHECK(r.at(1).string() == "starved: out of memory (in starved; size not known)");
  CHECK(engine.eval("return mf.ones(2):sum():item()").at(0).number() == 2);
}

// Every extern "C" function defined in src/lua/*.cc runs its body through guard() or guard_value()
// (directly, through MF_OP_FIELD, or by returning another entry's result), unless it is one of the
// entries that only read a field, a constant or a clock.
TEST_CASE("boundary: every extern \"C\" entry in src/lua runs through the wrapper", "[boundary]") {
  const std::set<std::string> trivial = {
      "mf_last_error", "mf_last_status", "mf_interrupt_flag", "mf_version", "mf_clock", "mf_tensor_nbytes",
      "mf_tensor_same_layout",
      "mf_storage_refcount", "mf_storage_version", "mf_storage_bump", "mf_dtype_size", "mf_get_num_threads",
      "mf_params_free", "mf_params_canonical",
      "mf_params_count", "mf_params_key", "mf_params_kind", "mf_params_number", "mf_params_string",
      "mf_params_list_len", "mf_params_list_item", "mf_rng_free", "mf_rng_seed", "mf_rng_get_seed",
      "mf_rng_get_offset", "mf_rng_set_offset", "mf_fused_free", "mf_graph_free", "mf_graph_size",
      "mf_test_inject", "mf_device_count"};
  // a definition starts at column 0: return type, name, '('; its body ends at a '}' in column 0
  // or on its own first line
  const std::regex def_re(R"(^[A-Za-z_][\w ]*[\w*]\s*\*?\s*(mf_\w+)\s*\()");
  int seen = 0;
  for (const char* file : {"capi.cc", "capi_graph.cc", "guard.cc"}) {
    std::ifstream in(std::string(MF_SOURCE_DIR) + "/src/lua/" + file);
    REQUIRE(in.good());
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_search(lines[i], m, def_re)) continue;
      std::string name = m[1];
      if (lines[i].back() == ';') continue;  // a declaration
      std::string body;
      size_t j = i;
      for (; j < lines.size(); ++j) {
        body += lines[j] + "\n";
        if (j == i && lines[j].find('{') != std::string::npos && lines[j].back() == '}') break;
        if (j > i && lines[j].rfind('}', 0) == 0) break;
      }
      ++seen;
      INFO(file << ": " << name);
      bool wrapped = body.find("guard(") != std::string::npos || body.find("guard_value(") != std::string::npos ||
                     body.find("MF_OP_FIELD(") != std::string::npos ||
                     std::regex_search(body, std::regex(R"(return mf_\w+\()"));
      CHECK((wrapped || trivial.count(name)));
      i = j;
    }
  }
  CHECK(seen > 60);  // the scan found the entries
}
