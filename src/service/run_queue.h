// The durable run queue: one empty object per non-terminal run,
// "<root>/_control/queue/<run_id>.<pipeline_id>.<bytes>", so that one LIST
// tells every process what is waiting, in submission order (run ids are
// ULIDs), per pipeline and how many bytes (admission needs no GETs). The run
// record stays the truth about state; an entry only says "look at this run".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loam/object_store.h"

namespace loam::service {

struct QueueEntry {
  std::string run_id;
  std::string pipeline_id;
  int64_t bytes = 0;
  int64_t enqueued_micros = 0;  // the object's mtime
  std::string key;
};

class RunQueue {
 public:
  RunQueue(std::shared_ptr<ObjectStore> store, std::string workspace_root);
  // Idempotent.
  Status Enqueue(const std::string& run_id, const std::string& pipeline_id, int64_t bytes);
  Status Remove(const QueueEntry& entry);
  // Every entry, oldest run first; keys that are not entries are skipped.
  Result<std::vector<QueueEntry>> List() const;

 private:
  std::string prefix_;
  std::shared_ptr<ObjectStore> store_;
};

}  // namespace loam::service
