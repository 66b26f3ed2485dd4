// MergeReverter: the steps of WorkspaceEngine::RevertMerge (docs/branches.md).
//
// A merge's commit is the only change between the target's version before
// it and its own, so the tables whose heads differ there are exactly the
// merge's. Each goes back when its head on the target is still the one the
// merge wrote (or holds its rows: compacted since): a table the merge
// updated takes its content before the merge as its fork's next version
// (and its name and schema back, as new rename and schema rows), a table it
// created is dropped. One publish carries every head, so a revert is never
// half-applied; it records `merge-revert:<merge id>`, which answers a retry,
// and a new base for the next merge of the source, which takes the reverted
// tables again.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/branch_merge.h"

namespace loam {

class MergeReverter {
 public:
  MergeReverter(WorkspaceEngine& ws, const MergeRevertRequest& req) : ws_(ws), req_(req) {}
  Result<MergeRevertResult> Run();
  // The revert of `merge_id` committed on `into`, if any.
  static Result<std::optional<MergeRevertResult>> Find(const Manifest& m, const std::string& into,
                                                       const std::string& merge_id);

 private:
  // One table the merge changed.
  struct Undo {
    const TableState* before = nullptr;  // before the merge (nullptr: it created the table)
    const TableState* now = nullptr;     // on the target now
    TableDef def;                        // after the revert (before's, renumbered)
    bool data = false;                   // before's rows go back as a new version
    int64_t version = 0;                 // that version, once committed
    std::optional<ForkReset> reset;
    int64_t sid() const { return now->def.sid; }
    // The target's head after the revert (nullopt: dropped).
    MergeHead FinalHead(const std::string& target_id, const std::string& into) const;
  };

  Status Load();
  Status Plan();
  Status PlanOne(const TableState* before, const TableState* merged, const TableState* now,
                 std::vector<std::string>* changed);
  Result<bool> RestoredByRevert(const TableHead& now, const TableHead& merged) const;
  Result<std::optional<TableHead>> RevertedTo(const TableHead& at) const;
  Result<std::optional<TableHead>> RestoredHead(const std::string& merge_id, int64_t sid) const;
  Status CheckNames() const;
  WriteMode ModeOf(const Undo& u) const;
  Status PreAuthorize() const;
  Status CommitTables();
  void RollBack();
  Result<PublishPlan> Build(PublishView& view) const;
  Status BuildOne(PublishView& view, const Undo& u, PublishPlan* plan) const;
  Result<std::optional<std::pair<std::string, std::string>>> NextBase() const;
  std::string Detail() const;
  Result<MergeRevertResult> Publish();
  MergeRevertResult Answer(uint64_t manifest_version, const std::string& commit_id) const;

  WorkspaceEngine& ws_;
  const MergeRevertRequest& req_;
  nlohmann::json record_;  // the merge's run commit
  std::string target_id_;
  std::string commit_id_;
  uint64_t merged_at_ = 0;  // the merge's commit
  Snapshot before_;         // the target before the merge
  Snapshot merged_;         // the target at the merge
  Snapshot now_;
  std::vector<Undo> undos_;
};

std::string MergeRevertRunId(const std::string& merge_id);

}  // namespace loam
