// The device seam without a GPU: a test-only device, "testdev", registered into the process here. Its
// allocator counts what it serves (over aligned_alloc) and its kernel table forwards every entry to
// the CPU's while counting calls; the host copies (copy_from_host, copy_to_host) are counted apart.
// The op harness, a graph training step and the eager API run on it, and the counts show that its
// table computed and its allocator held the storage.
#include <lua.hpp>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/device.h"
#include "lua/state.h"

namespace {

// Storage from aligned_alloc, counted; thread safe.
class CountingAllocator final : public mf::DeviceAllocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    void* p = std::aligned_alloc(256, (nbytes + 255) / 256 * 256);
    if (!p) throw mf::Error("testdev: out of memory");
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[p] = nbytes;
    s_.in_use += int64_t(nbytes);
    if (s_.in_use > s_.peak) s_.peak = s_.in_use;
    s_.cached = s_.in_use;
    s_.allocations++;
    s_.system_allocations++;
    s_.live_blocks++;
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) {  // not served here: counted, and the test fails on it
      foreign_frees_++;
      return;
    }
    s_.in_use -= int64_t(it->second);
    s_.cached = s_.in_use;
    s_.live_blocks--;
    sizes_.erase(it);
    std::free(p);
  }
  mf::AllocatorStats stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    return s_;
  }
  void empty_cache() override {}
  long foreign_frees() { return foreign_frees_; }

 private:
  std::atomic<long> foreign_frees_{0};
  std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
  mf::AllocatorStats s_;
};

std::atomic<long> g_calls{0};
const mf_kernel_table* g_cpu = nullptr;

// The table entry for member M: counts the call, then runs the CPU's entry.
template <typename T, T mf_kernel_table::*M>
struct Forward;
template <typename... A, int (*mf_kernel_table::*M)(A...)>
struct Forward<int (*)(A...), M> {
  static std::atomic<long> calls;
  static int call(A... a) {
    calls++;
    g_calls++;
    return (g_cpu->*M)(a...);
  }
};
template <typename... A, int (*mf_kernel_table::*M)(A...)>
std::atomic<long> Forward<int (*)(A...), M>::calls{0};

#define TESTDEV_ENTRY(name) Forward<decltype(mf_kernel_table::name), &mf_kernel_table::name>
#define TESTDEV_MEMBER_(name, params) TESTDEV_ENTRY(name)::call,
const mf_kernel_table kTestKernels = {MF_KERNELS(TESTDEV_MEMBER_)};
#undef TESTDEV_MEMBER_

CountingAllocator g_alloc;

// The device's id, registering it on first use (the registry is process-wide and keeps it).
int testdev() {
  static int id = [] {
    g_cpu = &mf::device_kernels(MF_CPU);
    return mf::register_device("testdev", &g_alloc, &kTestKernels);
  }();
  return id;
}

// A second test device that takes the cuda slot of kernel strings (its memory is the host's, its
// table the counting one): ops registered from Lua with a CPU string only must refuse it, and those
// with a cuda string run that one. Built-in ops have no cuda string of their own: their CPU string
// serves, through K.
int testcuda() {
  static int id = [] {
    testdev();
    return mf::register_device("testcuda", &g_alloc, &kTestKernels, MF_CUDA);
  }();
  return id;
}

long host_copies() { return TESTDEV_ENTRY(copy_from_host)::calls + TESTDEV_ENTRY(copy_to_host)::calls; }

// A Lua state with moonflow, closed at scope exit.
struct State {
  lua_State* L;
  State() : L(mf::new_lua_state()) {}
  ~State() { lua_close(L); }
  // Runs chunk; "" on success, else the error with its traceback.
  std::string run(const std::string& chunk, const char* name) {
    if (luaL_loadbuffer(L, chunk.data(), chunk.size(), name) != 0) {
      std::string err = lua_tostring(L, -1);
      lua_pop(L, 1);
      return err;
    }
    std::string err;
    if (!mf::pcall_traceback(L, 0, 0, &err)) return err;
    return "";
  }
};

}  // namespace

TEST_CASE("device: the registry names the CPU and the test device", "[device]") {
  int id = testdev();
  CHECK(mf::device(MF_CPU).name == "cpu");
  CHECK(mf::device(id).name == "testdev");
  CHECK(mf::find_device("testdev") == id);
  CHECK(mf::find_device("tpu") == -1);
  CHECK(&mf::device_kernels(id) == &kTestKernels);
  CHECK_THROWS_WITH(mf::register_device("testdev", &g_alloc, &kTestKernels),
                    Catch::Contains("a device named 'testdev' is already registered"));
  CHECK_THROWS_WITH(mf::device(99), Catch::Contains("no device has id 99"));
}

