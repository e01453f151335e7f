// Declarative operator parameters (the dmlc-core idea): each field has a kind, a default, an
// optional range or enum, and a one-line doc. Values arrive as "key=value;..." text and are
// validated here, so every caller (eager, graph, Lua-registered ops) gets the same errors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace mf {

enum class FieldKind {
  Bool = MF_PARAM_BOOL, Int = MF_PARAM_INT, Float = MF_PARAM_FLOAT, Enum = MF_PARAM_ENUM, Dtype = MF_PARAM_DTYPE,
  IntList = MF_PARAM_INT_LIST
};

struct Field {
  std::string name;
  FieldKind kind;
  std::string default_text;  // parsed like user text; "" with required=true means no default
  std::string doc;
  bool required = false;
  bool has_range = false;
  bool nan_ok = false;  // Float: NaN is a valid value (a fill value), not a mistake (a rate)
  double lo = 0, hi = 0;
  std::vector<std::string> choices;  // for Enum

  static Field boolean(std::string name, bool def, std::string doc);
  static Field integer(std::string name, int64_t def, std::string doc);
  static Field number(std::string name, double def, std::string doc);
  static Field enumeration(std::string name, std::string def, std::vector<std::string> choices, std::string doc);
  static Field dtype(std::string name, std::string def, std::string doc);
  static Field int_list(std::string name, std::string def, std::string doc);
  Field& range(double lo_, double hi_) { has_range = true; lo = lo_; hi = hi_; return *this; }
  Field& mandatory() { required = true; return *this; }
  Field& allow_nan() { nan_ok = true; return *this; }
  const char* kind_name() const;
};

struct ParamValue {
  double num = 0;                 // Bool (0/1), Int, Float, and the dtype code for Dtype
  std::string str;                // Enum and Dtype text
  std::vector<int64_t> list;      // IntList
  bool given = false;             // set by the caller rather than defaulted
};

// Parsed, validated values of one op's fields, in field order.
class ParamValues {
 public:
  // Throws "<op>: ..." naming the field for unknown fields, wrong kinds, ranges and enum values.
  static ParamValues parse(const std::string& op, const std::vector<Field>& fields, const std::string& text);
  const std::vector<Field>& fields() const { return *fields_; }
  const ParamValue& value(size_t i) const { return values_[i]; }
  const ParamValue& get(const std::string& name) const;
  bool get_bool(const std::string& name) const { return get(name).num != 0; }
  int64_t get_int(const std::string& name) const { return int64_t(get(name).num); }
  double get_float(const std::string& name) const { return get(name).num; }
  const std::vector<int64_t>& get_list(const std::string& name) const { return get(name).list; }
  const std::string& canonical() const { return canonical_; }  // all fields, in order: the cache key

 private:
  const std::vector<Field>* fields_ = nullptr;
  std::vector<ParamValue> values_;
  std::string canonical_;
};

}  // namespace mf
