// CommittedForks: the table forks this process last committed and published,
// by table directory and fork, so the next write there starts from the
// version it already holds instead of reading it back (a GET of the version
// file and a HEAD of the next one). An entry may be stale: another process
// may have written the next version. The write's put-if-absent of that
// version then fails, the write forgets the entry and opens the fork again;
// so only writes that try again on their own (WorkspaceEngine::CommitsOnAnyVersion)
// start from a remembered version.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/thread_annotations.h"
#include "dataset/dataset.h"

namespace loam {

class CommittedForks {
 public:
  // At most this many forks are remembered (the oldest entry goes first).
  static constexpr size_t kMaxEntries = 64;

  // The fork at `version`, when that is the version remembered.
  std::optional<Dataset> Find(const std::string& table_root, const std::string& fork,
                              uint64_t version) const;
  void Remember(const std::string& table_root, const std::string& fork, const Dataset& latest);
  void Forget(const std::string& table_root, const std::string& fork);

 private:
  using Key = std::pair<std::string, std::string>;
  struct Entry {
    Dataset latest;
    uint64_t stamp;  // insertion order, for eviction
  };
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_ LOAM_GUARDED_BY(mu_);
  uint64_t next_stamp_ LOAM_GUARDED_BY(mu_) = 0;
};

}  // namespace loam
