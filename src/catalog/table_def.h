// Table definitions and grants: the workspace catalog, kept as mutable rows
// (`table_def:<sid>`, `grant:<sid>:<principal>`) in the manifest's catalog
// partition, and the identity counter that mints stable ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loam/object_store.h"
#include "loam/types.h"
#include "manifest/rows.h"

namespace loam {

// Role (loam/types.h) by its stored name: "reader", "writer", "admin".
std::string_view RoleName(Role r);
Result<Role> ParseRole(std::string_view name);

struct TableDef {
  int64_t sid = 0;  // the public Table node id: stable across renames and writes
  int64_t inc = 0;  // incarnation: new when a dropped name is created again
  std::string name;
  Schema schema;
  std::vector<std::string> keys;  // upsert key columns; may be empty
  int64_t schema_version = 1;
  int64_t renames = 0;  // renames so far (sequence of table_rename rows)

  std::string SchemaHash() const;
  std::string Location() const { return TableLocation(sid, inc); }
  friend bool operator==(const TableDef&, const TableDef&) = default;
};

// Table names: 1-128 of [A-Za-z0-9_], starting with a letter or '_'.
Status ValidateTableName(std::string_view name);
// A table holds at most this many columns: a load reads at most as many
// fields per record (LoadLimits::max_columns), so a wider table could never
// be loaded. Refused as limit_exceeded, limit "maxTableColumns".
inline constexpr size_t kMaxTableColumns = 1024;
inline constexpr size_t kMaxColumnNameBytes = 256;
// The columns a definition may declare: at most kMaxTableColumns, each named
// by 1 to kMaxColumnNameBytes bytes of UTF-8 with no control character.
// (Checked when a table is defined or a column added; files already written
// are read whatever their names.)
Status ValidateColumns(const Schema& schema, const std::string& table);
// Name, columns, schema and keys (keys exist, are unique, not nullable and
// not json: JSON text has no one spelling to compare keys by).
Status ValidateTableDef(const TableDef& def);
// The key an upsert into `def` matches on. On a keyed table it is the declared
// key: `keys` must be empty or name exactly the declared columns (in any
// order; the declared order is returned), else a row could be inserted whose
// declared key the table holds. On an unkeyed table `keys` (existing columns,
// none twice) is the load's own logical key and must not be empty.
Result<std::vector<std::string>> UpsertKeys(const TableDef& def,
                                            const std::vector<std::string>& keys);

std::string SchemaToJson(const Schema& schema);
Result<Schema> SchemaFromJson(std::string_view text);

ManifestRow TableDefRow(const TableDef& def);
Result<TableDef> ParseTableDef(const ManifestRow& row);

// A table whose schema may grow through additive loads holds this reserved
// principal as a grant (admin): the setting travels, and is audited, like a
// grant. Principals starting with "loam:" are system actors, never users.
inline constexpr std::string_view kAdditiveSchemaPrincipal = "loam:additive-schema";

struct Grant {
  int64_t sid = 0;
  std::string principal;
  Role role = Role::kReader;
  friend bool operator==(const Grant&, const Grant&) = default;
};
ManifestRow GrantRow(const Grant& g);
Result<Grant> ParseGrant(const ManifestRow& row);

// Mints the next identity (stable ids and incarnations share one counter)
// from "<workspace>/_control/identity_counter.json" by compare-and-swap.
// Never returns a value twice, even across branches and crashes.
Result<int64_t> MintIdentity(ObjectStore& store, const std::string& workspace);
// Makes the counter mint only ids above `highest` (an id already in use),
// advancing it by compare-and-swap when it lags. The `next` value it held
// before when it advanced it; nullopt when it was already past `highest`.
Result<std::optional<int64_t>> AdvanceIdentityCounter(ObjectStore& store,
                                                      const std::string& workspace,
                                                      int64_t highest);

}  // namespace loam
