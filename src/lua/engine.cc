// mf::Engine: a Lua state driven through the Lua C API alone (lua_cpcall, lua_pcall with the
// traceback handler), never through the FFI, so a registered C++ function may call into Lua.
#include <moonflow/engine.hpp>

#include <lua.hpp>

#include <exception>
#include <mutex>
#include <new>
#include <type_traits>

#include "../core/error.h"
#include "../core/tensor.h"
#include "../core/threads.h"
#include "../kernels/cpu/kernels.h"
#include "guard.h"
#include "state.h"

namespace mf {

namespace {

constexpr int kTypeCdata = 10;  // what LuaJIT's lua_type() says for cdata (lua.h has no name for it)
const char* const kFunctionMeta = "moonflow.host_function";

// pcall_traceback's text is the message, a newline and the traceback it appended.
Error lua_failure(const std::string& text) {
  size_t at = text.rfind("\nstack traceback:");
  if (at == std::string::npos) return Error(text);
  return Error(text.substr(0, at), text.substr(at + 1));
}

int abs_index(lua_State* L, int i) { return i > 0 || i <= LUA_REGISTRYINDEX ? i : lua_gettop(L) + i + 1; }

// Runs body(L) inside lua_cpcall, so a Lua error raised by a raw C API call in it (out of memory) is
// caught rather than fatal; body's C++ exceptions are caught inside and rethrown here, once Lua has
// unwound: an mf::Error as it is, any other std::exception as the mf::Error the C boundary's
// classification (guard.h) words for it. Whatever body leaves on the stack is dropped.
template <typename F>
void protected_run(lua_State* L, F&& body) {
  using Body = std::remove_reference_t<F>;
  struct Ctx {
    Body* body;
    std::exception_ptr error;
  } ctx{&body, nullptr};
  lua_CFunction run = [](lua_State* L) -> int {
    Ctx* c = static_cast<Ctx*>(lua_touserdata(L, 1));
    lua_pop(L, 1);
    try {
      (*c->body)(L);
    } catch (const Error&) {
      c->error = std::current_exception();
    } catch (const std::exception&) {  // not catch (...): a Lua error unwinding must reach lua_cpcall
      c->error = std::make_exception_ptr(Error(current_failure("the engine").message));
    }
    return 0;
  };
  int st = lua_cpcall(L, run, &ctx);
  if (ctx.error) std::rethrow_exception(ctx.error);
  if (st != 0) {
    const char* m = lua_tostring(L, -1);
    std::string msg = m ? m : "(error object is not a string)";
    lua_pop(L, 1);
    throw Error(st == LUA_ERRMEM ? "out of memory in the Lua state: " + msg : msg);
  }
}

}  // namespace

struct Engine::Impl {
  lua_State* L = nullptr;
  Mode mode = Mode::kThreadLocal;
  std::recursive_mutex mu;  // kLocking; recursive so that the re-entry check below can report
  int in_callback = 0;      // > 0 while a registered function runs
  int ref_new_tensor = LUA_NOREF, ref_cdata_kind = LUA_NOREF, ref_get = LUA_NOREF, ref_set = LUA_NOREF,
      ref_callee = LUA_NOREF;

  ~Impl() {
    if (L) lua_close(L);
  }

  void push_ref(lua_State* L, int ref) const { lua_rawgeti(L, LUA_REGISTRYINDEX, ref); }

  // Pushes a new Lua tensor sharing t's storage: an empty cdata from the helper, filled in C++.
  void push_tensor(lua_State* L, const Tensor& t, const std::string& what) const {
    if (!t.defined()) fail(what, " is an undefined tensor");
    push_ref(L, ref_new_tensor);
    std::string err;
    if (!pcall_traceback(L, 0, 1, &err)) throw lua_failure(err);
    auto* dst = static_cast<mf_tensor*>(const_cast<void*>(lua_topointer(L, -1)));
    if (!dst) fail(what, ": could not make a Lua tensor");
    tensor_share(*dst, *t.handle());
    dst->autograd = 0;  // the fresh Lua tensor has no autograd state (src/core/types.h)
  }

