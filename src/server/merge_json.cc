#include "server/merge_json.h"

namespace loam::server {
namespace {

using nlohmann::json;

json TablesJson(const std::vector<MergedTable>& merged) {
  json tables = json::array();
  for (const MergedTable& t : merged) {
    json e = {{"name", t.name}, {"change", t.change}, {"tableVersion", t.table_version}};
    if (t.row_count) e["rowCount"] = *t.row_count;
    tables.push_back(std::move(e));
  }
  return tables;
}

}  // namespace

json MergeJson(const std::string& branch, const std::string& into, const MergeResult& r) {
  return {{"mergeId", r.merge_id},
          {"branch", branch},
          {"into", into},
          {"workspaceVersion", r.manifest_version},
          {"commitId", r.commit_id},
          {"sourceVersion", r.source_version},
          {"alreadyMerged", r.already_merged},
          {"copiedBytes", r.copied_bytes},
          {"tables", TablesJson(r.tables)}};
}

json MergeRevertJson(const std::string& into, const MergeRevertResult& r) {
  return {{"mergeId", r.merge_id},
          {"into", into},
          {"workspaceVersion", r.manifest_version},
          {"commitId", r.commit_id},
          {"alreadyReverted", r.already_reverted},
          {"tables", TablesJson(r.tables)}};
}

}  // namespace loam::server
