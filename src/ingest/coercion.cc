#include "ingest/coercion.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/rfc3339.h"
#include "common/status_macros.h"
#include "ingest/text_value.h"
#include "ingest/time_pattern.h"

namespace loam::ingest {
namespace {

using json = nlohmann::json;

struct KindName {
  CoercionKind kind;
  std::string_view name;
  std::string_view applies_to;
};
constexpr KindName kKinds[] = {
    {CoercionKind::kIntToFloat, "intToFloat", "float64"},
    {CoercionKind::kIso8601ToTimestamp, "iso8601ToTimestamp", "timestamp"},
    {CoercionKind::kStringToInt, "stringToInt", "int32 or int64"},
    {CoercionKind::kStringToDecimal, "stringToDecimal", "decimal"},
    {CoercionKind::kEpochMillisToTimestamp, "epochMillisToTimestamp", "timestamp"},
    {CoercionKind::kPatternToDate, "patternToDate", "date"},
    {CoercionKind::kPatternToTimestamp, "patternToTimestamp", "timestamp"},
};

bool IsPatternKind(CoercionKind kind) {
  return kind == CoercionKind::kPatternToDate || kind == CoercionKind::kPatternToTimestamp;
}

bool Fits(CoercionKind kind, TypeId type) {
  switch (kind) {
    case CoercionKind::kIntToFloat:
      return type == TypeId::kFloat64;
    case CoercionKind::kIso8601ToTimestamp:
    case CoercionKind::kEpochMillisToTimestamp:
    case CoercionKind::kPatternToTimestamp:
      return type == TypeId::kTimestamp;
    case CoercionKind::kPatternToDate:
      return type == TypeId::kDate;
    case CoercionKind::kStringToInt:
      return type == TypeId::kInt32 || type == TypeId::kInt64;
    case CoercionKind::kStringToDecimal:
      return type == TypeId::kDecimal;
  }
  return false;
}

Status Expected(std::string_view what) {
  return Status::InvalidArgument("expected " + std::string(what));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// " +007 " -> "7", "-0012" -> "-12": the lenient integer spelling stringToInt
// and stringToDecimal accept, rewritten canonically. False when not a number.
bool CanonicalizeNumber(std::string_view in, bool allow_fraction, std::string* out) {
  in = TrimSpaces(in);
  out->clear();
  if (!in.empty() && (in.front() == '+' || in.front() == '-')) {
    if (in.front() == '-') out->push_back('-');
    in.remove_prefix(1);
  }
  const size_t dot = allow_fraction ? in.find('.') : std::string_view::npos;
  std::string_view whole = in.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : in.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  for (char c : whole) {
    if (!IsDigit(c)) return false;
  }
  for (char c : frac) {
    if (!IsDigit(c)) return false;
  }
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  while (!frac.empty() && frac.back() == '0') frac.remove_suffix(1);  // exact: zeros only
  *out += whole.empty() ? std::string_view("0") : whole;
  if (!frac.empty()) *out += "." + std::string(frac);
  if (*out == "-0") *out = "0";
  return true;
}

Status AppendIntText(const Field& f, std::string_view canonical, Column* out) {
  const bool is32 = f.type.id == TypeId::kInt32;
  ASSIGN_OR_RETURN(int64_t v, ParseCanonicalInt(canonical,
                                                is32 ? std::numeric_limits<int32_t>::min()
                                                     : std::numeric_limits<int64_t>::min(),
                                                is32 ? std::numeric_limits<int32_t>::max()
                                                     : std::numeric_limits<int64_t>::max()));
  if (is32) {
    out->AppendInt32(static_cast<int32_t>(v));
  } else {
    out->AppendInt64(v);
  }
  return Status::OK();
}

bool TextLike(ValueForm form) {
  return form == ValueForm::kCsvField || form == ValueForm::kCsvQuotedField ||
         form == ValueForm::kJsonString;
}
bool NumberLike(ValueForm form) {
  return form == ValueForm::kCsvField || form == ValueForm::kCsvQuotedField ||
         form == ValueForm::kJsonNumber;
}

// patternToDate, patternToTimestamp: text in the declared layout.
Status AppendPatterned(const Coercion& c, std::string_view text, ValueForm form, Column* out) {
  const std::string name(CoercionKindName(c.kind));
  if (!TextLike(form)) return Expected("text as '" + c.pattern + "' (" + name + ")");
  if (c.kind == CoercionKind::kPatternToDate) {
    Result<int32_t> days = c.compiled->ParseDate(text);
    if (!days.ok()) return Status::InvalidArgument(name + ": " + days.status().message());
    out->AppendInt32(*days);
    return Status::OK();
  }
  Result<int64_t> micros = c.compiled->ParseTimestamp(text);
  if (!micros.ok()) return Status::InvalidArgument(name + ": " + micros.status().message());
  out->AppendInt64(*micros);
  return Status::OK();
}

Status AppendCoerced(const Field& f, const Coercion& c, std::string_view text, ValueForm form,
                     Column* out) {
  const CoercionKind kind = c.kind;
  const std::string name(CoercionKindName(kind));
  switch (kind) {
    case CoercionKind::kIntToFloat: {
      if (!NumberLike(form)) return Expected("a number (intToFloat)");
      Result<int64_t> whole = ParseCanonicalInt(text, std::numeric_limits<int64_t>::min(),
                                                std::numeric_limits<int64_t>::max());
      if (!whole.ok()) return AppendCanonical(f, text, /*quoted=*/true, out);  // 3.25, 1e3
      constexpr int64_t kExact = int64_t{1} << 53;
      if (*whole > kExact || *whole < -kExact) {
        return Status::InvalidArgument(
            "intToFloat: the integer is not exactly representable as float64 (beyond ±2^53); "
            "store it in an int64 or decimal column");
      }
      out->AppendFloat64(static_cast<double>(*whole));
      return Status::OK();
    }
    case CoercionKind::kIso8601ToTimestamp: {
      if (!TextLike(form)) return Expected("an RFC 3339 timestamp string (iso8601ToTimestamp)");
      Result<int64_t> micros = ParseRfc3339Micros(text);
      if (!micros.ok()) {
        return Status::InvalidArgument("iso8601ToTimestamp: " + micros.status().message());
      }
      out->AppendInt64(*micros);
      return Status::OK();
    }
    case CoercionKind::kStringToInt: {
      std::string canonical;
      if (form == ValueForm::kJsonBool || form == ValueForm::kJsonRaw ||
          !CanonicalizeNumber(text, /*allow_fraction=*/false, &canonical)) {
        return Expected("an integer, optionally signed, padded with zeros or spaces (stringToInt)");
      }
      return AppendIntText(f, canonical, out);
    }
    case CoercionKind::kStringToDecimal: {
      std::string canonical;
      if (form == ValueForm::kJsonBool || form == ValueForm::kJsonRaw ||
          !CanonicalizeNumber(text, /*allow_fraction=*/true, &canonical)) {
        return Expected("a decimal number such as \" +12.50\" (stringToDecimal; no exponent)");
      }
      ASSIGN_OR_RETURN(Int128 v, ParseCanonicalDecimal(canonical, f.type.precision, f.type.scale));
      out->AppendInt128(v);
      return Status::OK();
    }
    case CoercionKind::kEpochMillisToTimestamp: {
      if (!NumberLike(form)) return Expected("integer milliseconds since the epoch (" + name + ")");
      // Years 0001-9999, the range of the canonical timestamp form.
      ASSIGN_OR_RETURN(int64_t ms,
                       ParseCanonicalInt(text, -62'135'596'800'000, 253'402'300'799'999));
      out->AppendInt64(ms * 1000);
      return Status::OK();
    }
    case CoercionKind::kPatternToDate:
    case CoercionKind::kPatternToTimestamp:
      return AppendPatterned(c, text, form, out);
  }
  return Status::Internal("unknown coercion");
}

std::string_view FormName(ValueForm form) {
  switch (form) {
    case ValueForm::kJsonString:
      return "a JSON string";
    case ValueForm::kJsonNumber:
      return "a JSON number";
    case ValueForm::kJsonBool:
      return "a JSON boolean";
    case ValueForm::kJsonRaw:
      return "a JSON object or array";
    default:
      return "text";
  }
}

// The JSON representation of each type (docs/ingest.md, "JSON Lines").
Status AppendJson(const Field& f, std::string_view text, ValueForm form, Column* out) {
  auto wrong = [&](std::string_view want, std::string_view hint = {}) {
    std::string msg = "expected " + std::string(want) + ", got " + std::string(FormName(form));
    if (!hint.empty()) msg += "; " + std::string(hint);
    return Status::InvalidArgument(msg);
  };
  switch (f.type.id) {
    case TypeId::kBool:
      if (form != ValueForm::kJsonBool) return wrong("true or false");
      out->AppendBool(text == "true");
      return Status::OK();
    case TypeId::kInt32:
    case TypeId::kInt64:
      if (form != ValueForm::kJsonNumber) {
        return wrong("a JSON integer",
                     "for numbers inside strings declare the stringToInt coercion");
      }
      return AppendIntText(f, text, out);
    case TypeId::kFloat64:
      if (form != ValueForm::kJsonNumber) return wrong("a JSON number");
      return AppendCanonical(f, text, /*quoted=*/true, out);
    case TypeId::kDecimal:
      if (form != ValueForm::kJsonNumber) {
        return wrong("a JSON number",
                     "for decimals inside strings declare the stringToDecimal coercion");
      }
      return AppendCanonical(f, text, /*quoted=*/true, out);
    case TypeId::kJson:
      return AppendCanonical(f, text, /*quoted=*/true, out);
    default:  // string, binary, date, timestamp: a JSON string in the canonical text form
      if (form != ValueForm::kJsonString) return wrong("a JSON string");
      return AppendCanonical(f, text, /*quoted=*/true, out);
  }
}

}  // namespace

std::string_view CoercionKindName(CoercionKind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

Result<CoercionKind> ParseCoercionKind(std::string_view name) {
  std::string known;
  for (const KindName& k : kKinds) {
    if (k.name == name) return k.kind;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  return Status::InvalidArgument("unknown coercion kind '" + std::string(name) +
                                 "'; known: " + known);
}

namespace {

// {"sourceColumn","targetColumn","kind"} and, for the pattern kinds,
// "pattern" and (patternToTimestamp) "timeZone".
Result<Coercion> CoercionFromJson(const json& c) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("schema policy: " + what);
  };
  const bool strings = c.is_object() && c.contains("sourceColumn") && c.contains("targetColumn") &&
                       c.contains("kind") && c["sourceColumn"].is_string() &&
                       c["targetColumn"].is_string() && c["kind"].is_string();
  if (!strings) {
    return bad("each coercion needs exactly the strings sourceColumn, targetColumn and kind");
  }
  ASSIGN_OR_RETURN(CoercionKind kind, ParseCoercionKind(c["kind"].get<std::string>()));
  for (const auto& [key, value] : c.items()) {
    const bool pattern_field = key == "pattern" || key == "timeZone";
    if (key == "sourceColumn" || key == "targetColumn" || key == "kind") continue;
    if (!pattern_field) return bad("unknown coercion field '" + key + "'");
    if (!IsPatternKind(kind))
      return bad("'" + key + "' belongs to patternToDate and patternToTimestamp");
    if (!value.is_string()) return bad("'" + key + "' must be a string");
  }
  const std::string source = c["sourceColumn"].get<std::string>();
  const std::string target = c["targetColumn"].get<std::string>();
  if (!IsPatternKind(kind)) return Coercion{source, target, kind, {}, {}, nullptr};
  if (!c.contains("pattern"))
    return bad(std::string(CoercionKindName(kind)) + " needs a \"pattern\"");
  ASSIGN_OR_RETURN(Coercion coercion,
                   Coercion::WithPattern(
                       target, kind, c["pattern"].get<std::string>(),
                       c.contains("timeZone") ? c["timeZone"].get<std::string>() : std::string()));
  coercion.source_column = source;
  return coercion;
}

}  // namespace

Result<SchemaPolicy> SchemaPolicy::FromJson(std::string_view text) {
  std::string problem;
  json j = ParseJson(text, &problem);
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument(
        "schema policy: " + what +
        R"(; expected {"mode":"strict","coercions":[{"sourceColumn":"c","targetColumn":"c","kind":"intToFloat"}]} or mode "additive" with "addColumns":[{"name":"c","type":"int64"}])");
  };
  if (j.is_discarded()) return bad(problem);
  if (!j.is_object()) return bad("not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "mode" && key != "coercions" && key != "addColumns" && key != "columnMap") {
      return bad("unknown field '" + key + "'");
    }
  }
  if (!j.contains("mode") || (j["mode"] != "strict" && j["mode"] != "additive")) {
    return bad("\"mode\" must be \"strict\" or \"additive\"");
  }
  SchemaPolicy policy;
  policy.additive = j["mode"] == "additive";
  if (j.contains("addColumns")) {
    if (!policy.additive) return bad("\"addColumns\" needs mode \"additive\"");
    if (!j["addColumns"].is_array()) return bad("\"addColumns\" must be an array");
    for (const json& c : j["addColumns"]) {
      if (!c.is_object() || c.size() != 2 || !c.contains("name") || !c.contains("type") ||
          !c["name"].is_string() || !c["type"].is_string()) {
        return bad("each added column needs exactly the strings name and type");
      }
      ASSIGN_OR_RETURN(DataType type, DataType::Parse(c["type"].get<std::string>()));
      policy.add_columns.push_back({c["name"].get<std::string>(), type, /*nullable=*/true});
    }
  }
  if (policy.additive && policy.add_columns.empty()) {
    return bad("mode \"additive\" needs the columns it may add in \"addColumns\"");
  }
  if (j.contains("columnMap")) {
    if (!j["columnMap"].is_array()) return bad("\"columnMap\" must be an array");
    for (const json& m : j["columnMap"]) {
      if (!m.is_object() || m.size() != 2 || !m.contains("sourceColumn") ||
          !m.contains("targetColumn") || !m["sourceColumn"].is_string() ||
          !m["targetColumn"].is_string()) {
        return bad("each column mapping needs exactly the strings sourceColumn and targetColumn");
      }
      policy.renames.push_back({m["sourceColumn"], m["targetColumn"]});
    }
  }
  if (!j.contains("coercions")) return policy;
  if (!j["coercions"].is_array()) return bad("\"coercions\" must be an array");
  for (const json& c : j["coercions"]) {
    ASSIGN_OR_RETURN(Coercion coercion, CoercionFromJson(c));
    policy.coercions.push_back(std::move(coercion));
  }
  return policy;
}