  void push_value(lua_State* L, const Value& v, const std::string& what) const {
    switch (v.type()) {
      case Value::Type::kNil: lua_pushnil(L); break;
      case Value::Type::kTensor: push_tensor(L, v.tensor(), what); break;
      case Value::Type::kNumber: lua_pushnumber(L, v.number()); break;
      case Value::Type::kString: lua_pushlstring(L, v.string().data(), v.string().size()); break;
      case Value::Type::kBoolean: lua_pushboolean(L, v.boolean()); break;
    }
  }

  // A C++ handle sharing a Lua tensor's storage (a copy only for a storage-less borrowed view).
  static Tensor tensor_from_lua(const mf_tensor& t) {
    if (t.store || t.count == 0) return Tensor::from_handle(&t);
    mf_tensor tmp{};
    tensor_init(tmp, shape_of(t), t.dtype_id, MF_CPU);
    copy_cpu(tmp, t);
    Tensor out = Tensor::from_handle(&tmp);
    tensor_release(tmp);
    return out;
  }

  Value to_value(lua_State* L, int idx, const std::string& what) const {
    idx = abs_index(L, idx);
    switch (lua_type(L, idx)) {
      case LUA_TNONE:
      case LUA_TNIL: return Value();
      case LUA_TBOOLEAN: return Value(lua_toboolean(L, idx) != 0);
      case LUA_TNUMBER: return Value(double(lua_tonumber(L, idx)));
      case LUA_TSTRING: {
        size_t n = 0;
        const char* s = lua_tolstring(L, idx, &n);
        return Value(std::string(s, n));
      }
      case kTypeCdata: {
        push_ref(L, ref_cdata_kind);
        lua_pushvalue(L, idx);
        std::string err;
        if (!pcall_traceback(L, 1, 1, &err)) throw lua_failure(err);
        int kind = lua_type(L, -1);
        double num = kind == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
        lua_pop(L, 1);
        if (kind == LUA_TBOOLEAN) return Value(tensor_from_lua(*static_cast<const mf_tensor*>(lua_topointer(L, idx))));
        if (kind == LUA_TNUMBER) return Value(num);
        fail(what, " is a cdata that is neither a tensor nor a number");
      }
      default:
        fail(what, " is a ", luaL_typename(L, idx), "; expected a tensor, number, string, boolean or nil");
    }
  }

  // Calls the function (and nargs arguments) on top of the stack; returns every result.
  Values pcall_results(lua_State* L, int nargs, const std::string& what) const {
    int base = lua_gettop(L) - nargs - 1;
    std::string err;
    if (!pcall_traceback(L, nargs, LUA_MULTRET, &err)) throw lua_failure(err);
    Values out;
    int top = lua_gettop(L);
    out.reserve(size_t(top - base));
    for (int i = base + 1; i <= top; ++i) out.push_back(to_value(L, i, what + ": result " + std::to_string(i - base)));
    return out;
  }
};

namespace {

// Checks and sets up every public call: the engine's lock in kLocking mode, the re-entry rule for
// registered functions, and the process-wide OpenMP thread count on this thread.
class Entry {
 public:
  Entry(Engine::Impl* impl, const char* what) : lock_(impl ? &impl->mu : nullptr, impl) {
    if (!impl) fail(what, ": the engine was moved from");
    if (impl->in_callback)
      fail(what, ": called from a function registered with this engine; a registered function must not "
                 "call its own engine");
    adopt_num_threads();
  }