TEST_CASE("device: eager ops on the test device run its table on its storage", "[device]") {
  testdev();
  long calls0 = g_calls, binary0 = TESTDEV_ENTRY(binary)::calls, matmul0 = TESTDEV_ENTRY(matmul)::calls;
  long copies0 = host_copies();
  mf::AllocatorStats s0 = g_alloc.stats();
  {
    State st;
    std::string err = st.run(R"lua(
      local function eq(got, want, what)
        for i = 1, #want do
          if type(want[i]) == 'table' then eq(got[i], want[i], what) elseif got[i] ~= want[i] then
            error(('%s: element %d is %s, want %s'):format(what, i, tostring(got[i]), tostring(want[i])), 2)
          end
        end
      end
      assert(mf.devices()[1] == 'cpu' and mf.devices()[2] == 'testdev', 'mf.devices() lists both')
      local a = mf.tensor{{1, 2}, {3, 4}}:to('testdev')
      local b = mf.tensor{{10, 20}, {30, 40}}:to('testdev')
      assert(a:device() == 'testdev', 'to moves a tensor')
      assert(a:to('testdev') == a, 'to the device it is on returns the tensor itself')
      local c = (a + b) * 2 - 1                        -- numbers become tensors on the device
      assert(c:device() == 'testdev', 'results stay on the device')
      eq(c:cpu():totable(), {{21, 43}, {65, 87}}, '(a + b) * 2 - 1')
      eq(mf.matmul(a, b):cpu():totable(), {{70, 100}, {150, 220}}, 'matmul')
      eq((a:t() + b):cpu():totable(), {{11, 23}, {32, 44}}, 'a transposed view plus b')
      assert(a:sum():item() == 10, 'sum')
      eq(mf.cast(a, 'int32'):cpu():totable(), {{1, 2}, {3, 4}}, 'cast')
      local z = mf.zeros(2, 2):to('testdev')
      z:copy(b); eq(z:cpu():totable(), {{10, 20}, {30, 40}}, 'copy')
      z:fill(5); eq(z:cpu():totable(), {{5, 5}, {5, 5}}, 'fill')
      assert(tostring(a):find('on testdev', 1, true), 'printing names the device')
      assert(mf.memory_stats('testdev').in_use > 0, 'the device allocator holds the tensors')
      -- mixing devices in one op is an error naming both
      local ok, e = pcall(function() return a + mf.ones(2, 2) end)
      assert(not ok and e:find('add: a is on testdev, b is on cpu; move one with :to(...)', 1, true), tostring(e))
      ok, e = pcall(function() return mf.matmul(mf.ones(2, 2), b) end)
      assert(not ok and e:find('matmul: a is on cpu, b is on testdev; move one with :to(...)', 1, true), tostring(e))
      ok, e = pcall(function() return mf.ones(2, 2):copy(b) end)
      assert(not ok and e:find('copy: dst is on cpu, src is on testdev', 1, true), tostring(e))
      ok, e = pcall(function() return a:to('tpu') end)
      assert(not ok and e:find("to: device 'tpu' is not registered; the devices are cpu, testdev", 1, true), tostring(e))
      -- an optimizer step on parameters that live on the device
      local w = mf.tensor{1, 2, 3}:to('testdev')
      local p = mf.nn.Parameter(w)
      p.grad = mf.tensor{1, 1, 1}:to('testdev')
      local opt = mf.optim.SGD({p}, {lr = 0.5})
      opt:step()
      eq(w:cpu():totable(), {0.5, 1.5, 2.5}, 'SGD step on the device')
      -- a module moved to the device computes what its CPU twin does; a momentum step runs there
      local m_cpu, m_dev = mf.nn.Linear(3, 2), mf.nn.Linear(3, 2)
      m_dev:load_state_dict(m_cpu:state_dict())
      assert(m_dev:to('testdev') == m_dev, 'Module:to returns the module')
      for _, q in ipairs(m_dev:parameters()) do assert(q.data:device() == 'testdev', 'parameters moved') end
      local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
      local yd = m_dev(x:to('testdev'))
      assert(yd:device() == 'testdev', 'the module computes on the device')
      eq(yd:cpu():totable(), m_cpu(x):totable(), 'Linear on testdev')
      local q = m_dev:parameters()[1]
      local before = q.data:cpu():totable()
      for _, r in ipairs(m_dev:parameters()) do r.grad = mf.ones_like(r.data) end
      mf.optim.SGD(m_dev:parameters(), {lr = 0.5, momentum = 0.9}):step()
      local after = q.data:cpu():totable()
      for i = 1, #before do for j = 1, #before[i] do
        assert(math.abs(after[i][j] - (before[i][j] - 0.5)) < 1e-6, 'momentum step: w - lr * g on the first step')
      end end
    )lua", "=eager on testdev");
    INFO(err);
    CHECK(err.empty());
    CHECK(g_alloc.stats().allocations > s0.allocations);
  }
  // the device's table ran the ops, host copies moved the data, and closing the state freed it all
  CHECK(TESTDEV_ENTRY(binary)::calls - binary0 >= 4);  // add, mul, sub and the transposed add
  CHECK(TESTDEV_ENTRY(matmul)::calls - matmul0 == 2);  // mf.matmul and the module's Linear
  CHECK(g_calls - calls0 > 10);
  CHECK(host_copies() - copies0 >= 10);
  CHECK(g_alloc.stats().in_use == s0.in_use);
  CHECK(g_alloc.foreign_frees() == 0);  // every storage it was handed back, it had served
}

