#include "catalog/table_def.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/hash.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/utf8.h"

namespace loam {
namespace {
using json = nlohmann::json;

json SchemaJson(const Schema& s) {
  json cols = json::array();
  for (const Field& f : s.fields) {
    cols.push_back({{"name", f.name}, {"type", f.type.ToString()}, {"nullable", f.nullable}});
  }
  return cols;
}

Result<Schema> SchemaFromJsonValue(const json& cols) {
  if (!cols.is_array()) return Status::InvalidArgument("columns must be a JSON array");
  Schema s;
  for (const json& c : cols) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("type") ||
        !c["type"].is_string()) {
      return Status::InvalidArgument("each column needs a string name and type");
    }
    ASSIGN_OR_RETURN(DataType t, DataType::Parse(c["type"].get<std::string>()));
    if (c.contains("nullable") && !c["nullable"].is_boolean()) {
      return Status::InvalidArgument("column 'nullable' must be true or false");
    }
    const bool nullable = c.contains("nullable") ? c["nullable"].get<bool>() : true;
    s.fields.push_back({c["name"].get<std::string>(), t, nullable});
  }
  return s;
}

Status Malformed(const ManifestRow& row, const std::string& why) {
  return Status::DataLoss("catalog row '" + row.object_id + "' is malformed: " + why);
}
}  // namespace

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kReader:
      return "reader";
    case Role::kWriter:
      return "writer";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

Result<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kReader, Role::kWriter, Role::kAdmin}) {
    if (name == RoleName(r)) return r;
  }
  return Status::InvalidArgument("unknown role '" + std::string(name) +
                                 "' (reader, writer, admin)");
}

std::string TableDef::SchemaHash() const {
  json j = {{"columns", SchemaJson(schema)}, {"keys", keys}};
  return Hash128Hex(j.dump());
}

Status ValidateTableName(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("invalid table name '" + std::string(name) +
                                   "': " + std::string(why));
  };
  if (name.empty() || name.size() > 128) return bad("must be 1 to 128 characters");
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return bad("must start with a letter or '_'");
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return bad("use only letters, digits and '_'");
    }
  }
  return Status::OK();
}

namespace {

// JSON text has many spellings of one value ({"a":1} and { "a": 1 }), so
// rows could differ in a json key and still mean the same.
Status CheckKeyType(const Field& f) {
  if (f.type.id != TypeId::kJson) return Status::OK();
  return Status::InvalidArgument("key column '" + f.name +
                                 "' is json, which cannot be a key: JSON text has many spellings "
                                 "of one value; key on another column");
}

}  // namespace

Status ValidateColumns(const Schema& schema, const std::string& table) {
  if (schema.fields.size() > kMaxTableColumns) {
    return Status::InvalidArgument("table '" + table + "' would have " +
                                   std::to_string(schema.fields.size()) +
                                   " columns, over the limit of " +
                                   std::to_string(kMaxTableColumns) + " (maxTableColumns)")
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxTableColumns");
  }
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const std::string& name = schema.fields[i].name;
    const auto control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
    if (name.empty() || name.size() > kMaxColumnNameBytes || !IsValidUtf8(name) ||
        std::any_of(name.begin(), name.end(), control)) {
      return Status::InvalidArgument("table '" + table + "': column " + std::to_string(i + 1) +
                                     " has a name that is not 1 to " +
                                     std::to_string(kMaxColumnNameBytes) +
                                     " bytes of UTF-8 without control characters");
    }
  }
  return Status::OK();
}

