// Errors: C++ code throws mf::Error; the C ABI catches it and stores the message for mf_last_error().
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

#include <moonflow/error.hpp>  // mf::Error, the public exception type

namespace mf {

// fail("matmul: a is ", shape_str(a), ...) concatenates its arguments into one message and throws.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}

// Thread-local last-error text behind mf_last_error().
void set_last_error(const std::string& msg);
const char* last_error();

}  // namespace mf