TEST_CASE("device: a graph training step on the test device matches the CPU's", "[device]") {
  testdev();
  long calls0 = g_calls, matmul0 = TESTDEV_ENTRY(matmul)::calls;
  mf::AllocatorStats s0 = g_alloc.stats();
  State st;
  std::string err = st.run(R"lua(
    -- linear regression, three gradient steps, in a session on each device
    local function train(device)
      mf.reset_default_graph()
      local x = mf.placeholder('float64', {-1, 2}, 'x')
      local y_ = mf.placeholder('float64', {-1, 1}, 'y_')
      local W = mf.Variable(mf.zeros(2, 1, {dtype = 'float64'}), 'W')
      local b = mf.Variable(mf.zeros(1, {dtype = 'float64'}), 'b')
      local loss = mf.mean(mf.square(mf.matmul(x, W) + b - y_))
      local step = mf.train.GradientDescentOptimizer(0.01):minimize(loss)
      local sess = mf.Session{device = device}
      sess:run(mf.global_variables_initializer())
      local bx = mf.tensor({{1, 2}, {3, 4}, {5, 6}}, 'float64')  -- fed from the host
      local by = mf.tensor({{1}, {2}, {3}}, 'float64')
      local losses = {}
      for i = 1, 3 do
        local l = sess:run({loss, step}, {[x] = bx, [y_] = by})
        assert(l:device() == device, 'fetched values are on the session device')
        losses[i] = l:item()
      end
      return losses, sess:run(W):cpu():totable(), sess
    end
    local lc, wc = train('cpu')
    local ld, wd, sess = train('testdev')
    -- the first loss, by hand: W = 0, b = 0, so mean(y^2) = (1 + 4 + 9) / 3
    assert(math.abs(ld[1] - 14 / 3) < 1e-12, 'first loss ' .. ld[1])
    for i = 1, 3 do assert(ld[i] == lc[i], ('step %d: loss %.17g on testdev, %.17g on cpu'):format(i, ld[i], lc[i])) end
    for i = 1, 2 do assert(wd[i][1] == wc[i][1], 'W after three steps') end
    assert(ld[3] < ld[1], 'the loss falls')
    -- a parameter bound on the host refuses a session on the device
    mf.reset_default_graph()
    local v = mf.Variable(mf.ones(2), 'v', {bind = true})
    local ok, e = pcall(function() return mf.Session{device = 'testdev'}:run(v * 2) end)
    assert(not ok and e:find("variable 'v' is on cpu, the session on testdev", 1, true), tostring(e))
  )lua", "=training on testdev");
  INFO(err);
  CHECK(err.empty());
  CHECK(TESTDEV_ENTRY(matmul)::calls - matmul0 >= 3);  // forward matmuls, at least
  CHECK(TESTDEV_ENTRY(sgd_update)::calls + TESTDEV_ENTRY(fused)::calls + TESTDEV_ENTRY(binary)::calls > 0);
  CHECK(g_calls - calls0 > 20);
  CHECK(g_alloc.stats().allocations > s0.allocations);  // variables, slots and fetched values
}

