#include "ingest/where_clause.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/status_macros.h"
#include "ingest/coercion.h"
#include "ingest/text_value.h"

namespace loam::ingest {

Result<Value> ParseFieldValue(const Field& field, const std::string& text) {
  Column c(field.type);
  Field nullable = field;
  nullable.nullable = true;
  Status s = AppendValue(nullable, nullptr, text, ValueForm::kCsvQuotedField, &c);
  if (!s.ok())
    return Status::InvalidArgument("value for column '" + field.name + "': " + s.message());
  return c.GetValue(0);
}

Result<Predicate> ParseWhere(const Schema& schema, const std::string& text) {
  std::istringstream in(text);
  std::string col, op;
  in >> col >> op;
  std::string value;
  std::getline(in, value);
  while (!value.empty() && value.front() == ' ') value.erase(0, 1);
  const int at = schema.IndexOf(col);
  if (at < 0) return Status::InvalidArgument("where: no column '" + col + "'");
  if (op == "is" && value == "null") return Predicate::IsNull(col);
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
      value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  static const std::pair<const char*, CompareOp> kOps[] = {{"=", CompareOp::kEq},
                                                           {"<", CompareOp::kLt},
                                                           {"<=", CompareOp::kLe},
                                                           {">", CompareOp::kGt},
                                                           {">=", CompareOp::kGe}};
  for (const auto& [name, cmp] : kOps) {
    if (op == name) {
      ASSIGN_OR_RETURN(Value v, ParseFieldValue(schema.fields[at], value));
      return Predicate{col, cmp, {v}};
    }
  }
  return Status::InvalidArgument(
      "where takes \"COLUMN OP VALUE\" with OP one of = < <= > >=, or \"COLUMN is null\"");
}

void AppendJsonLine(const Schema& schema, const RecordBatch& batch, int64_t row, std::string* out) {
  std::string value;
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    value.clear();
    FormatJsonValue(batch.columns[c], row, &value);
    *out += c ? "," : "{";
    *out += nlohmann::json(schema.fields[c].name).dump();
    *out += ":";
    *out += value;
  }
  *out += batch.columns.empty() ? "{}\n" : "}\n";
}

}  // namespace loam::ingest