Result<Coercion> Coercion::WithPattern(std::string column, CoercionKind kind, std::string pattern,
                                       std::string time_zone) {
  Coercion c{column, column, kind, std::move(pattern), std::move(time_zone), nullptr};
  ASSIGN_OR_RETURN(
      TimePattern compiled,
      TimePattern::Compile(c.pattern, kind == CoercionKind::kPatternToTimestamp, c.time_zone));
  c.compiled = std::make_shared<const TimePattern>(std::move(compiled));
  return c;
}

std::string SchemaPolicy::ToJson() const {
  json list = json::array();
  for (const Coercion& c : coercions) {
    json one = {{"sourceColumn", c.source_column},
                {"targetColumn", c.target_column},
                {"kind", CoercionKindName(c.kind)}};
    if (IsPatternKind(c.kind)) one["pattern"] = c.pattern;
    if (!c.time_zone.empty()) one["timeZone"] = c.time_zone;
    list.push_back(std::move(one));
  }
  json out = {{"mode", additive ? "additive" : "strict"}, {"coercions", list}};
  if (additive) {
    json added = json::array();
    for (const Field& f : add_columns)
      added.push_back({{"name", f.name}, {"type", f.type.ToString()}});
    out["addColumns"] = std::move(added);
  }
  if (!renames.empty()) {  // only then: policies written before it keep their text
    json map = json::array();
    for (const ColumnRename& r : renames) {
      map.push_back({{"sourceColumn", r.source_column}, {"targetColumn", r.target_column}});
    }
    out["columnMap"] = std::move(map);
  }
  return out.dump();
}

