#include "service/run_queue.h"

#include "common/status_macros.h"
#include "common/ulid.h"

namespace loam::service {

RunQueue::RunQueue(std::shared_ptr<ObjectStore> store, std::string workspace_root)
    : prefix_((workspace_root.empty() ? "" : workspace_root + "/") + "_control/queue/"),
      store_(std::move(store)) {}

Status RunQueue::Enqueue(const std::string& run_id, const std::string& pipeline_id, int64_t bytes) {
  Status s =
      store_->PutIfAbsent(prefix_ + run_id + "." + pipeline_id + "." + std::to_string(bytes), "{}")
          .status();
  return s.IsAlreadyExists() ? Status::OK() : s;
}

// Relaxed: an entry that comes back after a power loss names a terminal run
// (or none), which the next queue pass removes again.
Status RunQueue::Remove(const QueueEntry& entry) { return store_->DeleteRelaxed(entry.key); }

Result<std::vector<QueueEntry>> RunQueue::List() const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects, store_->ListAll(prefix_));
  std::vector<QueueEntry> out;
  for (const ObjectInfo& o : objects) {
    const std::string name = o.key.substr(prefix_.size());
    const size_t a = name.find('.');
    const size_t b = a == std::string::npos ? a : name.find('.', a + 1);
    if (b == std::string::npos) continue;
    QueueEntry e;
    e.run_id = name.substr(0, a);
    e.pipeline_id = name.substr(a + 1, b - a - 1);
    e.bytes = std::strtoll(name.c_str() + b + 1, nullptr, 10);
    e.enqueued_micros = o.meta.mtime_micros;
    e.key = o.key;
    if (!Ulid::Parse(e.run_id).ok()) continue;
    out.push_back(std::move(e));
  }
  return out;  // LIST order is key order: run ids ascend
}

}  // namespace loam::service
