// Write sidecars: `_recovery/<operation_id>.json`, written before a write's
// first durable effect and deleted after its manifest publish. A sidecar left
// behind tells recovery what the write intended (docs/format/manifest.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loam/result.h"

namespace loam {

// A run of a group commit and how many fragments it appended.
struct SidecarRun {
  std::string id;
  int64_t fragments = 0;
  // > 0 when the group's rows were joined (Dataset::JoinStaged): the run's
  // rows, which follow its predecessors' in the fragments the commit added
  // (`fragments` is then 0).
  int64_t rows = 0;
  friend bool operator==(const SidecarRun&, const SidecarRun&) = default;
};

struct Sidecar {
  std::string operation_id;
  std::string branch;              // manifest branch ("" = main)
  std::string commit_id;           // graph commit of the write
  std::string rollback_commit_id;  // graph commit of its rollback
  std::string run_id;
  std::string actor;
  int64_t created_micros = 0;
  // While its writer runs, the sidecar's lease is renewed (SidecarLeases);
  // past its end the writer is taken to be gone. 0: written by a build
  // before leases (due a grace period after creation).
  int64_t lease_until_micros = 0;
  // The one table the write changes.
  int64_t sid = 0;
  int64_t inc = 0;
  std::string fork;                // the table dataset's branch written ("" = its main)
  std::string owner_branch;        // manifest branch named in the new head
  int64_t expected_version = 0;    // head version before the write
  std::string expected_owner_ref;  // head owner before the write
  // The transaction id the table commit is made under, chosen before it, so
  // recovery can tell this write's effect from any other.
  std::string planned_txn;
  // Schema change carried by the write (add column): the new definition row's metadata.
  std::string new_table_def;  // "" when the schema is unchanged
  // A group commit (several runs appending to the table in one commit):
  // every run it records, in the order their fragments were appended;
  // `run_id` is the first's. Empty otherwise. Written as format 2, which
  // builds that know only one run per sidecar refuse to recover.
  std::vector<SidecarRun> group;

  bool Records(const std::string& run) const;

  friend bool operator==(const Sidecar&, const Sidecar&) = default;
};

// When recovery may settle `s`: once its lease is over or once it is
// `grace_micros` old, whichever comes first (a renewed lease never holds
// a sidecar past the grace period, the bound before leases).
int64_t SidecarDueAt(const Sidecar& s, int64_t grace_micros);

std::string SidecarKey(const std::string& workspace, const std::string& operation_id);
std::string SidecarPrefix(const std::string& workspace);
// True for "<prefix><operation_id>.json" (not for the unreadable/ folder).
bool IsSidecarKey(const std::string& workspace, const std::string& key);
// Where an unreadable sidecar is moved aside, once.
std::string UnreadableSidecarKey(const std::string& workspace, const std::string& key);
std::string EncodeSidecar(const Sidecar& s);
// DataLoss for malformed JSON; FailedPrecondition for a newer format.
Result<Sidecar> DecodeSidecar(std::string_view text, const std::string& key);

}  // namespace loam