Schema SchemaPolicy::Extend(const Schema& table) const {
  Schema out = table;
  for (const Field& f : NewColumns(table)) out.fields.push_back(f);
  return out;
}

std::vector<Field> SchemaPolicy::NewColumns(const Schema& table) const {
  std::vector<Field> out;
  for (const Field& f : add_columns) {
    if (table.IndexOf(f.name) < 0) out.push_back(f);
  }
  return out;
}

Status SchemaPolicy::AddFlag(std::string_view flag) {
  // COLUMN:patternToDate:PATTERN, COLUMN:patternToTimestamp:PATTERN[@ZONE]
  // (a pattern holds colons of its own: the kind's name splits the flag).
  for (CoercionKind kind : {CoercionKind::kPatternToDate, CoercionKind::kPatternToTimestamp}) {
    const std::string infix = ":" + std::string(CoercionKindName(kind)) + ":";
    const size_t at = flag.find(infix);
    if (at == std::string_view::npos || at == 0) continue;
    std::string pattern(flag.substr(at + infix.size()));
    std::string zone;  // timestamps only: a date pattern keeps any '@' as a literal
    if (const size_t sign = pattern.rfind('@');
        kind == CoercionKind::kPatternToTimestamp && sign != std::string::npos) {
      zone = pattern.substr(sign + 1);
      pattern.resize(sign);
    }
    ASSIGN_OR_RETURN(Coercion c, Coercion::WithPattern(std::string(flag.substr(0, at)), kind,
                                                       std::move(pattern), std::move(zone)));
    coercions.push_back(std::move(c));
    return Status::OK();
  }
  const size_t colon = flag.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument(
        "--coerce takes COLUMN:KIND (e.g. occurred_at:iso8601ToTimestamp), or "
        "COLUMN:patternToDate:PATTERN, COLUMN:patternToTimestamp:PATTERN@ZONE");
  }
  ASSIGN_OR_RETURN(CoercionKind kind, ParseCoercionKind(flag.substr(colon + 1)));
  if (IsPatternKind(kind)) {
    return Status::InvalidArgument(
        "--coerce " + std::string(flag) + ": " + std::string(CoercionKindName(kind)) +
        " needs its pattern, as COLUMN:" + std::string(CoercionKindName(kind)) + ":PATTERN");
  }
  const std::string column(flag.substr(0, colon));
  coercions.push_back({column, column, kind});
  return Status::OK();
}

