// BranchMerger: the steps of WorkspaceEngine::Merge (docs/branches.md).
// Internal to the engine: planning and checks in branch_merge.cc, the table
// commits and the one publish in branch_merge_publish.cc.
//
// The base of a table is where the source and the target last agreed on it:
// the fork point, or the heads the last merge that took it recorded (the
// `merge-base:<source id>:<n>` run commit names, for every table any merge
// of the source took so far, the source's head it took and the target's head
// it wrote). A table the source changed since its base moves to the target
// when the target's head still holds the base's rows; otherwise the merge is
// a conflict naming it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/workspace.h"

namespace loam {

// A table's head as a merge compares it (grants, which only move
// head_commit, are no change of it); nullopt: no live table.
using MergeHead = std::optional<TableHead>;

class BranchMerger {
 public:
  BranchMerger(WorkspaceEngine& ws, const MergeRequest& req) : ws_(ws), req_(req) {}
  Result<MergeResult> Run();
  // The merge committed on `into` under `merge_id`, if any: AlreadyExists-free
  // look-up for answering a retry before anything else is done.
  static Result<std::optional<MergeResult>> Find(const Manifest& m, const std::string& into,
                                                 const std::string& merge_id,
                                                 const std::string& source);

  // Where the merge `seq` of the source (by id) into `into` left off; seq 0
  // is the fork point (an empty table map: every base is the fork point's).
  struct Base {
    int64_t seq = 0;              // merges of this source so far (0: none)
    uint64_t source_version = 0;  // the source version merged last (or its fork point)
    // Per table any merge took: the source's head taken, the target's written.
    std::map<int64_t, std::pair<MergeHead, MergeHead>> tables;
  };
  static Result<Base> BaseAt(const Manifest& m, const std::string& into,
                             const std::string& source_id, int64_t seq, uint64_t fork_version);
  // The highest seq with a record (O(log merges) exact look-ups).
  static Result<int64_t> LastSeq(const Manifest& m, const std::string& into,
                                 const std::string& source_id);
  // The seq (1..last) whose record the commit at `manifest_version` wrote
  // (records are written in seq order, so by bisection); nullopt: none.
  static Result<std::optional<int64_t>> SeqAt(const Manifest& m, const std::string& into,
                                              const std::string& source_id, int64_t last,
                                              uint64_t manifest_version);
  // Whether `now` holds the rows of `base`: the same incarnation, name and
  // schema, and every version since on its fork a compaction or a restore of
  // one that does (a write the manifest refused, rolled back).
  static Result<bool> SameRowsSince(const WorkspaceEngine& ws, const TableHead& base,
                                    const TableHead& now);
  // The rows of `content` committed as the next version of `fork_head`'s
  // table on fork `fork` (unpublished); its version.
  static Result<int64_t> AdoptOnFork(WorkspaceEngine& ws, const TableHead& fork_head,
                                     const std::string& fork, const TableHead& content,
                                     std::optional<ForkReset>* reset, uint64_t* copied);
  // Best effort: `version`, committed by AdoptOnFork, undone by a restore of
  // the head's (which the next write there records). One left behind is reset
  // by age like any unpublished version.
  static void RollBackVersion(WorkspaceEngine& ws, const TableHead& fork_head,
                              const std::string& fork, int64_t version, const std::string& why);
  // The journal row of a version a merge (or its revert, `key`) published.
  static ManifestRow VersionRow(const TableDef& def, const TableHead& next,
                                const std::optional<ForkReset>& reset, const char* key,
                                const std::string& id);

 private:
  // A table the merge changes on the target.
  struct Change {
    std::string kind;                    // "updated", "created", "dropped"
    const TableState* source = nullptr;  // in source_ (nullptr: dropped)
    const TableState* target = nullptr;  // in target_ (nullptr: created)
    bool data = false;                   // the source's rows move to the target's fork
    TableHead fork_head;                 // what the target's fork holds before
    int64_t version = 0;                 // the target fork's version of them, once committed
    std::optional<ForkReset> reset;
    int64_t sid() const { return (source ? source : target)->def.sid; }
    const std::string& name() const { return (source ? source : target)->def.name; }
    // The target's head version after the merge.
    int64_t FinalVersion() const;
    // The target's head after the merge as a base records it (nullopt: dropped).
    MergeHead FinalHead(const std::string& target_id) const;
    // The target's definition after the merge (not dropped): the source's,
    // its counters continuing the target's journal (a rename is the target's
    // next; a schema change takes a version the target never had).
    TableDef FinalDef() const;
  };

  // branch_merge.cc
  Status Resolve();
  Result<Base> LastMerge() const;
  Result<Snapshot> ForkPoint() const;
  Status RunChecks() const;
  Status RunCheck(const MergeCheck& c) const;
  Status Plan(const Snapshot& fork_point);
  Status CheckNames(std::vector<std::string>* conflicts) const;
  Status PreAuthorize() const;
  // branch_merge_publish.cc
  Status CommitTables();
  Status CommitTable(Change& c);
  void RollBack();
  Result<PublishPlan> Build(PublishView& view) const;
  Status BuildOne(PublishView& view, const Change& c, PublishPlan* plan) const;
  Status Authorize(PublishView& view, const Change& c) const;
  Status NameStillFree(PublishView& view, const Change& c) const;
  WriteMode ModeOf(const Change& c) const;
  Result<MergeResult> Publish();
  MergeResult Answer(uint64_t manifest_version, const std::string& commit_id) const;
  std::string Detail() const;
  std::string BaseDetail() const;

  WorkspaceEngine& ws_;
  const MergeRequest& req_;
  std::string merge_id_;
  std::string source_id_;
  std::string target_id_;
  uint64_t fork_version_ = 0;
  std::string commit_id_;
  Base base_;
  Snapshot source_;
  Snapshot target_;
  std::vector<Change> changes_;
  uint64_t copied_bytes_ = 0;
};

// A snapshot's live tables by stable id, and the one with `sid` (nullptr: none).
std::map<int64_t, const TableState*> BySid(const Snapshot& s);
const TableState* At(const std::map<int64_t, const TableState*>& m, int64_t sid);

// What merges write and read in their run commits.
std::string MergeRunId(const std::string& merge_id);
std::string MergeBaseRunId(const std::string& source_id, int64_t seq);
std::string BranchName(const std::string& engine_branch);  // "" -> "main"
bool SameHead(const MergeHead& a, const MergeHead& b);
nlohmann::json HeadJson(const MergeHead& h);
MergeHead HeadFromJson(const nlohmann::json& j);
// The run commit `run_id` committed on `into` itself (a branch's journal
// holds its parent's rows up to its fork point too).
Result<std::optional<ManifestRow>> OwnRunCommit(const Manifest& m, const std::string& into,
                                                const std::string& run_id);
// The graph commit a run commit row names ("" when it names none).
std::string CommitOf(const ManifestRow& row);

}  // namespace loam
