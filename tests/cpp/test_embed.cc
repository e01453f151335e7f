// The C++ embedding API through its public header only: values in and out, zero-copy tensors,
// globals, registered functions, errors that leave the engine usable, and memory that stays flat.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Expects body to throw mf::Error whose message contains every one of parts; returns the error.
template <typename F>
mf::Error expect_error(F&& body, std::initializer_list<const char*> parts) {
  try {
    body();
  } catch (const mf::Error& e) {
    for (const char* p : parts) {
      INFO("message: " << e.message() << "\ntraceback: " << e.traceback());
      CHECK(e.message().find(p) != std::string::npos);
    }
    return e;
  }
  FAIL("no mf::Error thrown");
  return mf::Error("unreachable");
}

// The engine still works: a call with a tensor round-trips.
void check_usable(mf::Engine& engine) {
  std::vector<float> v{1, 2, 3};
  engine.eval("function double_sum(x) return (x * 2):sum():item() end");
  CHECK(engine.call("double_sum", {mf::Tensor::view(v.data(), {3})}).at(0).number() == 12);
}

int64_t rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return int64_t(resident) * sysconf(_SC_PAGESIZE);
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/mf_embed_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("embed: eval, get and set carry every value type", "[embed]") {
  mf::Engine engine;
  mf::Values r = engine.eval("return 1 + 2, 'moon' .. 'flow', true, nil, mf.ones(2, 3)");
  REQUIRE(r.size() == 5);
  CHECK(r[0].number() == 3);
  CHECK(r[1].string() == "moonflow");
  CHECK(r[2].boolean() == true);
  CHECK(r[3].is_nil());
  CHECK(r[4].tensor().shape() == mf::Shape{2, 3});
  CHECK(r[4].tensor().to_vector<float>() == std::vector<float>(6, 1.0f));

  engine.set("n", 42);
  engine.set("s", std::string("a\0b", 3));  // strings are byte strings
  engine.set("flag", false);
  CHECK(engine.eval("return n + 1").at(0).number() == 43);
  CHECK(engine.eval("return #s").at(0).number() == 3);
  CHECK(engine.get("flag").boolean() == false);
  CHECK(engine.get("nosuch").is_nil());
  CHECK(engine.get("nosuch.deeper").is_nil());
  CHECK(engine.get("mf._VERSION").string() == mf::version());
  engine.eval("config = {model = {}}");
  engine.set("config.model.width", 128);
  CHECK(engine.get("config.model.width").number() == 128);
  expect_error([&] { engine.set("missing.width", 1); }, {"'missing' is nil"});
  expect_error([&] { engine.get("a..b"); }, {"not a name"});
  // 64-bit integer cdata come back as numbers; other cdata are an error naming the call
  CHECK(engine.eval("return 5LL").at(0).number() == 5);
  expect_error([&] { engine.eval("return require('ffi').new('int[2]')"); }, {"result 1", "neither a tensor nor a number"});
  expect_error([&] { engine.eval("return {}"); }, {"result 1 is a table"});
  // Values converts to tensors only when every result is one
  std::vector<mf::Tensor> ts = engine.eval("return mf.zeros(1), mf.ones(2)");
  CHECK(ts.size() == 2);
  expect_error([&] { std::vector<mf::Tensor> bad = engine.eval("return mf.zeros(1), 3"); }, {"result 2 is a number"});
  CHECK_THROWS_AS(mf::Value(1.5).tensor(), mf::Error);
}

