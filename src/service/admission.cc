#include "service/admission.h"

#include <algorithm>
#include <cmath>

namespace loam::service {
namespace {

constexpr double kDefaultBytesPerSecond = 32.0 * (1 << 20);
constexpr double kDefaultRunMicros = 1'000'000;
// Runs of at least this many bytes measure the throughput; smaller ones,
// whose time is mostly fixed cost, measure the cost of a run.
constexpr int64_t kThroughputRunBytes = 1 << 20;
constexpr double kEwma = 0.2;
constexpr int64_t kMinute = 60'000'000;

}  // namespace

Admission::Admission(ServiceLimits limits, Clock* clock, int workers)
    : limits_(std::move(limits)),
      clock_(clock),
      workers_(std::max(1, workers)),
      measures_runs_(workers > 0) {}

double Admission::BytesPerSecond() const {
  std::lock_guard lock(mu_);
  return bytes_per_second_ > 0 ? bytes_per_second_ : kDefaultBytesPerSecond;
}

double Admission::MeanRunMicros() const {
  std::lock_guard lock(mu_);
  return mean_run_micros_ > 0 ? mean_run_micros_ : kDefaultRunMicros;
}

void Admission::RecordRun(int64_t bytes, int64_t micros) {
  if (micros <= 0) return;
  std::lock_guard lock(mu_);
  const auto ewma = [](double old, double x) {
    return old > 0 ? (1 - kEwma) * old + kEwma * x : x;
  };
  if (bytes >= kThroughputRunBytes) {
    bytes_per_second_ =
        ewma(bytes_per_second_, static_cast<double>(bytes) * 1e6 / static_cast<double>(micros));
  } else {
    small_run_micros_ = ewma(small_run_micros_, static_cast<double>(micros));
  }
  mean_run_micros_ = ewma(mean_run_micros_, static_cast<double>(micros));
}

double Admission::QueueWaitMicros(const QueueLoad& load) const {
  double per_run;
  {
    std::lock_guard lock(mu_);
    per_run = small_run_micros_ > 0 ? small_run_micros_ : kDefaultRunMicros;
  }
  return (static_cast<double>(load.runs) * per_run +
          static_cast<double>(load.bytes) / BytesPerSecond() * 1e6) /
         workers_;
}

Status Admission::Refuse(const std::string& limit, double wait_micros,
                         const std::string& why) const {
  const int64_t millis =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil(wait_micros / 1000)),
                          limits_.retry_after_min_millis, limits_.retry_after_max_millis);
  return Status::ResourceExhausted("overloaded (" + limit + "): " + why +
                                   "; nothing was created: " +
                                   "repeat the same request with the same idempotency key after " +
                                   std::to_string(millis) + " ms")
      .WithErrorCode(ErrorCode::kOverloaded)
      .WithDetail("limit", limit)
      .WithDetail("retryAfterMillis", std::to_string(millis));
}

Status Admission::Admit(const std::string& principal, const std::string& pipeline_id, int64_t bytes,
                        int64_t max_concurrent, const QueueLoad& load) {
  const int64_t now = clock_->NowMicros();
  const double rate = BytesPerSecond();
  const double run_micros = MeanRunMicros();
  const double wait = QueueWaitMicros(load);
  std::lock_guard lock(mu_);
  // Request rate per principal: a token bucket.
  Bucket& b = buckets_[principal];
  if (b.at_micros == 0) b.tokens = limits_.principal_burst;
  b.tokens =
      std::min(limits_.principal_burst, b.tokens + static_cast<double>(now - b.at_micros) / 1e6 *
                                                       limits_.principal_requests_per_second);
  b.at_micros = now;
  if (b.tokens < 1) {
    return Refuse("principalRequestRate",
                  (1 - b.tokens) / limits_.principal_requests_per_second * 1e6,
                  "principal '" + principal + "' sends more than " +
                      std::to_string(limits_.principal_requests_per_second) + " requests/s");
  }
  if (load.runs >= limits_.max_queued_runs) {
    const double drain =
        static_cast<double>(load.runs - limits_.max_queued_runs + 1) * run_micros / workers_;
    return Refuse("maxQueuedRuns", drain,
                  std::to_string(load.runs) + " runs are queued (at most " +
                      std::to_string(limits_.max_queued_runs) + ")");
  }
  if (load.bytes + bytes > limits_.max_queued_bytes) {
    const double excess = static_cast<double>(load.bytes + bytes - limits_.max_queued_bytes);
    return Refuse("maxQueuedBytes", excess / rate * 1e6,
                  std::to_string(load.bytes) + " bytes are queued (at most " +
                      std::to_string(limits_.max_queued_bytes) + " with this run's " +
                      std::to_string(bytes) + ")");
  }
  const double max_wait = static_cast<double>(limits_.max_queue_wait_seconds) * 1e6;
  // A process without workers measures no runs: it cannot estimate the wait.
  if (measures_runs_ && limits_.max_queue_wait_seconds > 0 && wait > max_wait) {
    return Refuse("maxQueueWait", wait - max_wait,
                  "a new run would wait about " + std::to_string(std::lround(wait / 1e6)) +
                      " s for the " + std::to_string(load.runs) + " runs queued ahead (at most " +
                      std::to_string(limits_.max_queue_wait_seconds) + " s)");
  }
  auto it = load.runs_per_pipeline.find(pipeline_id);
  const int64_t running = it == load.runs_per_pipeline.end() ? 0 : it->second;
  if (running >= max_concurrent) {
    return Refuse("maxConcurrentRuns", run_micros,
                  "pipeline " + pipeline_id + " has " + std::to_string(running) +
                      " runs not finished (at most " + std::to_string(max_concurrent) + ")");
  }
  if (bytes < limits_.tiny_run_bytes) {
    std::deque<int64_t>& times = tiny_[pipeline_id];
    while (!times.empty() && times.front() <= now - kMinute) times.pop_front();
    if (static_cast<int64_t>(times.size()) >= limits_.tiny_runs_per_minute) {
      return Refuse("tinyRunsPerMinute", static_cast<double>(times.front() + kMinute - now),
                    "pipeline " + pipeline_id + " had " + std::to_string(times.size()) +
                        " runs under " + std::to_string(limits_.tiny_run_bytes) +
                        " bytes in the last minute; batch small files into larger runs");
    }
    times.push_back(now);
  }
  b.tokens -= 1;
  return Status::OK();
}

}  // namespace loam::service
