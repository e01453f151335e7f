// The C boundary's exception classification (guard.h), the last status beside mf_last_error(), and
// the test-only fault injection behind mf_test_inject.
#include "guard.h"

#include <new>
#include <stdexcept>

#include "../core/allocator.h"
#include "../core/error.h"

namespace mf {

namespace {

thread_local int t_last_status = MF_OK;
thread_local int t_injected = 0;  // the armed fault kind of this thread (MF_INJECT_*), 0 for none

}  // namespace

std::atomic<int> g_injections_armed{0};

Failure current_failure(const char* where, bool from_host) {
  try {
    throw;
  } catch (const OutOfMemory& e) {
    return {MF_ERR_MEMORY, e.what()};
  } catch (const std::bad_alloc&) {
    return {MF_ERR_MEMORY, std::string("out of memory (in ") + where + "; size not known)"};
  } catch (const Error& e) {
    return {MF_ERR_ARG, e.what()};
  } catch (const std::exception& e) {
    if (from_host) return {MF_ERR_INTERNAL, e.what()};
    return {MF_ERR_INTERNAL, std::string("internal error in ") + where + ": " + e.what()};
  } catch (...) {
    if (from_host) return {MF_ERR_INTERNAL, "unknown C++ exception"};
    return {MF_ERR_INTERNAL, std::string("internal error in ") + where + ": unknown exception"};
  }
}

int record_current_failure(const char* where) noexcept {
  try {
    Failure f = current_failure(where);
    set_last_error(f.message);
    t_last_status = f.status;
  } catch (...) {  // no memory left even for the message
    try {
      set_last_error("out of memory");
    } catch (...) {
    }
    t_last_status = MF_ERR_MEMORY;
  }
  return t_last_status;
}

void throw_injected() {
  int kind = t_injected;
  if (!kind) return;  // armed on another thread
  t_injected = 0;
  g_injections_armed.fetch_sub(1, std::memory_order_relaxed);
  switch (kind) {
    case MF_INJECT_ERROR: fail("injected error");
    case MF_INJECT_OUT_OF_MEMORY:
      throw OutOfMemory("out of memory: 123456789 bytes asked (injected)", 123456789);
    case MF_INJECT_BAD_ALLOC: throw std::bad_alloc();
    case MF_INJECT_STD_EXCEPTION: throw std::logic_error("injected std::logic_error");
    default: throw 42;  // MF_INJECT_UNKNOWN: not a std::exception at all
  }
}

}  // namespace mf

extern "C" {

int mf_last_status(void) { return mf::t_last_status; }

// Not through guard(): arming must not fire a fault armed before.
int mf_test_inject(int32_t kind) {
  if (kind < MF_INJECT_NONE || kind > MF_INJECT_UNKNOWN) {
    try {
      mf::fail("mf_test_inject: kind ", kind, " is not an mf_inject_kind (0..", int(MF_INJECT_UNKNOWN), ")");
    } catch (...) {
      return mf::record_current_failure(__func__);
    }
  }
  int was = mf::t_injected;
  mf::t_injected = kind;
  if (!was && kind) mf::g_injections_armed.fetch_add(1, std::memory_order_relaxed);
  if (was && !kind) mf::g_injections_armed.fetch_sub(1, std::memory_order_relaxed);
  return MF_OK;
}

}  // extern "C"
