// What the service tells about tables and runs: the shapes its table and
// run-listing calls return (Service::ListTables, ReadRows, ListRuns).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/table_def.h"
#include "ingest/run_record.h"
#include "service/run_view.h"

namespace loam::service {

// A table as a reader sees it.
struct TableInfo {
  std::string name;
  int64_t table_id = 0;
  Schema schema;
  std::vector<std::string> keys;
  int64_t schema_version = 0;
  int64_t table_version = 0;
  int64_t row_count = 0;
  uint64_t manifest_version = 0;  // of the snapshot read
  // The commit that last changed the table: its data, schema, name or
  // grants (the entity tag of GET /v1/tables/{name}).
  std::string head_commit;
  bool additive_schema = false;
  std::vector<Grant> grants;  // only for the owner and admins
};

// The engine names main "" (the service and its API "main").
inline std::string EngineBranchName(const std::string& branch) {
  return branch == "main" ? "" : branch;
}

// A branch as GET /v1/branches shows it ("main" names main).
struct BranchState {
  std::string name;
  std::string parent;             // the branch it was created from ("" for main)
  uint64_t parent_version = 0;    // at that branch's version
  uint64_t version = 0;           // its current manifest version
  bool protected_branch = false;  // only merges change its tables
};

// The table document of POST /v1/tables and `loam table create --schema`:
// {"name", "columns":[{"name","type","nullable"}], "keys":[...]}.
struct TableDocument {
  std::string name;
  Schema schema;
  std::vector<std::string> keys;
};
Result<TableDocument> ParseTableDocument(std::string_view text);

struct RowQuery {
  int64_t limit = -1;             // -1: every row
  std::string where;              // "COL OP VALUE" (ingest/where_clause.h)
  int64_t manifest_version = -1;  // -1: current (time travel otherwise)
  std::string branch = "main";    // of that branch
};

struct RunFilter {
  std::string pipeline_id;      // "" = any
  std::string table;            // a current table's name; "" = any
  std::string state;            // a RunInfo::state; "" = any
  std::string idempotency_key;  // the caller's key; "" = any
  int64_t since_ms = -1;        // created at or after; -1 = any
  int64_t until_ms = -1;        // created before; -1 = any
  bool newest_first = true;
  std::string cursor;  // the last run id of the previous page
  int limit = 100;     // 1..1000
};

struct RunPage {
  std::vector<RunInfo> runs;  // in the filter's order
  std::string next_cursor;    // "" at the end
};

}  // namespace loam::service
