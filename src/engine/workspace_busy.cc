// Writes that find their table busy: another writer's commit to it is in
// progress (a table version above the published head, younger than the
// recovery grace) or lands first (the table's compare-and-swap is lost).
// An append of staged rows that expects no table version does not depend on
// what that commit adds, so it tries again from a fresh read of the
// manifest, keeping its staged files, instead of handing a conflict back to
// a loader that would validate and stage its rows again. Several processes
// appending to one table then take turns instead of failing each other. A
// compaction committing a plan made earlier (its fragments written, checked
// again at the commit) tries again the same way.
//
// A table commit that did not answer is decided here too: a version another
// writer put where ours was meant to go is a lost race like any other.
#include <algorithm>

#include "common/backoff.h"
#include "engine/workspace.h"

namespace loam {
namespace {

constexpr int kBusyAttempts = 12;
constexpr int kLookAgainAttempts = 3;

// Short and jittered: the other commit is about one publish from done, and
// writers that met must not come back in step.
void PauseAfterBusy(int attempt) { Backoff{2'000, 50'000, 0.25}.Sleep(attempt); }

}  // namespace

Result<Dataset> WorkspaceEngine::LookAgainAtUnanswered(const TableHead& head, const Sidecar& s,
                                                       std::optional<int64_t> base_version,
                                                       Result<Dataset> committed,
                                                       bool* unknown) const {
  *unknown = false;
  if (!base_version || !CommitOutcomeUnknown(committed.status())) return committed;
  OpenSpec spec;
  spec.branch = s.fork;
  spec.version = static_cast<uint64_t>(*base_version + 1);
  for (int attempt = 1; attempt <= kLookAgainAttempts; ++attempt) {
    PauseAfterBusy(attempt);  // the store just failed twice: give it a moment
    Result<Dataset> at =
        Dataset::Open(store_, TableRoot(head.location), spec, options_.manifest.dataset);
    if (at.ok() && at->state().txn.id == s.planned_txn) return at;
    if (at.ok()) {
      return Status::Aborted("version " + std::to_string(spec.version.value()) +
                             " was committed concurrently");
    }
    // Absent is no answer either: a put that did not answer may still land.
  }
  *unknown = true;
  return committed;
}

bool WorkspaceEngine::CommitsOnAnyVersion(const WriteRequest& r) {
  if (r.mode == WriteMode::kCompact) return r.compaction_plan != nullptr && !r.expected_version;
  return r.mode == WriteMode::kAppend && r.staged_rows && !r.expected_version &&
         r.add_columns.empty();
}

Result<WriteResult> WorkspaceEngine::Write(const WriteRequest& request) {
  for (int attempt = 1;; ++attempt) {
    bool busy = false;
    Result<WriteResult> written = WriteOnce(request, &busy);
    if (!busy || !CommitsOnAnyVersion(request) || attempt == kBusyAttempts) return written;
    PauseAfterBusy(attempt);
  }
}

std::vector<Result<WriteResult>> WorkspaceEngine::WriteGroup(
    const std::vector<const WriteRequest*>& requests) {
  const bool retries = std::all_of(requests.begin(), requests.end(),
                                   [](const WriteRequest* r) { return CommitsOnAnyVersion(*r); });
  for (int attempt = 1;; ++attempt) {
    bool busy = false;
    std::vector<Result<WriteResult>> written = WriteGroupOnce(requests, &busy);
    if (!busy || !retries || attempt == kBusyAttempts) return written;
    PauseAfterBusy(attempt);
  }
}

}  // namespace loam
