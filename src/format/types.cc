#include "loam/types.h"

#include <charconv>
#include <set>

namespace loam {

std::string DataType::ToString() const {
  switch (id) {
    case TypeId::kBool: return "bool";
    case TypeId::kInt32: return "int32";
    case TypeId::kInt64: return "int64";
    case TypeId::kFloat64: return "float64";
    case TypeId::kString: return "string";
    case TypeId::kBinary: return "binary";
    case TypeId::kDate: return "date";
    case TypeId::kTimestamp: return "timestamp";
    case TypeId::kDecimal:
      return "decimal(" + std::to_string(precision) + "," + std::to_string(scale) + ")";
    case TypeId::kJson: return "json";
  }
  return "unknown(" + std::to_string(static_cast<int>(id)) + ")";
}

Result<DataType> DataType::Parse(std::string_view text) {
  for (DataType t : {Bool(), Int32(), Int64(), Float64(), String(), Binary(), Date(), Timestamp(),
                     Json()}) {
    if (text == t.ToString()) return t;
  }
  constexpr std::string_view kDec = "decimal(";
  if (text.starts_with(kDec) && text.ends_with(")")) {
    std::string_view args = text.substr(kDec.size(), text.size() - kDec.size() - 1);
    const size_t comma = args.find(',');
    int p = -1, s = -1;
    if (comma != std::string_view::npos) {
      auto r1 = std::from_chars(args.data(), args.data() + comma, p);
      auto r2 = std::from_chars(args.data() + comma + 1, args.data() + args.size(), s);
      if (r1.ec != std::errc() || r1.ptr != args.data() + comma || r2.ec != std::errc() ||
          r2.ptr != args.data() + args.size()) {
        p = -1;
      }
    }
    if (p >= 1 && p <= 38 && s >= 0 && s <= p) {
      return Decimal(static_cast<uint8_t>(p), static_cast<uint8_t>(s));
    }
    return Status::InvalidArgument("invalid decimal type '" + std::string(text) +
                                   "': use decimal(P,S) with 1 <= P <= 38 and 0 <= S <= P");
  }
  return Status::InvalidArgument(
      "unknown type '" + std::string(text) +
      "'; types are bool int32 int64 float64 string binary date timestamp decimal(P,S) json");
}

Status DataType::Validate() const {
  if (id < TypeId::kBool || id > TypeId::kJson) {
    return Status::InvalidArgument("unknown type id " + std::to_string(static_cast<int>(id)));
  }
  if (id == TypeId::kDecimal) {
    if (precision < 1 || precision > 38 || scale > precision) {
      return Status::InvalidArgument("invalid " + ToString() +
                                     ": need 1 <= precision <= 38, scale <= precision");
    }
  } else if (precision != 0 || scale != 0) {
    return Status::InvalidArgument("precision/scale set on non-decimal type " + ToString());
  }
  return Status::OK();
}

int DataType::FixedWidth() const {
  switch (id) {
    case TypeId::kBool: return 1;
    case TypeId::kInt32:
    case TypeId::kDate: return 4;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
    case TypeId::kFloat64: return 8;
    case TypeId::kDecimal: return 16;
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kJson: return 0;
  }
  return 0;
}

int Schema::IndexOf(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Status Schema::Validate() const {
  std::set<std::string_view> seen;
  for (const Field& f : fields) {
    if (f.name.empty()) return Status::InvalidArgument("schema has a column with an empty name");
    if (!seen.insert(f.name).second) {
      return Status::InvalidArgument("schema has two columns named '" + f.name + "'");
    }
    Status s = f.type.Validate();
    if (!s.ok()) return std::move(s).WithContext("column '" + f.name + "'");
  }
  return Status::OK();
}

std::string Schema::ToString() const {
  std::string out = "(";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ", ";
    out += fields[i].name + " " + fields[i].type.ToString();
    if (!fields[i].nullable) out += " not null";
  }
  return out + ")";
}

}  // namespace loam