Status ValidateTableDef(const TableDef& def) {
  RETURN_NOT_OK(ValidateTableName(def.name));
  if (def.schema.fields.empty()) {
    return Status::InvalidArgument("table '" + def.name + "' needs at least one column");
  }
  RETURN_NOT_OK(ValidateColumns(def.schema, def.name));
  RETURN_NOT_OK_CTX(def.schema.Validate(), "table '" + def.name + "'");
  std::set<std::string> seen;
  for (const std::string& k : def.keys) {
    const int i = def.schema.IndexOf(k);
    if (i < 0) {
      return Status::InvalidArgument("key column '" + k + "' is not a column of table '" +
                                     def.name + "'");
    }
    if (!seen.insert(k).second)
      return Status::InvalidArgument("key column '" + k + "' is listed twice");
    if (def.schema.fields[i].nullable) {
      return Status::InvalidArgument("key column '" + k + "' must be declared not-null");
    }
    RETURN_NOT_OK(CheckKeyType(def.schema.fields[i]));
  }
  return Status::OK();
}

Result<std::vector<std::string>> UpsertKeys(const TableDef& def,
                                            const std::vector<std::string>& keys) {
  if (keys.empty()) {
    if (def.keys.empty()) {
      return Status::InvalidArgument(
          "an upsert into '" + def.name +
          "' needs key columns: the table declares none, so the load names them "
          "(--key, keyColumns)");
    }
    return def.keys;
  }
  std::set<std::string> seen;
  for (const std::string& k : keys) {
    const int i = def.schema.IndexOf(k);
    if (i < 0) {
      return Status::InvalidArgument("key column '" + k + "' is not in table '" + def.name + "'");
    }
    RETURN_NOT_OK(CheckKeyType(def.schema.fields[i]));
    if (!seen.insert(k).second) {
      return Status::InvalidArgument("key column '" + k + "' is listed twice");
    }
  }
  if (!def.keys.empty() && seen != std::set<std::string>(def.keys.begin(), def.keys.end())) {
    std::string declared;
    for (const std::string& k : def.keys) declared += (declared.empty() ? "" : ", ") + k;
    return Status::InvalidArgument("an upsert into '" + def.name +
                                   "' must match on its declared key (" + declared +
                                   "), not on other columns");
  }
  return def.keys.empty() ? keys : def.keys;  // the declared order
}

std::string SchemaToJson(const Schema& schema) { return SchemaJson(schema).dump(); }

Result<Schema> SchemaFromJson(std::string_view text) {
  json j = ParseJson(text);
  if (j.is_discarded()) return Status::InvalidArgument("schema is not valid JSON");
  return SchemaFromJsonValue(j);
}

ManifestRow TableDefRow(const TableDef& def) {
  ManifestRow r;
  r.object_id = TableDefId(def.sid);
  r.object_type = std::string(object_type::kTableDef);
  r.table_key = def.name;
  r.location = def.Location();
  r.stable_table_id = def.sid;
  r.incarnation_id = def.inc;
  r.metadata = json{{"columns", SchemaJson(def.schema)},
                    {"keys", def.keys},
                    {"schema_version", def.schema_version},
                    {"schema_hash", def.SchemaHash()},
                    {"renames", def.renames}}
                   .dump();
  return r;
}

Result<TableDef> ParseTableDef(const ManifestRow& row) {
  if (row.object_type != object_type::kTableDef) return Malformed(row, "not a table definition");
  json j = ParseJson(row.metadata);
  if (j.is_discarded() || !j.is_object() || !j.contains("columns") || !j.contains("keys") ||
      !j["keys"].is_array() || !j.contains("schema_version") ||
      !j["schema_version"].is_number_integer() || !j.contains("schema_hash") ||
      !j["schema_hash"].is_string() || !j.contains("renames") ||
      !j["renames"].is_number_integer()) {
    return Malformed(row, "metadata lacks columns, keys, schema_version, schema_hash or renames");
  }
  if (!row.stable_table_id || !row.incarnation_id) return Malformed(row, "no identity");
  TableDef d;
  d.sid = *row.stable_table_id;
  d.inc = *row.incarnation_id;
  d.name = row.table_key;
  Result<Schema> s = SchemaFromJsonValue(j["columns"]);
  if (!s.ok()) return Malformed(row, s.status().message());
  d.schema = *std::move(s);
  for (const json& k : j["keys"]) {
    if (!k.is_string()) return Malformed(row, "key names must be strings");
    d.keys.push_back(k.get<std::string>());
  }
  d.schema_version = j["schema_version"].get<int64_t>();
  d.renames = j["renames"].get<int64_t>();
  if (row.object_id != TableDefId(d.sid)) return Malformed(row, "id disagrees with its stable id");
  if (d.SchemaHash() != j["schema_hash"].get<std::string>()) {
    return Malformed(row, "schema hash does not match its columns");
  }
  return d;
}

