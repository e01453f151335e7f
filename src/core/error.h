// Errors: C++ code throws mf::Error; the C ABI catches it and stores the message for mf_last_error().
#pragma once
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <moonflow/error.hpp>  // mf::Error, the public exception type

namespace mf {

namespace detail {
// One argument of fail: a floating NaN reads "nan" whatever its sign bit (0/0 gives a negative NaN on
// x86, which the C++ stream prints as "-nan").
template <typename T>
void put_arg(std::ostream& os, const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) {
      os << "nan";
      return;
    }
  }
  os << v;
}
}  // namespace detail

// fail("matmul: a is ", shape_str(a), ...) concatenates its arguments into one message and throws.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (detail::put_arg(os, args), ...);
  throw Error(os.str());
}

// Thread-local last-error text behind mf_last_error().
void set_last_error(const std::string& msg);
const char* last_error();

}  // namespace mf
