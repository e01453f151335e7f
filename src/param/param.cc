// Parsing and validation of "key=value;..." parameter text against declared fields.
#include "param.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "../core/dtype.h"
#include "../core/error.h"

namespace mf {

Field Field::boolean(std::string n, bool def, std::string d) { return Field{std::move(n), FieldKind::Bool, def ? "true" : "false", std::move(d)}; }
Field Field::integer(std::string n, int64_t def, std::string d) { return Field{std::move(n), FieldKind::Int, std::to_string(def), std::move(d)}; }
Field Field::number(std::string n, double def, std::string d) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", def);
  return Field{std::move(n), FieldKind::Float, buf, std::move(d)};
}
Field Field::enumeration(std::string n, std::string def, std::vector<std::string> ch, std::string d) {
  Field f{std::move(n), FieldKind::Enum, std::move(def), std::move(d)};
  f.choices = std::move(ch);
  return f;
}
Field Field::dtype(std::string n, std::string def, std::string d) { return Field{std::move(n), FieldKind::Dtype, std::move(def), std::move(d)}; }
Field Field::int_list(std::string n, std::string def, std::string d) { return Field{std::move(n), FieldKind::IntList, std::move(def), std::move(d)}; }

const char* Field::kind_name() const {
  switch (kind) {
    case FieldKind::Bool: return "boolean";
    case FieldKind::Int: return "integer";
    case FieldKind::Float: return "number";
    case FieldKind::Enum: return "enum";
    case FieldKind::Dtype: return "dtype";
    case FieldKind::IntList: return "integer list";
  }
  return "?";
}

static bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  if (s == "inf") { *out = INFINITY; return true; }
  if (s == "-inf") { *out = -INFINITY; return true; }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

static bool parse_integer(const std::string& s, int64_t* out) {
  double v;
  if (!parse_number(s, &v) || std::floor(v) != v || std::fabs(v) > 9.2e18) return false;
  *out = int64_t(v);
  return true;
}

static ParamValue parse_value(const std::string& op, const Field& f, const std::string& text) {
  ParamValue v;
  auto bad = [&](const char* expected) {
    fail(op, ": param '", f.name, "' expects ", expected, ", got '", text, "'");
  };
  switch (f.kind) {
    case FieldKind::Bool:
      if (text == "true" || text == "1") v.num = 1;
      else if (text == "false" || text == "0") v.num = 0;
      else bad("a boolean");
      break;
    case FieldKind::Int: {
      int64_t i;
      if (!parse_integer(text, &i)) bad("an integer");
      v.num = double(i);
      break;
    }
    case FieldKind::Float:
      if (!parse_number(text, &v.num) || (std::isnan(v.num) && !f.nan_ok)) bad("a number");
      break;
    case FieldKind::Enum: {
      bool ok = false;
      for (auto& c : f.choices) ok = ok || c == text;
      if (!ok) {
        std::string all;
        for (auto& c : f.choices) all += (all.empty() ? "" : ", ") + c;
        fail(op, ": param '", f.name, "' is '", text, "'; expected one of ", all);
      }
      v.str = text;
      break;
    }
    case FieldKind::Dtype:
      try {
        v.num = dtype_from_name(text);
      } catch (const Error& e) {
        fail(op, ": param '", f.name, "': ", e.what());
      }
      v.str = dtype_name(int(v.num));
      break;
    case FieldKind::IntList: {
      size_t pos = 0;
      while (pos < text.size()) {
        size_t comma = text.find(',', pos);
        if (comma == std::string::npos) comma = text.size();
        int64_t i;
        if (!parse_integer(text.substr(pos, comma - pos), &i)) bad("a list of integers");
        v.list.push_back(i);
        pos = comma + 1;
      }
      break;
    }
  }
  if (f.has_range && (f.kind == FieldKind::Int || f.kind == FieldKind::Float) && (v.num < f.lo || v.num > f.hi))
    fail(op, ": param '", f.name, "' is ", text, "; expected a value in [", f.lo, ", ", f.hi, "]");
  return v;
}

static std::string value_text(const Field& f, const ParamValue& v) {
  switch (f.kind) {
    case FieldKind::Bool: return v.num != 0 ? "true" : "false";
    case FieldKind::Int: return std::to_string(int64_t(v.num));
    case FieldKind::Float: {
      char buf[64];
      snprintf(buf, sizeof buf, "%.17g", v.num);
      return buf;
    }
    case FieldKind::Enum:
    case FieldKind::Dtype: return v.str;
    case FieldKind::IntList: {
      std::string s;
      for (size_t i = 0; i < v.list.size(); ++i) s += (i ? "," : "") + std::to_string(v.list[i]);
      return s;
    }
  }
  return "";
}

namespace {
// Optimal-string-alignment distance, for "did you mean" (the Lua options checker uses the same rule).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t v = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) v = std::min(v, d[i - 2][j - 2] + 1);
      d[i][j] = v;
    }
  return d[a.size()][b.size()];
}

// "; did you mean 'x'?" for the closest field name, or "" when none is plausibly meant
std::string did_you_mean(const std::string& key, const std::vector<Field>& fields) {
  const Field* best = nullptr;
  size_t bd = 0;
  for (auto& f : fields) {
    size_t d = edit_distance(key, f.name);
    if (!best || d < bd) best = &f, bd = d;
  }
  size_t limit = std::max<size_t>(1, std::min<size_t>(3, std::max(key.size(), best ? best->name.size() : 0) / 3));
  return best && bd <= limit ? "; did you mean '" + best->name + "'?" : "";
}
}  // namespace

ParamValues ParamValues::parse(const std::string& op, const std::vector<Field>& fields, const std::string& text) {
  ParamValues pv;
  pv.fields_ = &fields;
  pv.values_.resize(fields.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t semi = text.find(';', pos);
    if (semi == std::string::npos) semi = text.size();
    std::string item = text.substr(pos, semi - pos);
    pos = semi + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
    size_t i = 0;
    while (i < fields.size() && fields[i].name != key) ++i;
    if (i == fields.size()) {
      std::string known;
      for (auto& f : fields) known += (known.empty() ? "" : ", ") + f.name;
      fail(op, ": unknown param '", key, "'", did_you_mean(key, fields),
           known.empty() ? "; it takes no params" : " (known params: " + known + ")");
    }
    if (pv.values_[i].given) fail(op, ": param '", key, "' given twice");
    pv.values_[i] = parse_value(op, fields[i], val);
    pv.values_[i].given = true;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (pv.values_[i].given) continue;
    if (fields[i].required) fail(op, ": param '", fields[i].name, "' is required (", fields[i].doc, ")");
    pv.values_[i] = parse_value(op, fields[i], fields[i].default_text);
  }
  for (size_t i = 0; i < fields.size(); ++i)
    pv.canonical_ += (i ? ";" : "") + fields[i].name + "=" + value_text(fields[i], pv.values_[i]);
  return pv;
}

const ParamValue& ParamValues::get(const std::string& name) const {
  for (size_t i = 0; i < fields_->size(); ++i)
    if ((*fields_)[i].name == name) return values_[i];
  fail("internal: no param '", name, "'");
}

}  // namespace mf