 private:
  struct Lock {
    Lock(std::recursive_mutex* mu, Engine::Impl* impl)
        : mu_(impl && impl->mode == Engine::Mode::kLocking ? mu : nullptr) {
      if (mu_) mu_->lock();
    }
    ~Lock() {
      if (mu_) mu_->unlock();
    }
    std::recursive_mutex* mu_;
  } lock_;
};

int gc_function(lua_State* L) {
  using Fn = Engine::Function;
  static_cast<Fn*>(luaL_checkudata(L, 1, kFunctionMeta))->~Fn();
  return 0;
}

// The body of a registered function's trampoline. Returns the number of results pushed, or -1
// with the error message pushed; it returns (destroying every C++ local) before lua_error runs.
int call_host(lua_State* L, Engine::Function& fn, Engine::Impl& impl, const char* name) {
  std::string err;
  std::vector<Value> args;
  Values out;
  try {
    int n = lua_gettop(L);
    args.reserve(size_t(n));
    for (int i = 1; i <= n; ++i) args.push_back(impl.to_value(L, i, std::string(name) + ": argument " + std::to_string(i)));
  } catch (const std::exception&) {
    err = current_failure(name).message;
  }
  if (err.empty()) {
    struct InCallback {  // the re-entry check in Entry reads it
      explicit InCallback(Engine::Impl& i) : impl(i) { ++impl.in_callback; }
      ~InCallback() { --impl.in_callback; }
      Engine::Impl& impl;
    } guard(impl);
    try {
      out = fn(args);
    } catch (const Error& e) {
      err = std::string(name) + ": " + e.what();
    } catch (...) {  // fn is the host's code, never Lua's: nothing here is a Lua error unwinding
      err = std::string(name) + ": " + current_failure(name, true).message;
    }
  }
  if (err.empty()) {
    try {
      if (!lua_checkstack(L, int(out.size()) + 8)) fail(name, ": too many results (", out.size(), ")");
      int base = lua_gettop(L);
      for (size_t i = 0; i < out.size(); ++i) impl.push_value(L, out[i], std::string(name) + ": result " + std::to_string(i + 1));
      return lua_gettop(L) - base;
    } catch (const std::exception&) {
      err = current_failure(name).message;
    }
  }
  luaL_where(L, 1);
  lua_pushlstring(L, err.data(), err.size());
  lua_concat(L, 2);
  return -1;
}

int trampoline(lua_State* L) {
  auto* fn = static_cast<Engine::Function*>(lua_touserdata(L, lua_upvalueindex(1)));
  auto* impl = static_cast<Engine::Impl*>(lua_touserdata(L, lua_upvalueindex(2)));
  const char* name = lua_tostring(L, lua_upvalueindex(3));
  int n = call_host(L, *fn, *impl, name);
  if (n < 0) return lua_error(L);  // no C++ object is alive in this frame
  return n;
}

}  // namespace

// -- Value, Values -----------------------------------------------------------------------------
const char* Value::type_name() const noexcept {
  static const char* const names[] = {"nil", "tensor", "number", "string", "boolean"};
  return names[v_.index()];
}
const Tensor& Value::tensor() const {
  if (!is_tensor()) fail("value is a ", type_name(), "; expected a tensor");
  return std::get<Tensor>(v_);
}
double Value::number() const {
  if (!is_number()) fail("value is a ", type_name(), "; expected a number");
  return std::get<double>(v_);
}
const std::string& Value::string() const {
  if (!is_string()) fail("value is a ", type_name(), "; expected a string");
  return std::get<std::string>(v_);
}
bool Value::boolean() const {
  if (!is_boolean()) fail("value is a ", type_name(), "; expected a boolean");
  return std::get<bool>(v_);
}

std::vector<Tensor> Values::tensors() const {
  std::vector<Tensor> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) {
    if (!(*this)[i].is_tensor()) fail("result ", i + 1, " is a ", (*this)[i].type_name(), "; expected a tensor");
    out.push_back((*this)[i].tensor());
  }
  return out;
}

