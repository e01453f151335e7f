// The one wrapper at the C boundary: every extern "C" entry runs its body through guard() (or
// guard_value()), which turns any exception into a status and the message mf_last_error() returns.
#pragma once
#include <cxxabi.h>

#include <atomic>
#include <string>
#include <type_traits>

#include "capi.h"

namespace mf {

// What the exception being handled means at the boundary. Call only inside a catch block.
//   mf::OutOfMemory          MF_ERR_MEMORY    its message (how many bytes were asked)
//   std::bad_alloc           MF_ERR_MEMORY    "out of memory (in <where>; size not known)"
//   mf::Error                MF_ERR_ARG       its message, unchanged (the user-facing text)
//   other std::exception     MF_ERR_INTERNAL  "internal error in <where>: <what()>"
//   anything else            MF_ERR_INTERNAL  "internal error in <where>: unknown exception"
// from_host: the exception came from the host's own code (a function registered with an engine), so
// a std::exception is worded as its what() and anything else as "unknown C++ exception", not as a
// moonflow bug.
struct Failure {
  int status;
  std::string message;
};
Failure current_failure(const char* where, bool from_host = false);

// Stores the failure for mf_last_error() / mf_last_status() and returns its status; never throws
// (an allocation failure while storing the message leaves a fixed text).
int record_current_failure(const char* where) noexcept;

// Test-only fault injection (mf_test_inject): the number of threads with an armed fault, so the
// guard's check costs one relaxed load of a global on every call and nothing more while none is.
extern std::atomic<int> g_injections_armed;
// Throws the armed fault of this thread, if it has one, and disarms it.
void throw_injected();

// Runs body() (returning void); MF_OK, or the status of what it threw. `where` names the entry in
// internal-error messages: pass __func__. Only a forced unwind (thread cancellation) passes through.
template <typename F>
int guard(const char* where, F&& body) {
  try {
    if (__builtin_expect(g_injections_armed.load(std::memory_order_relaxed) != 0, 0)) throw_injected();
    body();
    return MF_OK;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    return record_current_failure(where);
  }
}

// For entries that return a value (a handle, a count, an index): body()'s result, or on failure
// `failed` (NULL, -1) with the status and message stored as guard() stores them.
template <typename F>
std::invoke_result_t<F&> guard_value(const char* where, std::invoke_result_t<F&> failed, F&& body) {
  std::invoke_result_t<F&> out = failed;
  guard(where, [&] { out = body(); });
  return out;
}

}  // namespace mf
