// The registry as the single source of truth: every built-in op is documented, has named inputs,
// a shape rule and a CPU Lua kernel that compiles, and the foundation op list is all there.
#include <catch2/catch.hpp>

#include <lua.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "lua/capi.h"
#include "op/registry.h"

using mf::OpDef;
using mf::Registry;

namespace {

bool is_builtin(const OpDef& op) { return (op.flags_ & MF_OPF_LUA) == 0; }

// The ops the foundation issue lists.
const char* const kFoundationOps[] = {
    "neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "sin", "cos", "square",
    "sign", "floor", "ceil", "round", "clamp", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq",
    "ne", "lt", "le", "gt", "ge", "matmul", "sum", "mean", "max", "min", "prod", "argmax", "argmin", "softmax",
    "log_softmax", "reshape", "transpose", "permute", "concat", "split", "narrow", "slice", "expand", "squeeze",
    "unsqueeze", "contiguous", "zeros", "ones", "full", "arange", "eye", "rand", "randn", "cast", "where", "select",
};

// Compiles "return <src>" in a bare LuaJIT state: the kernel string must be one expression.
std::string lua_compile_error(const std::string& name, const std::string& src) {
  lua_State* L = luaL_newstate();
  std::string code = "return " + src, err;
  if (luaL_loadbuffer(L, code.data(), code.size(), name.c_str()) != 0) err = lua_tostring(L, -1);
  lua_close(L);
  return err;
}

std::string trim_left(const std::string& s) {
  size_t i = s.find_first_not_of(" \t\r\n");
  return i == std::string::npos ? "" : s.substr(i);
}

}  // namespace

TEST_CASE("registry: register_builtin_ops is idempotent", "[registry]") {
  mf::register_builtin_ops();
  int n = Registry::get().size();
  REQUIRE(n > 0);
  mf::register_builtin_ops();
  CHECK(Registry::get().size() == n);
  CHECK(mf_op_count() == n);
  // registering a taken name again is refused, and the registry does not grow
  CHECK_THROWS_WITH(Registry::get().add("matmul"), Catch::Contains("matmul") && Catch::Contains("already registered"));
  CHECK(Registry::get().size() == n);
}

TEST_CASE("registry: op names are unique and indexable", "[registry]") {
  mf::register_builtin_ops();
  const Registry& r = Registry::get();
  std::set<std::string> names;
  for (int i = 0; i < r.size(); ++i) {
    const OpDef& op = r.at(i);
    INFO("op " << i << " '" << op.name_ << "'");
    CHECK_FALSE(op.name_.empty());
    CHECK(names.insert(op.name_).second);
    CHECK(r.index_of(op.name_) == i);
    CHECK(r.find(op.name_) == &op);
    CHECK(mf_op_find(op.name_.c_str()) == i);
    CHECK(std::string(mf_op_name(i)) == op.name_);
  }
  CHECK(r.find("no_such_op") == nullptr);
  CHECK(r.index_of("no_such_op") == -1);
  CHECK(mf_op_find("no_such_op") == -1);
  CHECK(mf_op_find(nullptr) == -1);
  CHECK_THROWS_AS(r.at(r.size()), mf::Error);
  CHECK(mf_op_name(r.size()) == nullptr);
  CHECK(mf_op_doc(-1) == nullptr);
}

TEST_CASE("registry: the foundation op list is registered", "[registry]") {
  mf::register_builtin_ops();
  for (const char* name : kFoundationOps) {
    INFO(name);
    const OpDef* op = Registry::get().find(name);
    REQUIRE(op != nullptr);
    CHECK(is_builtin(*op));
  }
}

