// For the cost test and the benchmarks: a single-table manifest commit with
// no table data behind it (the table's head moves to a new graph commit, at
// the same version, with one journal row).
#pragma once

#include "manifest/manifest.h"

namespace loam::testing {

inline Status PublishHeadOnly(Manifest& manifest, int64_t sid) {
  PublishSpec spec;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    Result<std::optional<TableHead>> found = view.TableHeadOf(sid);
    if (!found.ok()) return found.status();
    if (!*found) return Status::NotFound("no head for table " + std::to_string(sid));
    TableHead head = **found;
    head.head_commit = view.commit_id();
    ManifestRow row;
    row.object_id = TableVersionId(sid, head.inc, head.table_version) + "@" + view.commit_id();
    row.object_type = std::string(object_type::kTableVersion);
    row.table_key = head.table_key;
    row.location = head.location;
    row.table_version = head.table_version;
    row.row_count = head.row_count;
    row.stable_table_id = sid;
    row.incarnation_id = head.inc;
    PublishPlan plan;
    plan.journal = {row};
    plan.upserts = {TableHeadRow(head)};
    return plan;
  };
  return manifest.Publish(spec).status();
}

}  // namespace loam::testing