// Runs every case of the op harness (tests/ops/harness.lua) on device, then more (Lua, may be
// empty); "" when all passed, else the failures.
static std::string harness_on(State& st, const std::string& device, const std::string& more) {
  return st.run(std::string("local MF_SOURCE_DIR, DEVICE = '" MF_SOURCE_DIR "', '") + device + "'\n" + R"lua(
    local H = assert(loadfile(MF_SOURCE_DIR .. '/tests/ops/harness.lua'))(MF_SOURCE_DIR .. '/tests/ops')
    H.set_device(DEVICE)
    local failed = {}
    for _, name in ipairs(H.case_names()) do
      local e = H.run_case(name)
      if e then failed[#failed + 1] = e end
    end
    if #failed > 0 then error(#failed .. ' cases failed on ' .. DEVICE .. ':\n' .. table.concat(failed, '\n'), 0) end
  )lua" + more, ("=op harness on " + device).c_str());
}

TEST_CASE("device: every op case runs on the test device", "[device]") {
  testdev();
  long calls0 = g_calls, copies0 = host_copies();
  mf::AllocatorStats s0 = g_alloc.stats();
  State st;
  std::string err = harness_on(st, "testdev", "");
  INFO(err);
  CHECK(err.empty());
  CHECK(g_calls - calls0 > 1000);
  CHECK(host_copies() - copies0 > 1000);  // every result is read on the host through copy_to_host
  CHECK(g_alloc.stats().allocations - s0.allocations > 1000);
}

TEST_CASE("device: every op case runs on a device with the cuda kernel slot", "[device]") {
  testcuda();
  long calls0 = g_calls;
  State st;
  std::string err = harness_on(st, "testcuda", R"lua(
    -- an op registered from Lua: its CPU string never runs on the device; a cuda string does
    mf.register_op{name = 'tc_twice', num_inputs = 1, doc = '2x (CPU only)', lua_compute = [[
      function(ins, outs) return function()
        local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do y[i] = 2 * x[i] end
      end end ]]}
    mf.register_op{name = 'tc_copy', num_inputs = 1, doc = 'a copy, on both slots', lua_compute = {
      cpu = [[ function(ins, outs) return function()
        local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do y[i] = x[i] end
      end end ]],
      cuda = [[ function(ins, outs, p, K) return function() K.copy(outs[1], ins[1]) end end ]]}}
    local x = mf.tensor{1, 2, 3}
    local xd = x:to('testcuda')
    assert(mf.tc_twice(x):get(3) == 6, 'tc_twice on the CPU')
    local ok, e = pcall(mf.tc_twice, xd)
    assert(not ok and e:find("tc_twice: no cuda kernel is registered; register_op{lua_compute = {cpu = ..., cuda = ...}} " ..
      "gives one, or move the inputs with :cpu()", 1, true), tostring(e))
    local y = mf.tc_copy(xd)
    assert(y:device() == 'testcuda' and y:cpu():get(2) == 2, 'tc_copy on the device')
    assert(mf.tc_copy(x):get(1) == 1, 'tc_copy on the CPU')
    -- in a graph on the device too
    local ph = mf.placeholder('float32', {3}, 'x')
    local r = mf.Session{device = 'testcuda'}:run(mf.tc_copy(ph) * 2, {[ph] = x})
    assert(r:cpu():get(3) == 6, 'tc_copy in a graph on testcuda')
    ok, e = pcall(function() return mf.Session{device = 'testcuda'}:run(mf.tc_twice(ph), {[ph] = x}) end)
    assert(not ok and e:find('tc_twice: no cuda kernel is registered', 1, true), tostring(e))
  )lua");
  INFO(err);
  CHECK(err.empty());
  CHECK(g_calls - calls0 > 1000);
}

// What a training step reads on the host (issue 16 item 5: host reads synchronise; a training step
// does no other host synchronisation). A host read on the test device is a copy_to_host; a Lua read
// of a device tensor (:item(), get, printing, totable: mf._host_reads() counts them, since the host
// addresses this device's memory directly); or a call of an entry whose CUDA routine must wait for
// the device because its output's size (or the host's next step) depends on device values: nonzero
// and masked_select (how many), multinomial (sampled on the host). Index and label range checks are
// not host reads: on cuda they record the first bad index on the device and the next synchronising
// read raises it. After warm-up steps (slots, caches, bind), a graph step and an eager step (forward,
// loss, backward, opt:step(), zero_grad) of an MLP with SGD momentum and with Adam, and of a small
// CNN (conv, batch norm, max pooling, dropout) with SGD momentum, must make none.
namespace {
long host_reads(lua_State* L) {
  lua_getglobal(L, "mf");
  lua_getfield(L, -1, "_host_reads");
  long lua_reads = lua_pcall(L, 0, 1, 0) == 0 ? long(lua_tointeger(L, -1)) : -1000000;
  lua_pop(L, 2);
  return lua_reads + TESTDEV_ENTRY(copy_to_host)::calls + TESTDEV_ENTRY(nonzero)::calls +
         TESTDEV_ENTRY(masked_select)::calls + TESTDEV_ENTRY(multinomial)::calls;
}
}  // namespace

TEST_CASE("device: a training step on the test device reads nothing on the host", "[device][sync]") {
  testdev();
  State st;
  // the models, data and steps, defined once; each step runs as its own chunk below
  std::string err = st.run(R"lua(
    local N, D, H, K = 16, 12, 8, 4
    mf.manual_seed(3)
    local X, Y = mf.randn(N, D), mf.randint(1, K + 1, {N}, {dtype = 'int64'})
    local dx, dy = X:to('testdev'), Y:to('testdev')
    local dimg = mf.randn(N, 1, 8, 8):to('testdev')
    -- the MLP; 'lenet': a small CNN (conv, batch norm, pooling, dropout) with SGD momentum
    local function mlp(kind)
      if kind == 'lenet' then
        return mf.nn.Sequential(mf.nn.Conv2d(1, 4, 3), mf.nn.BatchNorm2d(4), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
          mf.nn.Dropout(0.25), mf.nn.Flatten(), mf.nn.Linear(36, K))
      end
      return mf.nn.Sequential(mf.nn.Linear(D, H), mf.nn.ReLU(), mf.nn.Linear(H, K))
    end
    eager_steps, graph_steps, losses = {}, {}, {}
    for _, kind in ipairs({'momentum', 'adam', 'lenet'}) do
      local dx = kind == 'lenet' and dimg or dx
      -- eager: the tape over the device tensors
      local m = mlp(kind):to('testdev')
      local opt = kind == 'adam' and mf.optim.Adam(m:parameters(), {lr = 0.01})
        or mf.optim.SGD(m:parameters(), {lr = 0.1, momentum = 0.9})
      local crit = mf.nn.CrossEntropyLoss()
      eager_steps[kind] = function()
        opt:zero_grad()
        local loss = crit(m(dx), dy)
        loss:backward()
        opt:step()
        return loss
      end
      -- graph: a session on the device, the feeds uploaded, nothing fetched
      local g = mlp(kind):to('testdev')
      local x = mf.placeholder('float32', kind == 'lenet' and {-1, 1, 8, 8} or {-1, D}, 'x')
      local y = mf.placeholder('int64', {-1}, 'y')
      local loss = mf.nn.CrossEntropyLoss():forward(g:forward(x), y)
      local gopt = kind == 'adam' and mf.optim.Adam(g:parameters(), {lr = 0.01})
        or mf.optim.SGD(g:parameters(), {lr = 0.1, momentum = 0.9})
      local step = gopt:minimize(loss)
      local sess = mf.Session{device = 'testdev'}
      sess:run(mf.global_variables_initializer())
      local feeds = {[x] = dx, [y] = dy}
      graph_steps[kind] = function() sess:run(step, feeds) end
      losses[kind] = function() return sess:run(loss, feeds) end
    end
  )lua", "=setup");
  INFO(err);
  REQUIRE(err.empty());
  for (const char* kind : {"momentum", "adam", "lenet"}) {
    for (const char* mode : {"eager", "graph"}) {
      std::string warm = std::string("for _ = 1, 2 do ") + mode + "_steps['" + kind + "']() end";
      err = st.run(warm, "=warm-up");
      INFO(mode << " " << kind << ": " << err);
      REQUIRE(err.empty());
      long reads0 = host_reads(st.L), calls0 = g_calls;
      err = st.run(std::string(mode) + "_steps['" + kind + "']()", "=one step");
      REQUIRE(err.empty());
      CHECK(g_calls - calls0 > 10);               // the step ran on the device's table
      CHECK(host_reads(st.L) - reads0 == 0);      // and read nothing back
    }
  }
  // the losses fall (the steps trained), read once at the end: that read is counted
  long reads0 = host_reads(st.L);
  err = st.run(R"lua(
    for _, kind in ipairs({'momentum', 'adam'}) do
      local before = losses[kind]():item()
      for _ = 1, 20 do graph_steps[kind]() end
      local after = losses[kind]():item()
      assert(after < before, ('%s: graph loss %g -> %g'):format(kind, before, after))
      local l0 = eager_steps[kind]():item()
      for _ = 1, 20 do eager_steps[kind]() end
      local l1 = eager_steps[kind]():item()
      assert(l1 < l0, ('%s: eager loss %g -> %g'):format(kind, l0, l1))
    end
  )lua", "=losses");
  INFO(err);
  CHECK(err.empty());
  CHECK(host_reads(st.L) - reads0 >= 8);  // each :item() above is a host read, and counted
}