TEST_CASE("registry: every built-in op has a doc, inputs, a shape rule and a CPU kernel", "[registry]") {
  mf::register_builtin_ops();
  const Registry& r = Registry::get();
  int checked = 0;
  for (int i = 0; i < r.size(); ++i) {
    const OpDef& op = r.at(i);
    if (!is_builtin(op)) continue;  // ops other tests registered from Lua
    ++checked;
    INFO("op '" << op.name_ << "'");
    CHECK_FALSE(op.doc_.empty());
    CHECK(std::string(mf_op_doc(i)) == op.doc_);

    // inputs: named and distinct; a variadic op names its one repeated input; no inputs means a creation op
    std::set<std::string> in_names;
    for (const std::string& in : op.inputs_) {
      CHECK_FALSE(in.empty());
      CHECK(in_names.insert(in).second);
    }
    if (op.flags_ & MF_OPF_VARIADIC) {
      CHECK(op.inputs_.size() == 1);
    } else if (op.inputs_.empty()) {
      // a creation op takes its dtype from a param, since there is no input to take it from
      bool has_dtype = false;
      for (const mf::Field& f : op.params_) has_dtype = has_dtype || (f.name == "dtype" && f.kind == mf::FieldKind::Dtype);
      CHECK((has_dtype || op.name_ == "no_op"));  // no_op makes no tensor at all
    }
    CHECK(mf_op_num_inputs(i) == int(op.inputs_.size()));

    CHECK(op.infer_shape_ != nullptr);

    // the CPU kernel is a factory expression: "function(ins, outs, p) ... end" that LuaJIT compiles
    const std::string& src = op.lua_compute_[MF_CPU];
    REQUIRE_FALSE(src.empty());
    CHECK(trim_left(src).rfind("function", 0) == 0);
    CHECK(lua_compile_error(op.name_, src) == "");
    CHECK(std::string(mf_op_lua_compute(i, MF_CPU)) == src);
    if (!op.lua_compute_[MF_CUDA].empty()) CHECK(lua_compile_error(op.name_ + "_cuda", op.lua_compute_[MF_CUDA]) == "");
    if (!op.lua_gradient_.empty()) CHECK(lua_compile_error(op.name_ + "_grad", op.lua_gradient_) == "");

    // params: documented, named once, and every default is itself valid text for its field
    std::set<std::string> params;
    for (size_t k = 0; k < op.params_.size(); ++k) {
      const mf::Field& f = op.params_[k];
      INFO("param '" << f.name << "'");
      CHECK_FALSE(f.name.empty());
      CHECK_FALSE(f.doc.empty());
      CHECK(params.insert(f.name).second);
      if (f.kind == mf::FieldKind::Enum) CHECK_FALSE(f.choices.empty());
      if (!f.required) {
        const std::vector<mf::Field> one = {f};
        CHECK_NOTHROW(mf::ParamValues::parse(op.name_, one, ""));
      }
      CHECK(std::string(mf_op_param_doc(i, int(k))) == f.doc);
    }
    CHECK(mf_op_num_params(i) == int(op.params_.size()));
  }
  CHECK(checked >= int(sizeof kFoundationOps / sizeof kFoundationOps[0]));
}

TEST_CASE("registry: a few ops as the foundation issue describes them", "[registry]") {
  mf::register_builtin_ops();
  const OpDef* mm = Registry::get().find("matmul");
  REQUIRE(mm != nullptr);
  CHECK(mm->inputs_ == std::vector<std::string>{"a", "b"});
  REQUIRE(mm->params_.size() == 2);
  CHECK(mm->params_[0].name == "transpose_a");
  CHECK(mm->params_[0].kind == mf::FieldKind::Bool);
  CHECK(mm->params_[0].default_text == "false");
  CHECK(mm->params_[1].name == "transpose_b");

  const OpDef* cat = Registry::get().find("concat");
  REQUIRE(cat != nullptr);
  CHECK((cat->flags_ & MF_OPF_VARIADIC) != 0);

  for (const char* name : {"rand", "randn"}) {
    INFO(name);
    CHECK((Registry::get().find(name)->flags_ & MF_OPF_RANDOM) != 0);
  }
  for (const char* name : {"zeros", "ones", "full", "arange", "eye", "rand", "randn"}) {
    INFO(name);
    CHECK(Registry::get().find(name)->inputs_.empty());
  }
  for (const char* name : {"neg", "exp", "relu", "sum", "softmax", "reshape", "transpose"}) {
    INFO(name);
    CHECK(Registry::get().find(name)->inputs_.size() == 1);
  }
  for (const char* name : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ge"}) {
    INFO(name);
    CHECK(Registry::get().find(name)->inputs_.size() == 2);
  }
  CHECK(Registry::get().find("where")->inputs_.size() == 3);
}

