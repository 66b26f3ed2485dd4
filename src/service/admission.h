// Admission: decides, before a run or an idempotency binding exists, whether
// a submission may enter the queue. A refusal is `overloaded` with the limit
// that tripped (detail "limit") and a retry-after (detail
// "retryAfterMillis") computed from the queue and the measured throughput,
// clamped to the published bounds. Each room (the queue, a pipeline's
// concurrency, a pipeline's tiny-run window) keeps a waiting line: its limit
// sees what the room holds plus the requests refused before this one and not
// yet back, so refused clients are told successive times and let in in the
// order they came. The per-principal rate keeps none: a principal's own
// requests are its own crowd.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "loam/result.h"
#include "service/limits.h"
#include "service/waiting_line.h"

namespace loam::service {

// What the durable queue holds (non-terminal runs), as last listed.
struct QueueLoad {
  int64_t runs = 0;
  int64_t bytes = 0;
  // Of those, the runs of at most the small-run lane's size, and their bytes.
  int64_t small_runs = 0;
  int64_t small_bytes = 0;
  std::map<std::string, int64_t> runs_per_pipeline;
};

class Admission {
 public:
  // `workers` take any run; with `small_run_workers` > 0 those take only
  // runs of at most `small_run_bytes` (the small-run lane), and the others
  // take large runs first (Service::TakeQueued).
  Admission(ServiceLimits limits, Clock* clock, int workers, int small_run_workers = 0,
            int64_t small_run_bytes = 0);

  // OK and counted, or `overloaded`. `max_concurrent` is the pipeline's
  // effective limit on its non-terminal runs; `key` is the request's
  // idempotency key, which names its place in the waiting line.
  Status Admit(const std::string& principal, const std::string& key, const std::string& pipeline_id,
               int64_t bytes, int64_t max_concurrent, const QueueLoad& load);
  // The per-principal request rate alone, for requests that create no run
  // (upload creation): OK and a token taken, or `overloaded`.
  Status TakeRequestToken(const std::string& principal);
  // One upload body being received in this process: the slot is held until
  // the UploadSlot is destroyed.
  class UploadSlot {
   public:
    UploadSlot() = default;
    UploadSlot(UploadSlot&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), id_(o.id_) {}
    UploadSlot& operator=(UploadSlot&&) = delete;
    ~UploadSlot();

   private:
    friend class Admission;
    UploadSlot(Admission* owner, std::string id) : owner_(owner), id_(std::move(id)) {}
    Admission* owner_ = nullptr;
    std::string id_;
  };
  // A ticket takes one body at a time (a second while the first arrives is
  // `conflict`) and a principal at most maxReceivingUploadsPerPrincipal
  // (`overloaded`, limit "maxReceivingUploads").
  Result<UploadSlot> ReceiveUpload(const std::string& upload_id, const std::string& principal);
  // Upload bodies being received now.
  size_t ReceivingUploads() const;
  // A run finished: feeds the throughput estimate.
  void RecordRun(int64_t bytes, int64_t micros);
  // Measured bytes per second and mean run time (defaults until measured).
  double BytesPerSecond() const;
  double MeanRunMicros() const;
  // Places held in all waiting lines.
  size_t Waiting() const;

  // What this process's admission holds for one principal and the tiny-run
  // windows of some pipelines, as its next Admit would see it (GET /v1/usage).
  struct PrincipalUsage {
    double request_tokens = 0;  // the principal's bucket now (the burst when unused)
    int64_t receiving_uploads = 0;
    std::map<std::string, int64_t> tiny_runs_last_minute;  // per pipeline asked for
  };
  PrincipalUsage UsageOf(const std::string& principal,
                         const std::vector<std::string>& pipeline_ids) const;

 private:
  int64_t RetryAfterMillis(double wait_micros) const;  // clamped to the published bounds
  // `overloaded` with details limit, retryAfterMillis, quota (the limit's
  // value) and, for a rate, windowSeconds.
  Status Refuse(const std::string& limit, double wait_micros, const std::string& why, int64_t quota,
                int64_t window_seconds = 0) const;
  // Who asks: the place a refusal keeps or gives is `holder`'s, owned by
  // `principal`.
  struct Asker {
    std::string principal;
    std::string holder;
  };
  Status TakeTokenLocked(const std::string& principal, int64_t now);
  // The refusal of each room, or OK.
  Status CheckQueue(const Asker& who, int64_t bytes, const QueueLoad& load, int64_t now);
  Status CheckConcurrency(const Asker& who, const std::string& pipeline_id, int64_t max_concurrent,
                          int64_t bytes, const QueueLoad& load, int64_t now);
  Status CheckTinyWindow(const Asker& who, const std::string& pipeline_id, int64_t now);
  // Unlocked: callers hold `mu_`.
  double BytesPerSecondLocked() const;
  double MeanRunMicrosLocked() const;
  // How long the queue ahead of a new run of `bytes` takes to drain here:
  // each queued run's fixed cost (measured on runs under 1 MiB) plus its
  // bytes at the throughput (measured on runs of 1 MiB and more), over the
  // workers. With a small-run lane, a small run waits for the small runs
  // over the lane's workers, a large one for the large runs over the others.
  double QueueWaitMicrosLocked(const QueueLoad& load, int64_t bytes) const;

  const ServiceLimits limits_;
  Clock* clock_;
  const int workers_;
  const int small_run_workers_;
  const int64_t small_run_bytes_;
  const bool measures_runs_;  // this process runs workers
  mutable std::mutex mu_;
  struct Bucket {
    double tokens = 0;
    int64_t at_micros = 0;
  };
  std::map<std::string, Bucket> buckets_ LOAM_GUARDED_BY(mu_);  // per principal
  // Per pipeline: the times of its tiny runs in the last minute.
  std::map<std::string, std::deque<int64_t>> tiny_ LOAM_GUARDED_BY(mu_);
  // Upload bodies being received: upload id -> its principal; per principal.
  std::map<std::string, std::string> receiving_ LOAM_GUARDED_BY(mu_);
  std::map<std::string, int64_t> receiving_per_principal_ LOAM_GUARDED_BY(mu_);
  double bytes_per_second_ LOAM_GUARDED_BY(mu_) = 0;  // EWMA; 0 = not measured
  double mean_run_micros_ LOAM_GUARDED_BY(mu_) = 0;   // EWMA; 0 = not measured
  double small_run_micros_ LOAM_GUARDED_BY(mu_) = 0;  // EWMA of runs under 1 MiB
  WaitingLine queue_line_ LOAM_GUARDED_BY(mu_){small_run_bytes_};
  std::map<std::string, WaitingLine> concurrency_lines_ LOAM_GUARDED_BY(mu_);  // per pipeline
  std::map<std::string, WaitingLine> tiny_lines_ LOAM_GUARDED_BY(mu_);         // per pipeline
};

}  // namespace loam::service
