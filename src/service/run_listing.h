// Run ids a page at a time, oldest or newest first, within a time range.
// Run records are `_control/runs/<id>.json` and ids are ULIDs, so key order
// is creation order. A store lists keys ascending only: newest first lists
// windows of time backwards from the upper bound, widening a window while it
// is empty and narrowing it while it is too dense (docs/service.md).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "loam/object_store.h"
#include "loam/result.h"

namespace loam::service {

struct RunIdRange {
  std::string after;      // exclusive: a run id, "" = none
  std::string before;     // exclusive: a run id, "" = none
  int64_t since_ms = -1;  // inclusive creation time, -1 = none
  int64_t until_ms = -1;  // exclusive creation time, -1 = none
};

class RunIdScanner {
 public:
  // `prefix` is the runs' key prefix ("<root>/_control/runs/"); `now_ms`
  // places the first window of a newest-first scan.
  RunIdScanner(ObjectStore* store, std::string prefix, const RunIdRange& range, bool newest_first,
               int64_t now_ms);

  // The next run id in order; nullopt once the range is exhausted.
  [[nodiscard]] Result<std::optional<std::string>> Next();

 private:
  Status FillAscending();
  Status FillDescending();
  Result<bool> BelowOldest(const std::string& key);
  std::string IdOf(const std::string& key) const;

  ObjectStore* store_;
  const std::string prefix_;
  const bool newest_first_;
  std::string low_;   // exclusive key bound (start-after)
  std::string high_;  // exclusive key bound, "" = none
  int64_t high_ms_;   // newest first: the upper end of the next window
  int64_t span_ms_ = 60'000;
  std::optional<std::string> oldest_;  // newest first: the oldest key, once read
  std::deque<std::string> ids_;
  bool done_ = false;
};

}  // namespace loam::service
