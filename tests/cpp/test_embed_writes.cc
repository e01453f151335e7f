// The write rule seen from a C++ host: views checked against their buffer's length, hand-made
// structs checked against their storage, and Lua writes into host memory checked like any other.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <functional>
#include <string>
#include <vector>

namespace {

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const mf::Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("embed writes: views know their buffer's length", "[embed][writes]") {
  std::vector<float> buf(6, 0.f);
  CHECK(mf::Tensor::view(buf, {2, 3}).numel() == 6);
  CHECK(mf::Tensor::view(buf.data(), 6, {3, 2}).shape() == mf::Shape{3, 2});
  CHECK(error_of([&] { mf::Tensor::view(buf, {2, 4}); }).find("needs 8 elements but the buffer holds 6") !=
        std::string::npos);
  CHECK(error_of([&] { mf::Tensor::view(buf.data(), 5, {6}); }).find("buffer holds 5") != std::string::npos);
}

TEST_CASE("embed writes: Lua writes into host memory follow the rule", "[embed][writes]") {
  mf::Engine engine;
  std::vector<float> host{1, 2, 3};
  mf::Tensor v = mf::Tensor::view(host, {3});
  engine.eval("function put(t, src) t:copy(src) end");
  engine.eval("function big() return mf.ones(100, 100) end");
  mf::Tensor big = engine.call("big", {}).at(0).tensor();
  std::string msg = error_of([&] { engine.call("put", {v, big}); });
  CHECK(msg.find("copy: source 100x100 does not broadcast to destination 3") != std::string::npos);
  CHECK(host == std::vector<float>{1, 2, 3});
  engine.eval("function fill_col(t) t:narrow(1, 2, 2):fill(9) end");
  engine.call("fill_col", {v});
  CHECK(host == std::vector<float>{1, 9, 9});
}
