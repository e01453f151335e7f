// mf::Engine: one Lua state with moonflow loaded, driven from C++: run scripts, call Lua functions
// with tensors, numbers, strings and booleans, read and write globals, expose C++ functions to Lua.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "error.hpp"
#include "tensor.hpp"

struct lua_State;

namespace mf {

// A value crossing between C++ and Lua: nil, a tensor, a number, a string or a boolean. Tensors cross
// without copying (both sides share the storage); numbers are Lua numbers (double: integers beyond
// 2^53 round). Not thread safe beyond what Tensor promises.
class Value {
 public:
  using Variant = std::variant<std::monostate, Tensor, double, std::string, bool>;
  enum class Type { kNil, kTensor, kNumber, kString, kBoolean };  // the Variant's index order

  Value() noexcept = default;  // nil
  Value(std::nullptr_t) noexcept {}
  Value(Tensor t) : v_(std::move(t)) {}
  Value(bool b) : v_(b) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) { if (s) v_ = std::string(s); }  // a null pointer is nil
  Value(char* s) : Value(static_cast<const char*>(s)) {}
  // Any arithmetic type but bool becomes a number.
  template <typename N, typename = std::enable_if_t<std::is_arithmetic<N>::value && !std::is_same<N, bool>::value>>
  Value(N n) : v_(static_cast<double>(n)) {}
  template <typename P>
  Value(P*) = delete;  // no pointer becomes a boolean by accident

  Type type() const noexcept { return static_cast<Type>(v_.index()); }
  const char* type_name() const noexcept;  // "nil", "tensor", "number", "string", "boolean"
  bool is_nil() const noexcept { return type() == Type::kNil; }
  bool is_tensor() const noexcept { return type() == Type::kTensor; }
  bool is_number() const noexcept { return type() == Type::kNumber; }
  bool is_string() const noexcept { return type() == Type::kString; }
  bool is_boolean() const noexcept { return type() == Type::kBoolean; }
  // The held value; mf::Error naming both types when it holds another type.
  const Tensor& tensor() const;
  double number() const;
  const std::string& string() const;
  bool boolean() const;
  const Variant& variant() const noexcept { return v_; }
  Variant& variant() noexcept { return v_; }

 private:
  Variant v_;
};

// The results of a Lua call, in order. Converts to std::vector<Tensor> when every result is a tensor
// (mf::Error naming the first that is not).
class Values : public std::vector<Value> {
 public:
  using std::vector<Value>::vector;
  Values() = default;
  Values(std::vector<Value> v) : std::vector<Value>(std::move(v)) {}
  std::vector<Tensor> tensors() const;
  operator std::vector<Tensor>() const { return tensors(); }
};

// One Lua state with moonflow loaded (the library is compiled into libmoonflow, so no files are read).
//
// Threads: in Mode::kThreadLocal (the default) an engine is not thread safe; give each thread its own,
// or hand one between threads with your own synchronisation. In Mode::kLocking every method takes the
// engine's mutex, so any number of threads may share it (their calls run one at a time). Engines are
// independent and may run at the same time on different threads; they share the process-wide op
// registry, allocator and thread-count setting (MF_NUM_THREADS, mf.set_num_threads). So an op
// registered from Lua (mf.register_op) by one engine is visible to all, and registering the same
// name again, from any engine, fails; its kernel, and its shape rule and gradient when given as source
// strings, serve every engine, while a rule given as a Lua function stays in the registering engine.
//
// Errors: every method throws mf::Error on failure (a Lua error carries the traceback) and leaves the
// engine usable. No C++ exception crosses into Lua: a registered function's exceptions become Lua errors.
class Engine {
 public:
  enum class Mode { kThreadLocal, kLocking };
  // A C++ function callable from Lua: Lua's arguments in, results out (return {} for none).
  using Function = std::function<Values(const std::vector<Value>& args)>;

  // Creates the Lua state and loads moonflow (a few ms). Throws mf::Error.
  explicit Engine(Mode mode = Mode::kThreadLocal);
  // Closes the Lua state: everything it allocated is freed; Tensors the host still holds stay valid.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  Engine(Engine&&) noexcept;  // the moved-from engine may only be destroyed or assigned
  Engine& operator=(Engine&&) noexcept;

  // Runs a chunk of Lua code (chunkname names it in messages) and returns what it returns.
  Values eval(const std::string& code, const std::string& chunkname = "eval");
  // Runs a Lua file and returns what it returns.
  Values run_file(const std::string& path);
  // Calls the function at `function` (a global, a dotted path "a.b.f", or "a.b:m" to pass a.b as self).
  Values call(const std::string& function, const std::vector<Value>& args = {});
  // Reads a global or dotted path (nil when a table on the path is missing).
  Value get(const std::string& name);
  // Sets a global or dotted path (the tables on the path must exist).
  void set(const std::string& name, const Value& value);
  // Makes fn callable from Lua as `name` (global or dotted path). fn runs on the calling thread, under
  // the engine's lock in kLocking mode; it must not call this engine (that throws mf::Error). Whatever
  // fn throws becomes a Lua error "name: what()" that Lua code may catch with pcall.
  void register_function(const std::string& name, Function fn);
  // Runs a full Lua garbage collection (drops the tensors no Lua value refers to any more).
  void collect_garbage();
  Mode mode() const noexcept;
  // The raw state, for hosts that also use the Lua C API: use it only while no engine call runs
  // (the kLocking mutex does not cover it), and keep Lua errors inside lua_pcall.
  lua_State* lua_state() noexcept;

  struct Impl;  // opaque (src/lua/engine.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

// The library version, "0.1.0".
const char* version() noexcept;

}  // namespace mf