ManifestRow GrantRow(const Grant& g) {
  ManifestRow r;
  r.object_id = GrantId(g.sid, g.principal);
  r.object_type = std::string(object_type::kGrant);
  r.stable_table_id = g.sid;
  r.metadata = json{{"principal", g.principal}, {"role", RoleName(g.role)}}.dump();
  return r;
}

Result<Grant> ParseGrant(const ManifestRow& row) {
  json j = ParseJson(row.metadata);
  if (row.object_type != object_type::kGrant || j.is_discarded() || !j.is_object() ||
      !j.contains("principal") || !j["principal"].is_string() || !j.contains("role") ||
      !j["role"].is_string() || !row.stable_table_id) {
    return Malformed(row, "not a grant");
  }
  Grant g;
  g.sid = *row.stable_table_id;
  g.principal = j["principal"].get<std::string>();
  Result<Role> role = ParseRole(j["role"].get<std::string>());
  if (!role.ok()) return Malformed(row, role.status().message());
  g.role = *role;
  return g;
}

namespace {

std::string IdentityCounterKey(const std::string& workspace) {
  return (workspace.empty() ? std::string() : workspace + "/") + "_control/identity_counter.json";
}

// One compare-and-swap step on the counter: `step(next)` says what to store
// (nullopt: leave it). A missing counter reads as next = 1. Returns the `next`
// it read once a step's write (or no write) stands.
Result<int64_t> UpdateIdentityCounter(ObjectStore& store, const std::string& key,
                                      const std::function<std::optional<int64_t>(int64_t)>& step) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    ObjectMeta meta;
    Result<std::string> text = store.Get(key, &meta);
    int64_t next = 1;
    if (!text.status().IsNotFound()) {
      RETURN_NOT_OK(text.status());
      json j = ParseJson(*text);
      if (j.is_discarded() || !j.contains("next") || !j["next"].is_number_integer()) {
        return Status::DataLoss("'" + key + "' is malformed");
      }
      next = j["next"].get<int64_t>();
    }
    const std::optional<int64_t> to = step(next);
    if (!to) return next;
    const std::string body = json{{"next", *to}}.dump();
    Result<ObjectMeta> put =
        text.ok() ? store.PutIfMatch(key, body, meta.etag) : store.PutIfAbsent(key, body);
    if (put.ok()) return next;
    const Status& st = put.status();
    if (!st.IsAborted() && !st.IsNotFound() && !st.IsAlreadyExists()) return st;
  }
  return Status::Aborted("could not update the identity counter against concurrent writers");
}

}  // namespace

Result<int64_t> MintIdentity(ObjectStore& store, const std::string& workspace) {
  return UpdateIdentityCounter(store, IdentityCounterKey(workspace),
                               [](int64_t next) { return next + 1; });
}

Result<std::optional<int64_t>> AdvanceIdentityCounter(ObjectStore& store,
                                                      const std::string& workspace,
                                                      int64_t highest) {
  ASSIGN_OR_RETURN(int64_t was,
                   UpdateIdentityCounter(store, IdentityCounterKey(workspace),
                                         [highest](int64_t next) -> std::optional<int64_t> {
                                           if (next > highest) return std::nullopt;
                                           return highest + 1;
                                         }));
  if (was > highest) return std::optional<int64_t>();
  return std::optional<int64_t>(was);
}

}  // namespace loam