TEST_CASE("embed: tensors cross without copying, both ways", "[embed]") {
  mf::Engine engine;
  std::vector<float> host{1, 2, 3, 4, 5, 6};
  mf::Tensor x = mf::Tensor::view(host.data(), {2, 3});
  CHECK(x.dtype() == mf::DType::kFloat32);
  CHECK(x.numel() == 6);
  CHECK(x.is_host_view());
  CHECK(x.data<float>() == host.data());
  CHECK_THROWS_AS(x.data<double>(), mf::Error);

  engine.eval(R"lua(
    function poke(x) x:set(1, 1, 100); return x, x:t(), x:sum() end
  )lua");
  mf::Values out = engine.call("poke", {x});
  CHECK(host[0] == 100);                                   // Lua wrote into the host's memory
  const mf::Tensor& same = out.at(0).tensor();
  CHECK(same.data<float>() == host.data());                // and the result is the host's memory
  const mf::Tensor& tr = out.at(1).tensor();               // a strided view, still sharing
  CHECK(tr.shape() == mf::Shape{3, 2});
  CHECK_FALSE(tr.is_contiguous());
  CHECK(tr.strides() == mf::Shape{1, 3});
  CHECK(tr.to_vector<float>() == std::vector<float>{100, 4, 2, 5, 3, 6});
  CHECK(tr.contiguous().is_contiguous());
  CHECK(out.at(2).tensor().dim() == 0);
  CHECK(out.at(2).tensor().to_vector<double>() == std::vector<double>{120});

  // dtype follows the pointer type
  std::vector<double> d(4, 0.5);
  std::vector<int64_t> labels{1, 2, 3};
  std::vector<uint8_t> bytes(3, 7);
  CHECK(mf::Tensor::view(d.data(), {2, 2}).dtype() == mf::DType::kFloat64);
  CHECK(mf::Tensor::view(labels.data(), {3}).dtype() == mf::DType::kInt64);
  CHECK(engine.call("mf.sum", {mf::Tensor::view(bytes.data(), {3})}).at(0).tensor().to_vector<int64_t>() ==
        std::vector<int64_t>{21});
  engine.eval("function dt(t) return t:dtype() end");
  CHECK(engine.call("dt", {mf::Tensor::view(labels.data(), {3})}).at(0).string() == "int64");

  // owning tensors: zeros, copies of host data, clones; copies of a handle share storage
  mf::Tensor z = mf::Tensor::zeros({2, 2}, mf::DType::kFloat64);
  CHECK(z.to_vector<double>() == std::vector<double>(4, 0.0));
  CHECK_FALSE(z.is_host_view());
  mf::Tensor c = mf::Tensor::copy_of(host.data(), {6});
  host[1] = -1;
  CHECK(c.to_vector<float>()[1] == 2);
  mf::Tensor alias = c;
  alias.data<float>()[0] = 9;
  CHECK(c.data<float>()[0] == 9);
  mf::Tensor cl = c.clone();
  cl.data<float>()[0] = 0;
  CHECK(c.data<float>()[0] == 9);
  // a tensor made in C++ and filled by Lua in place
  engine.eval("function fill(t, v) t:fill(v) end");
  engine.call("fill", {z, 2.5});
  CHECK(z.to_vector<double>() == std::vector<double>(4, 2.5));
  // undefined handles are refused, not passed as garbage
  mf::Tensor undefined;
  CHECK_FALSE(undefined.defined());
  CHECK_THROWS_AS(undefined.shape(), mf::Error);
  expect_error([&] { engine.call("fill", {undefined, 1}); }, {"argument 1 is an undefined tensor"});
  expect_error([&] { mf::Tensor::view(static_cast<float*>(nullptr), {2}); }, {"data is null"});
  expect_error([&] { mf::Tensor::view(host.data(), {-1, 2}); }, {"negative"});
  CHECK(x.str() == "[float32 tensor of size 2x3]");
}

TEST_CASE("embed: run_file and call with dotted names and methods", "[embed]") {
  mf::Engine engine;
  std::string path = write_temp("model.lua", R"lua(
    mf.manual_seed(1)
    local model = mf.nn.Sequential{mf.nn.Linear(4, 8), mf.nn.ReLU(), mf.nn.Linear(8, 3)}
    net = {model = model}
    function net.predict(x) return mf.softmax(model:forward(x), 2) end
    function net:count() return self.model:num_parameters() end
    return 'loaded'
  )lua");
  CHECK(engine.run_file(path).at(0).string() == "loaded");
  std::vector<float> batch(2 * 4, 0.25f);
  mf::Tensor p = engine.call("net.predict", {mf::Tensor::view(batch.data(), {2, 4})}).at(0).tensor();
  REQUIRE(p.shape() == mf::Shape{2, 3});
  std::vector<float> v = p.to_vector<float>();
  CHECK(v[0] + v[1] + v[2] == Approx(1.0f));
  CHECK(engine.call("net:count").at(0).number() == 4 * 8 + 8 + 8 * 3 + 3);
  std::remove(path.c_str());
  expect_error([&] { engine.run_file("/nonexistent/model.lua"); }, {"cannot open", "/nonexistent/model.lua"});
  expect_error([&] { engine.call("net.nosuch"); }, {"'net.nosuch' is not defined"});
  expect_error([&] { engine.call("net.model.nosuch:m"); }, {"is nil"});
  check_usable(engine);
}

