// mf::Error: the one exception type moonflow throws to C++ callers, carrying the Lua message and,
// for errors raised while Lua code ran, the Lua traceback.
#pragma once
#include <stdexcept>
#include <string>

namespace mf {

// Thrown by every moonflow C++ API call that fails (and by the engine's internals). what() is the
// message followed by the traceback, so printing it shows both. Copyable; safe to pass between threads.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, const std::string& traceback = std::string());
  ~Error() override;
  // The error text alone, e.g. "model.lua:12: matmul: a is 4x784, b is 100x10; ...".
  const std::string& message() const noexcept { return message_; }
  // "stack traceback:\n\t..." as Lua's debug.traceback writes it; empty when the error did not come
  // from running Lua code (a syntax error found while loading, a bad argument caught in C++).
  const std::string& traceback() const noexcept { return traceback_; }

 private:
  std::string message_;
  std::string traceback_;
};

}  // namespace mf
