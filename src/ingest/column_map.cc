// SchemaPolicy's column mappings: input columns loaded into table columns
// of other names (its "columnMap", and coercions whose source differs from
// their target).
#include <map>
#include <set>

#include "ingest/coercion.h"

namespace loam::ingest {

std::vector<ColumnRename> SchemaPolicy::Mappings() const {
  std::vector<ColumnRename> all = renames;
  for (const Coercion& c : coercions) {
    if (c.source_column != c.target_column) all.push_back({c.source_column, c.target_column});
  }
  return all;
}

std::string SchemaPolicy::TargetOf(std::string_view input_column) const {
  for (const ColumnRename& r : renames) {
    if (r.source_column == input_column) return r.target_column;
  }
  for (const Coercion& c : coercions) {
    if (c.source_column == input_column) return c.target_column;
  }
  return std::string(input_column);
}

Status SchemaPolicy::CheckMappings(const Schema& table) const {
  std::set<std::string> sources;
  std::map<std::string, std::string> source_of;  // target -> its source
  for (const ColumnRename& r : Mappings()) {
    if (r.source_column.empty() || r.target_column.empty()) {
      return Status::InvalidArgument("column map: a column name is empty");
    }
    if (table.IndexOf(r.target_column) < 0) {
      return Status::InvalidArgument("column map: '" + r.source_column + "' maps to '" +
                                     r.target_column + "', which is not in the table");
    }
    if (!sources.insert(r.source_column).second) {
      return Status::InvalidArgument("column map: input column '" + r.source_column +
                                     "' is mapped twice; map it once");
    }
    auto [it, fresh] = source_of.emplace(r.target_column, r.source_column);
    if (!fresh) {
      return Status::InvalidArgument("column map: '" + it->second + "' and '" + r.source_column +
                                     "' both map to column '" + r.target_column +
                                     "'; map one of them");
    }
  }
  return Status::OK();
}

Status SchemaPolicy::AddRenameFlag(std::string_view flag) {
  const size_t eq = flag.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == flag.size()) {
    return Status::InvalidArgument(
        "--map takes SOURCE=TARGET: the input's column, then the table's (e.g. \"Order ID=id\")");
  }
  renames.push_back({std::string(flag.substr(0, eq)), std::string(flag.substr(eq + 1))});
  return Status::OK();
}

}  // namespace loam::ingest