TEST_CASE("embed: Lua errors become mf::Error with a traceback and the engine stays usable", "[embed]") {
  mf::Engine engine;
  SECTION("syntax error") {
    mf::Error e = expect_error([&] { engine.eval("x = = 1", "broken"); }, {"broken:1:"});
    CHECK(e.traceback().empty());  // found while loading: no Lua code ran
    // a syntax error met while running (load of a file, loadstring) has one
    std::string bad = write_temp("bad.lua", "local x = \n return )");
    e = expect_error([&] { engine.run_file(bad); }, {"bad.lua:2:"});
    std::remove(bad.c_str());
    e = expect_error([&] { engine.eval("assert(loadstring('return )'))", "runner"); }, {"runner:1:"});
    CHECK(e.traceback().find("stack traceback:") == 0);
    check_usable(engine);
  }
  SECTION("runtime error, blamed on the user's line, with the traceback") {
    engine.eval("local function inner(t) return t.missing.field end\n"
                "function outer(t) return inner(t) + 1 end",
                "user.lua");
    mf::Error e = expect_error([&] { engine.call("outer", {mf::Tensor::zeros({1})}); }, {"user.lua:1:", "missing"});
    CHECK(e.traceback().find("stack traceback:") == 0);
    INFO(e.traceback());
    CHECK(e.traceback().find("user.lua:2") != std::string::npos);  // outer's line
    CHECK(std::string(e.what()).find(e.message()) == 0);
    CHECK(std::string(e.what()).find("stack traceback:") != std::string::npos);
    check_usable(engine);
  }
  SECTION("kernel error: a shape mismatch names the op and the shapes") {
    engine.eval("function mm(a, b)\n  local c = mf.matmul(a, b)\n  return c\nend", "mm.lua");
    mf::Error e = expect_error([&] { engine.call("mm", {mf::Tensor::zeros({2, 3}), mf::Tensor::zeros({4, 5})}); },
                               {"matmul", "2x3", "4x5", "mm.lua:2:"});
    CHECK(!e.traceback().empty());
    check_usable(engine);
  }
  SECTION("bad argument types") {
    engine.eval("function mm(a, b) return mf.matmul(a, b) end");
    expect_error([&] { engine.call("mm", {"not a tensor", 3}); }, {"matmul"});
    expect_error([&] { engine.call("mf.ones", {true}); }, {"ones"});
    expect_error([&] { engine.call("mf.nosuch_op", {1}); }, {"not defined"});
    check_usable(engine);
  }
  SECTION("error objects that are not strings") {
    expect_error([&] { engine.eval("error({code = 3})"); }, {"error object is a table"});
    expect_error([&] { engine.eval("error(setmetatable({}, {__tostring = function() return 'custom' end}))"); },
                 {"custom"});
    check_usable(engine);
  }
}

TEST_CASE("embed: C++ functions callable from Lua", "[embed]") {
  mf::Engine engine;
  int calls = 0;
  auto scale = [&](const std::vector<mf::Value>& args) -> mf::Values {
    ++calls;
    mf::Tensor t = args.at(0).tensor();  // shares the Lua tensor's storage
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = float(p[i] * args.at(1).number());
    return {t, "scaled", args.size() > 2 ? args[2] : mf::Value()};
  };
  expect_error([&] { engine.register_function("host.scale", scale); }, {"'host' is nil"});
  engine.eval("host = {}");
  engine.register_function("host.scale", scale);
  mf::Values r = engine.eval(R"lua(
    local t = mf.ones(3)
    local same, word, extra = host.scale(t, 4, true)
    return t:sum():item(), word, extra, rawequal(same, t) == false and same:data() == t:data()
  )lua");
  CHECK(calls == 1);
  CHECK(r.at(0).number() == 12);
  CHECK(r.at(1).string() == "scaled");
  CHECK(r.at(2).boolean() == true);
  CHECK(r.at(3).boolean() == true);

  engine.register_function("fails", [](const std::vector<mf::Value>&) -> mf::Values {
    throw std::runtime_error("the host refused");
  });
  engine.register_function("throws_int", [](const std::vector<mf::Value>&) -> mf::Values { throw 42; });
  engine.register_function("wants_tensor", [](const std::vector<mf::Value>& a) -> mf::Values {
    return {a.at(0).tensor().numel()};
  });
  // a C++ exception is a Lua error: Lua code may catch it ...
  r = engine.eval("local ok, err = pcall(fails) return ok, err", "caller.lua");
  CHECK(r.at(0).boolean() == false);
  CHECK(r.at(1).string() == "fails: the host refused");  // pcall, a C function, is the caller: no line
  // ... and when it does not, the host sees mf::Error with the Lua traceback
  mf::Error e = expect_error([&] { engine.eval("local x = 1\nfails()", "caller.lua"); },
                             {"caller.lua:2: fails: the host refused"});
  CHECK(e.traceback().find("stack traceback:") == 0);
  expect_error([&] { engine.eval("throws_int()"); }, {"throws_int: unknown C++ exception"});
  expect_error([&] { engine.eval("wants_tensor('x')"); }, {"wants_tensor", "value is a string; expected a tensor"});
  expect_error([&] { engine.eval("wants_tensor({})"); }, {"wants_tensor: argument 1 is a table"});
  // a registered function must not call its own engine
  engine.register_function("reenter", [&](const std::vector<mf::Value>&) -> mf::Values {
    engine.eval("return 1");
    return {};
  });
  expect_error([&] { engine.eval("reenter()"); }, {"must not call its own engine"});
  // but it may use another engine
  mf::Engine other;
  engine.register_function("other_engine", [&](const std::vector<mf::Value>& a) -> mf::Values {
    return other.call("mf.ones", {a.at(0)});
  });
  CHECK(engine.eval("return other_engine(4):sum():item()").at(0).number() == 4);
  expect_error([&] { engine.register_function("nothing", mf::Engine::Function()); }, {"empty"});
  check_usable(engine);
}