TEST_CASE("registry: lends_shape in_place_of and dim_first are checked against the op when it is added", "[registry]") {
  mf::register_builtin_ops();
  // built-in blocks: every input lends its shape -> the registry's empty rule; an in-place op's twin exists
  const OpDef* zl = Registry::get().find("zeros_like");
  REQUIRE(zl != nullptr);
  CHECK(zl->lends_only_shapes());
  CHECK(zl->lua_gradient_ == mf::kNoInputGradient);
  const OpDef* st = Registry::get().find("sum_to");
  CHECK(st->lends_shape_of(1));
  CHECK(!st->lends_shape_of(0));
  CHECK(!st->lends_only_shapes());
  for (const char* name : {"add_", "sub_", "mul_", "div_", "clamp_", "scatter_", "index_add_", "masked_fill_"}) {
    INFO(name);
    const OpDef* op = Registry::get().find(name);
    REQUIRE(op != nullptr);
    REQUIRE(!op->in_place_of_.empty());
    CHECK(Registry::get().find(op->in_place_of_) != nullptr);
    CHECK((op->flags_ & MF_OPF_WRITES) != 0);
  }
  int n = Registry::get().size();
  auto op_with = [](const char* name, std::vector<std::string> inputs) {
    OpDef op;
    op.name_ = name;
    op.inputs(std::move(inputs));
    op.flags_ |= MF_OPF_LUA;
    return op;
  };
  OpDef bad = op_with("test_attr_bad_lend", {"x"});
  bad.lends_shape(2);
  CHECK_THROWS_WITH(Registry::get().add(bad), Catch::Contains("test_attr_bad_lend: lends_shape(2)") &&
                                                  Catch::Contains("1 fixed input"));
  OpDef grad = op_with("test_attr_lend_grad", {"x"});
  grad.lends_shape(1).gradient("function(x, y, gy) return {gy} end");
  CHECK_THROWS_WITH(Registry::get().add(grad), Catch::Contains("every input lends only its shape"));
  OpDef twin = op_with("test_attr_twin", {"x"});
  twin.in_place_of("add");
  CHECK_THROWS_WITH(Registry::get().add(twin), Catch::Contains("on an op that writes nothing"));
  twin.writes().in_place_of("test_attr_no_such_op");
  CHECK_THROWS_WITH(Registry::get().add(twin), Catch::Contains("'test_attr_no_such_op'), an unknown op"));
  // dim_first(): a first param and two or three inputs (the dispatcher moves the param after them)
  for (const char* name : {"gather", "scatter", "scatter_add_", "index_add", "index_select"}) {
    INFO(name);
    const OpDef* op = Registry::get().find(name);
    REQUIRE(op != nullptr);
    CHECK((op->flags_ & MF_OPF_DIM_FIRST) != 0);
    CHECK(op->params_.at(0).name == "dim");
  }
  OpDef one = op_with("test_attr_dim_first_one", {"x"});
  one.param(mf::Field::integer("dim", 1, "d")).dim_first();
  CHECK_THROWS_WITH(Registry::get().add(one), Catch::Contains("test_attr_dim_first_one: dim_first() needs"));
  OpDef nop = op_with("test_attr_dim_first_noparam", {"x", "i"});
  nop.dim_first();
  CHECK_THROWS_WITH(Registry::get().add(nop), Catch::Contains("a first param (dim)"));
  CHECK(Registry::get().size() == n);  // nothing added
}