Status SchemaPolicy::CheckAgainst(const Schema& declared) const {
  for (size_t i = 0; i < add_columns.size(); ++i) {
    const Field& f = add_columns[i];
    for (size_t j = 0; j < i; ++j) {
      if (add_columns[j].name == f.name) {
        return Status::InvalidArgument("added column '" + f.name + "' is declared twice");
      }
    }
    const int at = declared.IndexOf(f.name);
    if (at >= 0 && declared.fields[at].type != f.type) {
      return Status::InvalidArgument("added column '" + f.name + "' is declared " +
                                     f.type.ToString() + " but the table has it as " +
                                     declared.fields[at].type.ToString() +
                                     "; additive mode never changes a type");
    }
  }
  const Schema table = Extend(declared);
  RETURN_NOT_OK(table.Validate());
  RETURN_NOT_OK(CheckMappings(table));
  for (size_t i = 0; i < coercions.size(); ++i) {
    const Coercion& c = coercions[i];
    const int at = table.IndexOf(c.target_column);
    if (at < 0) {
      return Status::InvalidArgument("coercion for column '" + c.target_column +
                                     "', which is not in the table");
    }
    const Field& f = table.fields[at];
    if (!Fits(c.kind, f.type.id)) {
      for (const KindName& k : kKinds) {
        if (k.kind == c.kind) {
          return Status::InvalidArgument(std::string(k.name) + " applies to " +
                                         std::string(k.applies_to) + " columns; '" + f.name +
                                         "' is " + f.type.ToString());
        }
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (coercions[j].target_column == c.target_column) {
        return Status::InvalidArgument("column '" + c.target_column +
                                       "' has two coercions; declare one");
      }
    }
  }
  return Status::OK();
}

const Coercion* SchemaPolicy::For(std::string_view column) const {
  for (const Coercion& c : coercions) {
    if (c.target_column == column) return &c;
  }
  return nullptr;
}

Status AppendValue(const Field& field, const Coercion* coercion, std::string_view text,
                   ValueForm form, Column* out) {
  const bool missing =
      form == ValueForm::kJsonNull || (form == ValueForm::kCsvField && text.empty());
  if (missing) return AppendCanonical(field, "", /*quoted=*/false, out);  // null or an error
  if (coercion != nullptr) return AppendCoerced(field, *coercion, text, form, out);
  if (form == ValueForm::kCsvField || form == ValueForm::kCsvQuotedField) {
    return AppendCanonical(field, text, form == ValueForm::kCsvQuotedField, out);
  }
  return AppendJson(field, text, form, out);
}

}  // namespace loam::ingest
