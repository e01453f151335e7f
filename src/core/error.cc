// mf::Error, and the thread-local storage for the last error raised through the C ABI.
#include "error.h"

#include <algorithm>

#include "dtype.h"

namespace mf {

Error::Error(const std::string& message, const std::string& traceback)
    : std::runtime_error(traceback.empty() ? message : message + "\n" + traceback),
      message_(message),
      traceback_(traceback) {}
Error::~Error() = default;

static thread_local std::string g_last_error;

void set_last_error(const std::string& msg) { g_last_error = msg; }
const char* last_error() { return g_last_error.c_str(); }

int dtype_from_name(const std::string& name) {
  if (name == "float32" || name == "float") return MF_FLOAT32;
  if (name == "float64" || name == "double") return MF_FLOAT64;
  if (name == "int32" || name == "int") return MF_INT32;
  if (name == "int64" || name == "long") return MF_INT64;
  if (name == "uint8" || name == "byte") return MF_UINT8;
  fail("unknown dtype '", name, "'; expected one of float32, float64, int32, int64, uint8");
}

int promote_types(int a, int b) {
  if (a == b) return a;
  bool fa = dtype_is_float(a), fb = dtype_is_float(b);
  if (fa && fb) return MF_FLOAT64;
  if (fa) return a;
  if (fb) return b;
  // both integer: the wider one; uint8 mixes with a signed type as that type
  auto rank = [](int d) { return d == MF_UINT8 ? 0 : d == MF_INT32 ? 1 : 2; };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace mf