TEST_CASE("embed: Lua-registered ops are process-wide", "[embed]") {
  const char* reg = R"lua(
    mf.register_op{name = 'embed_twice', num_inputs = 1, doc = 'x * 2', infer_shape = 'same',
      params = {k = {type = 'number', default = 2, doc = 'factor'}},
      lua_compute = [[ function(ins, outs, p)
        return function() local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
          for i = 0, n - 1 do y[i] = x[i] * p.k end end end ]]}
  )lua";
  mf::Engine a, b;
  a.eval(reg);
  CHECK(a.eval("return mf.embed_twice(mf.ones(3)):sum():item()").at(0).number() == 6);
  // the name is taken for every engine in the process
  expect_error([&] { b.eval(reg); }, {"'embed_twice' is already registered"});
  expect_error([&] { a.eval(reg); }, {"'embed_twice' is already registered"});
  // an engine created later lists it (test_embed_engines.cc runs such ops in other engines)
  mf::Engine c;
  CHECK(c.eval("for _, n in ipairs(mf.list_ops()) do if n == 'embed_twice' then return true end end "
               "return false")
            .at(0)
            .boolean());
}

TEST_CASE("embed: destroying an engine frees what it allocated", "[embed]") {
  mf::MemoryStats before = mf::memory_stats();
  mf::Tensor kept;
  {
    mf::Engine engine;
    engine.eval(R"lua(
      held = {}
      for i = 1, 20 do held[i] = mf.randn(64, 64) end
      kept = mf.ones(10)
    )lua");
    kept = engine.get("kept").tensor();
    CHECK(mf::memory_stats().in_use > before.in_use);
  }
  // only the tensor the host still holds remains, and it is still valid
  CHECK(mf::memory_stats().in_use - before.in_use == 256);
  CHECK(kept.to_vector<float>() == std::vector<float>(10, 1.0f));
  kept = mf::Tensor();
  CHECK(mf::memory_stats().in_use == before.in_use);
}

TEST_CASE("embed: 10,000 calls of a small model keep memory flat", "[embed][memory]") {
  mf::Engine engine;
  engine.eval(R"lua(
    mf.manual_seed(7)
    local model = mf.nn.Sequential{mf.nn.Linear(32, 16), mf.nn.ReLU(), mf.nn.Linear(16, 4)}
    model:evaluate()
    function predict(x) local p = mf.softmax(model:forward(x), 2) return p, mf.argmax(p, 2) end
  )lua");
  std::vector<float> batch(8 * 32);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = float(i % 13) / 13.0f;
  auto run = [&](int n) {
    double checksum = 0;
    for (int i = 0; i < n; ++i) {
      batch[0] = float(i % 5);
      std::vector<mf::Tensor> out = engine.call("predict", {mf::Tensor::view(batch.data(), {8, 32})});
      checksum += double(out[1].data<int64_t>()[0]);
    }
    return checksum;
  };
  run(200);  // warm up: bind caches, JIT traces, allocator regions
  engine.collect_garbage();
  mf::MemoryStats s0 = mf::memory_stats();
  int64_t rss0 = rss_bytes();
  CHECK(run(10000) > 0);
  engine.collect_garbage();
  mf::MemoryStats s1 = mf::memory_stats();
  int64_t rss1 = rss_bytes();
  CHECK(s1.in_use == s0.in_use);
  CHECK(s1.live_blocks == s0.live_blocks);
  CHECK(s1.cached <= s0.cached + (4 << 20));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // sanitizers hold freed memory back
  INFO("RSS grew by " << (rss1 - rss0) / 1024 << " KiB");
  CHECK(rss1 - rss0 < (16 << 20));
#else
  (void)rss1;
  (void)rss0;
#endif
}

TEST_CASE("embed: engines move, and a moved-from engine refuses work", "[embed]") {
  mf::Engine a;
  a.set("x", 5);
  mf::Engine b(std::move(a));
  CHECK(b.get("x").number() == 5);
  CHECK(b.mode() == mf::Engine::Mode::kThreadLocal);
  CHECK(b.lua_state() != nullptr);
  expect_error([&] { a.eval("return 1"); }, {"moved from"});
}