// -- Engine ------------------------------------------------------------------------------------
Engine::Engine(Mode mode) : impl_(new Impl) {
  impl_->mode = mode;
  impl_->L = new_lua_state();  // throws mf::Error; impl_'s destructor closes nothing yet
  Impl& im = *impl_;
  protected_run(im.L, [&](lua_State* L) {
    lua_getglobal(L, "require");
    lua_pushstring(L, "moonflow.embed");
    std::string err;
    if (!pcall_traceback(L, 1, 1, &err)) throw lua_failure(err);
    auto ref = [&](const char* field) {
      lua_getfield(L, -1, field);
      return luaL_ref(L, LUA_REGISTRYINDEX);
    };
    im.ref_new_tensor = ref("new_tensor");
    im.ref_cdata_kind = ref("cdata_kind");
    im.ref_get = ref("get");
    im.ref_set = ref("set");
    im.ref_callee = ref("callee");
  });
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

Engine::Mode Engine::mode() const noexcept { return impl_ ? impl_->mode : Mode::kThreadLocal; }
lua_State* Engine::lua_state() noexcept { return impl_ ? impl_->L : nullptr; }

Values Engine::eval(const std::string& code, const std::string& chunkname) {
  Entry entry(impl_.get(), "eval");
  Values out;
  std::string name = !chunkname.empty() && (chunkname[0] == '=' || chunkname[0] == '@') ? chunkname : "=" + chunkname;
  protected_run(impl_->L, [&](lua_State* L) {
    if (luaL_loadbuffer(L, code.data(), code.size(), name.c_str()) != 0) throw Error(lua_tostring(L, -1));
    out = impl_->pcall_results(L, 0, "eval");
  });
  return out;
}

Values Engine::run_file(const std::string& path) {
  Entry entry(impl_.get(), "run_file");
  Values out;
  protected_run(impl_->L, [&](lua_State* L) {
    if (luaL_loadfile(L, path.c_str()) != 0) throw Error(std::string("run_file: ") + lua_tostring(L, -1));
    out = impl_->pcall_results(L, 0, "run_file " + path);
  });
  return out;
}

Values Engine::call(const std::string& function, const std::vector<Value>& args) {
  Entry entry(impl_.get(), "call");
  Values out;
  protected_run(impl_->L, [&](lua_State* L) {
    Impl& im = *impl_;
    im.push_ref(L, im.ref_callee);
    lua_pushlstring(L, function.data(), function.size());
    std::string err;
    if (!pcall_traceback(L, 1, 3, &err)) throw lua_failure(err);
    bool method = lua_toboolean(L, -2) != 0;
    lua_remove(L, -2);  // the flag; the function and self stay
    if (!method) lua_pop(L, 1);
    int nargs = int(args.size()) + (method ? 1 : 0);
    if (!lua_checkstack(L, nargs + 8)) fail("call ", function, ": too many arguments (", args.size(), ")");
    for (size_t i = 0; i < args.size(); ++i) im.push_value(L, args[i], "call " + function + ": argument " + std::to_string(i + 1));
    out = im.pcall_results(L, nargs, "call " + function);
  });
  return out;
}

Value Engine::get(const std::string& name) {
  Entry entry(impl_.get(), "get");
  Value out;
  protected_run(impl_->L, [&](lua_State* L) {
    impl_->push_ref(L, impl_->ref_get);
    lua_pushlstring(L, name.data(), name.size());
    std::string err;
    if (!pcall_traceback(L, 1, 1, &err)) throw lua_failure(err);
    out = impl_->to_value(L, -1, "get " + name);
  });
  return out;
}

void Engine::set(const std::string& name, const Value& value) {
  Entry entry(impl_.get(), "set");
  protected_run(impl_->L, [&](lua_State* L) {
    impl_->push_ref(L, impl_->ref_set);
    lua_pushlstring(L, name.data(), name.size());
    impl_->push_value(L, value, "set " + name);
    std::string err;
    if (!pcall_traceback(L, 2, 0, &err)) throw lua_failure(err);
  });
}

void Engine::register_function(const std::string& name, Function fn) {
  Entry entry(impl_.get(), "register_function");
  if (!fn) fail("register_function ", name, ": the function is empty");
  protected_run(impl_->L, [&](lua_State* L) {
    impl_->push_ref(L, impl_->ref_set);
    lua_pushlstring(L, name.data(), name.size());
    if (luaL_newmetatable(L, kFunctionMeta)) {
      lua_pushcfunction(L, gc_function);
      lua_setfield(L, -2, "__gc");
    }
    void* mem = lua_newuserdata(L, sizeof(Function));
    new (mem) Function(std::move(fn));  // std::function's move does not throw
    lua_pushvalue(L, -2);
    lua_setmetatable(L, -2);  // from here its __gc destroys it
    lua_remove(L, -2);        // the metatable
    lua_pushlightuserdata(L, impl_.get());
    lua_pushlstring(L, name.data(), name.size());
    lua_pushcclosure(L, trampoline, 3);
    std::string err;
    if (!pcall_traceback(L, 2, 0, &err)) throw lua_failure(err);
  });
}

void Engine::collect_garbage() {
  Entry entry(impl_.get(), "collect_garbage");
  // twice: LuaJIT's weak tables are not ephemerons, so the eager autograd state of a tensor that
  // died in one collection (lua/moonflow/tape.lua) becomes garbage only in the next
  protected_run(impl_->L, [](lua_State* L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_gc(L, LUA_GCCOLLECT, 0);
  });
}

const char* version() noexcept { return MF_VERSION; }

}  // namespace mf
