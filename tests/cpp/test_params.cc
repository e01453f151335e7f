// ParamValues::parse against a hand-declared field list: defaults, canonical text, and the error
// message for each way user text can be wrong (unknown, wrong kind, range, enum, dtype, required, twice).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "param/param.h"

using Catch::Contains;
using mf::Field;
using mf::ParamValues;

namespace {

// One field of every kind; ParamValues keeps a pointer to the list, so it lives for the whole run.
const std::vector<Field>& reduce_fields() {
  static const std::vector<Field> f = {
      Field::boolean("keepdim", false, "Keep the reduced dims with size 1."),
      Field::integer("dim", 1, "Dim to reduce, 1-based.").range(-8, 8),
      Field::number("alpha", 0.5, "Blend factor.").range(0, 1),
      Field::enumeration("mode", "sum", {"sum", "mean", "none"}, "How to reduce."),
      Field::dtype("dtype", "float32", "Output element type."),
      Field::int_list("dims", "1,2", "Dims to reduce."),
  };
  return f;
}

const std::vector<Field>& full_fields() {
  static const std::vector<Field> f = {
      Field::int_list("shape", "", "Output shape."),
      Field::number("value", 0, "Fill value.").mandatory(),
  };
  return f;
}

const std::vector<Field>& no_fields() {
  static const std::vector<Field> f;
  return f;
}

std::string error_of(const std::string& op, const std::vector<Field>& fields, const std::string& text) {
  try {
    ParamValues::parse(op, fields, text);
  } catch (const mf::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("params: defaults are filled for every field", "[params]") {
  ParamValues p = ParamValues::parse("reduce", reduce_fields(), "");
  CHECK(p.get_bool("keepdim") == false);
  CHECK(p.get_int("dim") == 1);
  CHECK(p.get_float("alpha") == 0.5);
  CHECK(p.get("mode").str == "sum");
  CHECK(p.get("dtype").str == "float32");
  CHECK(int(p.get("dtype").num) == MF_FLOAT32);
  CHECK(p.get_list("dims") == std::vector<int64_t>{1, 2});
  for (size_t i = 0; i < reduce_fields().size(); ++i) CHECK_FALSE(p.value(i).given);
  CHECK(p.fields().size() == 6);
}

TEST_CASE("params: canonical text lists every field in declaration order", "[params]") {
  CHECK(ParamValues::parse("reduce", reduce_fields(), "").canonical() ==
        "keepdim=false;dim=1;alpha=0.5;mode=sum;dtype=float32;dims=1,2");

  // given out of order and in alternative spellings: the canonical text is the same cache key
  ParamValues p = ParamValues::parse("reduce", reduce_fields(), "dims=3,-1,0;alpha=0.25;keepdim=1;dtype=double;mode=mean;dim=-2");
  CHECK(p.canonical() == "keepdim=true;dim=-2;alpha=0.25;mode=mean;dtype=float64;dims=3,-1,0");
  ParamValues q = ParamValues::parse("reduce", reduce_fields(), "keepdim=true;dim=-2;alpha=0.25;mode=mean;dtype=float64;dims=3,-1,0");
  CHECK(q.canonical() == p.canonical());
  for (size_t i = 0; i < reduce_fields().size(); ++i) CHECK(p.value(i).given);
  CHECK(p.get_list("dims") == std::vector<int64_t>{3, -1, 0});
  CHECK(int(p.get("dtype").num) == MF_FLOAT64);

  // numbers print with 17 significant digits, so the key round-trips exactly
  CHECK(ParamValues::parse("reduce", reduce_fields(), "alpha=0.1").canonical() ==
        "keepdim=false;dim=1;alpha=0.10000000000000001;mode=sum;dtype=float32;dims=1,2");
  // only the fields that were given are marked so
  ParamValues r = ParamValues::parse("reduce", reduce_fields(), "mode=none");
  CHECK(r.value(3).given);
  CHECK_FALSE(r.value(0).given);
  CHECK(r.canonical() == "keepdim=false;dim=1;alpha=0.5;mode=none;dtype=float32;dims=1,2");
  // an empty list is a valid list
  CHECK(ParamValues::parse("reduce", reduce_fields(), "dims=").canonical() ==
        "keepdim=false;dim=1;alpha=0.5;mode=sum;dtype=float32;dims=");
  // no fields: an empty canonical text
  CHECK(ParamValues::parse("relu", no_fields(), "").canonical() == "");
}

TEST_CASE("params: accepted spellings of each kind", "[params]") {
  auto parse = [](const std::string& t) { return ParamValues::parse("reduce", reduce_fields(), t); };
  CHECK(parse("keepdim=true").get_bool("keepdim"));
  CHECK(parse("keepdim=1").get_bool("keepdim"));
  CHECK_FALSE(parse("keepdim=false").get_bool("keepdim"));
  CHECK_FALSE(parse("keepdim=0").get_bool("keepdim"));
  CHECK(parse("dim=-8").get_int("dim") == -8);  // range ends are included
  CHECK(parse("dim=8").get_int("dim") == 8);
  CHECK(parse("alpha=0").get_float("alpha") == 0.0);
  CHECK(parse("alpha=1").get_float("alpha") == 1.0);
  CHECK(parse("alpha=2.5e-1").get_float("alpha") == 0.25);
  CHECK(parse(";;dim=2;").get_int("dim") == 2);  // empty items are skipped
  CHECK(parse("dims=7").get_list("dims") == std::vector<int64_t>{7});
  CHECK(parse("dims=-3,4,-5").get_list("dims") == std::vector<int64_t>{-3, 4, -5});

  // dtype names and their Torch-style aliases
  struct { const char* text; int code; const char* name; } dts[] = {
      {"float32", MF_FLOAT32, "float32"}, {"float", MF_FLOAT32, "float32"}, {"float64", MF_FLOAT64, "float64"},
      {"double", MF_FLOAT64, "float64"},  {"int32", MF_INT32, "int32"},     {"int", MF_INT32, "int32"},
      {"int64", MF_INT64, "int64"},       {"long", MF_INT64, "int64"},      {"uint8", MF_UINT8, "uint8"},
      {"byte", MF_UINT8, "uint8"},
  };
  for (auto& d : dts) {
    INFO(d.text);
    ParamValues p = parse(std::string("dtype=") + d.text);
    CHECK(int(p.get("dtype").num) == d.code);
    CHECK(p.get("dtype").str == d.name);
  }

  // Lua prints large integral numbers in exponent form; an integer field takes them
  const std::vector<Field> big = {Field::integer("n", 0, "A count.")};
  CHECK(ParamValues::parse("op", big, "n=1e+15").get_int("n") == 1000000000000000LL);
  CHECK(ParamValues::parse("op", big, "n=-42").get_int("n") == -42);
}

TEST_CASE("params: an unknown field names the op and the field and lists the known params", "[params]") {
  std::string msg = error_of("sum", reduce_fields(), "keep_dim=true");
  CHECK_THAT(msg, Contains("sum:"));
  CHECK_THAT(msg, Contains("'keep_dim'"));
  CHECK_THAT(msg, Contains("keepdim, dim, alpha, mode, dtype, dims"));
  CHECK_THAT(msg, Contains("did you mean 'keepdim'?"));
  CHECK_THAT(error_of("sum", reduce_fields(), "bogus"), !Contains("did you mean"));

  // a field name must match exactly
  CHECK_THAT(error_of("sum", reduce_fields(), "Dim=1"), Contains("'Dim'"));
  // an item without '=' is a key with no value
  CHECK_THAT(error_of("sum", reduce_fields(), "bogus"), Contains("'bogus'"));

  std::string none = error_of("relu", no_fields(), "inplace=true");
  CHECK_THAT(none, Contains("relu:"));
  CHECK_THAT(none, Contains("'inplace'"));
  CHECK_THAT(none, Contains("takes no params"));
}

TEST_CASE("params: a value of the wrong kind is an error naming the field and the text", "[params]") {
  std::string m1 = error_of("sum", reduce_fields(), "dim=1.5");
  CHECK_THAT(m1, Contains("sum:"));
  CHECK_THAT(m1, Contains("'dim'"));
  CHECK_THAT(m1, Contains("integer"));
  CHECK_THAT(m1, Contains("'1.5'"));

  std::string m2 = error_of("sum", reduce_fields(), "keepdim=yes");
  CHECK_THAT(m2, Contains("'keepdim'"));
  CHECK_THAT(m2, Contains("boolean"));
  CHECK_THAT(m2, Contains("'yes'"));

  CHECK_THAT(error_of("sum", reduce_fields(), "keepdim=2"), Contains("boolean"));
  CHECK_THAT(error_of("sum", reduce_fields(), "keepdim=TRUE"), Contains("boolean"));
  CHECK_THAT(error_of("sum", reduce_fields(), "keepdim="), Contains("'keepdim'"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dim=two"), Contains("integer"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dim="), Contains("integer"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dim=3x"), Contains("'3x'"));
  CHECK_THAT(error_of("sum", reduce_fields(), "alpha=half"), Contains("number") && Contains("'alpha'"));
  CHECK_THAT(error_of("sum", reduce_fields(), "alpha=nan"), Contains("number"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dims=1,x"), Contains("list of integers") && Contains("'dims'"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dims=1,,2"), Contains("list of integers"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dims=1.5"), Contains("list of integers"));
  // an integer that a double cannot hold
  const std::vector<Field> big = {Field::integer("n", 0, "A count.")};
  CHECK_THAT(error_of("op", big, "n=1e300"), Contains("integer"));
  CHECK_THAT(error_of("op", big, "n=inf"), Contains("integer"));
}

TEST_CASE("params: a value out of range names the field and the range", "[params]") {
  std::string m = error_of("sum", reduce_fields(), "dim=9");
  CHECK_THAT(m, Contains("sum:"));
  CHECK_THAT(m, Contains("'dim'"));
  CHECK_THAT(m, Contains("9"));
  CHECK_THAT(m, Contains("[-8, 8]"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dim=-9"), Contains("[-8, 8]"));

  std::string a = error_of("sum", reduce_fields(), "alpha=1.5");
  CHECK_THAT(a, Contains("'alpha'"));
  CHECK_THAT(a, Contains("1.5"));
  CHECK_THAT(a, Contains("[0, 1]"));
  CHECK_THAT(error_of("sum", reduce_fields(), "alpha=-0.001"), Contains("[0, 1]"));
  CHECK_THAT(error_of("sum", reduce_fields(), "alpha=inf"), Contains("[0, 1]"));
}

TEST_CASE("params: a bad enum value lists the choices", "[params]") {
  std::string m = error_of("loss", reduce_fields(), "mode=avg");
  CHECK_THAT(m, Contains("loss:"));
  CHECK_THAT(m, Contains("'mode'"));
  CHECK_THAT(m, Contains("'avg'"));
  CHECK_THAT(m, Contains("sum, mean, none"));
  CHECK_THAT(error_of("loss", reduce_fields(), "mode=Sum"), Contains("'Sum'"));  // case matters
  CHECK_THAT(error_of("loss", reduce_fields(), "mode="), Contains("sum, mean, none"));
}

TEST_CASE("params: a bad dtype name lists the dtypes", "[params]") {
  std::string m = error_of("cast", reduce_fields(), "dtype=float16");
  CHECK_THAT(m, Contains("cast:"));
  CHECK_THAT(m, Contains("'dtype'"));
  CHECK_THAT(m, Contains("float16"));
  CHECK_THAT(m, Contains("float32, float64, int32, int64, uint8"));
  CHECK_THAT(error_of("cast", reduce_fields(), "dtype=Float32"), Contains("Float32"));
  CHECK_THAT(error_of("cast", reduce_fields(), "dtype="), Contains("unknown dtype"));
}

TEST_CASE("params: a mandatory field must be given", "[params]") {
  std::string m = error_of("full", full_fields(), "shape=2,3");
  CHECK_THAT(m, Contains("full:"));
  CHECK_THAT(m, Contains("'value'"));
  CHECK_THAT(m, Contains("required"));
  CHECK_THAT(error_of("full", full_fields(), ""), Contains("'value'") && Contains("required"));

  ParamValues p = ParamValues::parse("full", full_fields(), "value=7;shape=2,3");
  CHECK(p.get_float("value") == 7.0);
  CHECK(p.get_list("shape") == std::vector<int64_t>{2, 3});
  CHECK(p.canonical() == "shape=2,3;value=7");
  // the shape default is an empty list
  CHECK(ParamValues::parse("full", full_fields(), "value=-1.5").canonical() == "shape=;value=-1.5");
}

TEST_CASE("params: a field given twice is an error", "[params]") {
  std::string m = error_of("sum", reduce_fields(), "dim=1;dim=2");
  CHECK_THAT(m, Contains("sum:"));
  CHECK_THAT(m, Contains("'dim'"));
  CHECK_THAT(m, Contains("twice"));
  // even with the same value, or spelled differently
  CHECK_THAT(error_of("sum", reduce_fields(), "keepdim=true;mode=sum;keepdim=1"), Contains("'keepdim'") && Contains("twice"));
  CHECK_THAT(error_of("sum", reduce_fields(), "dim=2;dim=2"), Contains("twice"));
}

TEST_CASE("params: the declarations themselves", "[params]") {
  const std::vector<Field>& f = reduce_fields();
  CHECK(f[0].kind == mf::FieldKind::Bool);
  CHECK(f[0].default_text == "false");
  CHECK(f[1].kind == mf::FieldKind::Int);
  CHECK(f[1].default_text == "1");
  CHECK(f[1].has_range);
  CHECK(f[1].lo == -8);
  CHECK(f[1].hi == 8);
  CHECK(f[2].kind == mf::FieldKind::Float);
  CHECK(f[3].choices == std::vector<std::string>{"sum", "mean", "none"});
  CHECK(f[4].kind == mf::FieldKind::Dtype);
  CHECK(f[5].kind == mf::FieldKind::IntList);
  CHECK_FALSE(f[1].required);
  CHECK(full_fields()[1].required);
  CHECK(std::string(f[0].kind_name()) == "boolean");
  CHECK(std::string(f[1].kind_name()) == "integer");
  CHECK(std::string(f[2].kind_name()) == "number");
  CHECK(std::string(f[3].kind_name()) == "enum");
  CHECK(std::string(f[4].kind_name()) == "dtype");
  CHECK(std::string(f[5].kind_name()) == "integer list");
  // asking for a field that was never declared is an internal error, not a crash
  ParamValues p = ParamValues::parse("sum", f, "");
  CHECK_THROWS_AS(p.get("nope"), mf::Error);
}
