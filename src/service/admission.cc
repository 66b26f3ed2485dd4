#include "service/admission.h"

#include <algorithm>
#include <cmath>

#include "common/status_macros.h"

namespace loam::service {
namespace {

constexpr double kDefaultBytesPerSecond = 32.0 * (1 << 20);
constexpr double kDefaultRunMicros = 1'000'000;
// Runs of at least this many bytes measure the throughput; smaller ones,
// whose time is mostly fixed cost, measure the cost of a run.
constexpr int64_t kThroughputRunBytes = 1 << 20;
constexpr double kEwma = 0.2;
constexpr int64_t kMinute = 60'000'000;

// `holder` leaves `pipeline_id`'s line in `lines`; a line left empty goes.
void LeaveLine(std::map<std::string, WaitingLine>* lines, const std::string& pipeline_id,
               const std::string& holder) {
  const auto line = lines->find(pipeline_id);
  if (line == lines->end()) return;
  line->second.Admitted(holder);
  if (line->second.size() == 0) lines->erase(line);
}

// " and N refused before it", naming the places ahead in a refusal.
std::string RefusedBefore(int64_t ahead) {
  return ahead == 0 ? "" : " and " + std::to_string(ahead) + " refused before it";
}

}  // namespace

Admission::Admission(ServiceLimits limits, Clock* clock, int workers, int small_run_workers,
                     int64_t small_run_bytes)
    : limits_(std::move(limits)),
      clock_(clock),
      workers_(std::max(1, workers)),
      small_run_workers_(std::max(0, small_run_workers)),
      small_run_bytes_(small_run_bytes),
      measures_runs_(workers > 0 || small_run_workers > 0) {}

double Admission::BytesPerSecond() const {
  std::lock_guard lock(mu_);
  return BytesPerSecondLocked();
}

double Admission::MeanRunMicros() const {
  std::lock_guard lock(mu_);
  return MeanRunMicrosLocked();
}

size_t Admission::Waiting() const {
  std::lock_guard lock(mu_);
  size_t n = queue_line_.size();
  for (const auto& [id, line] : concurrency_lines_) n += line.size();
  for (const auto& [id, line] : tiny_lines_) n += line.size();
  return n;
}

double Admission::BytesPerSecondLocked() const {
  return bytes_per_second_ > 0 ? bytes_per_second_ : kDefaultBytesPerSecond;
}

double Admission::MeanRunMicrosLocked() const {
  return mean_run_micros_ > 0 ? mean_run_micros_ : kDefaultRunMicros;
}

double Admission::QueueWaitMicrosLocked(const QueueLoad& load, int64_t bytes) const {
  const double per_run = small_run_micros_ > 0 ? small_run_micros_ : kDefaultRunMicros;
  int64_t runs = load.runs;
  int64_t queued_bytes = load.bytes;
  int workers = workers_;
  if (small_run_workers_ > 0 && bytes <= small_run_bytes_) {
    runs = load.small_runs;
    queued_bytes = load.small_bytes;
    workers = small_run_workers_;
  } else if (small_run_workers_ > 0) {
    runs -= load.small_runs;
    queued_bytes -= load.small_bytes;
  }
  return (static_cast<double>(runs) * per_run +
          static_cast<double>(queued_bytes) / BytesPerSecondLocked() * 1e6) /
         workers;
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

int64_t Admission::RetryAfterMillis(double wait_micros) const {
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(wait_micros / 1000)),
                             limits_.retry_after_min_millis, limits_.retry_after_max_millis);
}

Status Admission::Refuse(const std::string& limit, double wait_micros, const std::string& why,
                         int64_t quota, int64_t window_seconds) const {
  const int64_t millis = RetryAfterMillis(wait_micros);
  Status s =
      Status::ResourceExhausted("overloaded (" + limit + "): " + why + "; nothing was created: " +
                                "repeat the same request (with the same idempotency key, if "
                                "it has one) after " +
                                std::to_string(millis) + " ms")
          .WithErrorCode(ErrorCode::kOverloaded)
          .WithDetail("limit", limit)
          .WithDetail("retryAfterMillis", std::to_string(millis))
          .WithDetail("quota", std::to_string(quota));
  if (window_seconds > 0) s = s.WithDetail("windowSeconds", std::to_string(window_seconds));
  return s;
}

Status Admission::CheckQueue(const Asker& who, int64_t bytes, const QueueLoad& load, int64_t now) {
  if (bytes > limits_.max_queued_bytes) {
    // It would never fit: no place, and no point in coming back.
    return Status::ResourceExhausted("a run of " + std::to_string(bytes) +
                                     " bytes can never fit the queue's ceiling of " +
                                     std::to_string(limits_.max_queued_bytes) +
                                     " bytes (maxQueuedBytes); nothing was created")
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxQueuedBytes");
  }
  // The queue as this request finds it: what is queued, then the requests
  // refused before it that have not come back yet.
  const WaitingLine::Ahead ahead = queue_line_.AheadOf(who.holder, now);
  QueueLoad seen;  // only the totals: the wait needs no per-pipeline counts
  seen.runs = load.runs + ahead.runs;
  seen.bytes = load.bytes + ahead.bytes;
  seen.small_runs = load.small_runs + ahead.small_runs;
  seen.small_bytes = load.small_bytes + ahead.small_bytes;
  const std::string waiting = RefusedBefore(ahead.runs);
  const double queued = QueueWaitMicrosLocked(seen, bytes);
  const double max_wait = static_cast<double>(limits_.max_queue_wait_seconds) * 1e6;
  Status refused;
  double wait = 0;
  if (seen.runs >= limits_.max_queued_runs) {
    wait = static_cast<double>(seen.runs - limits_.max_queued_runs + 1) * MeanRunMicrosLocked() /
           workers_;
    refused = Refuse("maxQueuedRuns", wait,
                     std::to_string(load.runs) + " runs are queued" + waiting + " (at most " +
                         std::to_string(limits_.max_queued_runs) + ")",
                     limits_.max_queued_runs);
  } else if (seen.bytes + bytes > limits_.max_queued_bytes) {
    wait = static_cast<double>(seen.bytes + bytes - limits_.max_queued_bytes) /
           BytesPerSecondLocked() * 1e6;
    refused = Refuse("maxQueuedBytes", wait,
                     std::to_string(load.bytes) + " bytes are queued" + waiting + " (at most " +
                         std::to_string(limits_.max_queued_bytes) + " with this run's " +
                         std::to_string(bytes) + ")",
                     limits_.max_queued_bytes);
  } else if (measures_runs_ && limits_.max_queue_wait_seconds > 0 && queued > max_wait) {
    // (A process without workers measures no runs: it cannot estimate the wait.)
    wait = queued - max_wait;
    refused =
        Refuse("maxQueueWait", wait,
               "a new run would wait about " + std::to_string(std::lround(queued / 1e6)) +
                   " s for the " + std::to_string(load.runs) + " runs queued ahead" + waiting +
                   " (at most " + std::to_string(limits_.max_queue_wait_seconds) + " s)",
               limits_.max_queue_wait_seconds);
  }
  if (!refused.ok()) {
    queue_line_.Refused(who.holder, who.principal, bytes, now + RetryAfterMillis(wait) * 1000);
  }
  return refused;
}

Status Admission::CheckConcurrency(const Asker& who, const std::string& pipeline_id,
                                   int64_t max_concurrent, int64_t bytes, const QueueLoad& load,
                                   int64_t now) {
  const auto it = load.runs_per_pipeline.find(pipeline_id);
  const int64_t running = it == load.runs_per_pipeline.end() ? 0 : it->second;
  WaitingLine& line = concurrency_lines_[pipeline_id];
  const int64_t ahead = line.AheadOf(who.holder, now).runs;
  if (running + ahead < max_concurrent) return Status::OK();
  // The pipeline's runs are taken to be spread evenly through the queue:
  // one of them finishes every (queue's wait ÷ its runs), and no faster
  // than the workers finish runs.
  const double fastest = MeanRunMicrosLocked() / workers_;
  const double every =
      running > 0
          ? std::max(fastest, QueueWaitMicrosLocked(load, bytes) / static_cast<double>(running))
          : fastest;
  const double wait = static_cast<double>(running + ahead - max_concurrent + 1) * every;
  line.Refused(who.holder, who.principal, 0, now + RetryAfterMillis(wait) * 1000);
  return Refuse("maxConcurrentRuns", wait,
                "pipeline " + pipeline_id + " has " + std::to_string(running) +
                    " runs not finished" + RefusedBefore(ahead) + " (at most " +
                    std::to_string(max_concurrent) + ")",
                max_concurrent);
}

Status Admission::CheckTinyWindow(const Asker& who, const std::string& pipeline_id, int64_t now) {
  std::deque<int64_t>& times = tiny_[pipeline_id];
  while (!times.empty() && times.front() <= now - kMinute) times.pop_front();
  WaitingLine& line = tiny_lines_[pipeline_id];
  const int64_t ahead = line.AheadOf(who.holder, now).runs;
  const int64_t limit = std::max<int64_t>(1, limits_.tiny_runs_per_minute);
  const int64_t taken = static_cast<int64_t>(times.size());
  if (taken + ahead < limit) return Status::OK();
  // Slots free as the window's times leave it, in order, and each goes to
  // the next in line; the free ones now go to those ahead, who take them
  // about now. Place j after those waits for the (j mod limit)-th slot to
  // free, (j div limit) windows later.
  const int64_t j = ahead - (limit - taken);
  const int64_t k = j % limit;
  const int64_t slot = k < taken ? times[k] : now;
  const double wait = static_cast<double>(slot + (j / limit + 1) * kMinute - now);
  line.Refused(who.holder, who.principal, 0, now + RetryAfterMillis(wait) * 1000);
  return Refuse("tinyRunsPerMinute", wait,
                "pipeline " + pipeline_id + " had " + std::to_string(taken) + " runs under " +
                    std::to_string(limits_.tiny_run_bytes) + " bytes in the last minute" +
                    RefusedBefore(ahead) + "; batch small files into larger runs",
                limit, 60);
}

Status Admission::TakeRequestToken(const std::string& principal) {
  const int64_t now = clock_->NowMicros();
  std::lock_guard lock(mu_);
  return TakeTokenLocked(principal, now);
}

Result<Admission::UploadSlot> Admission::ReceiveUpload(const std::string& upload_id,
                                                       const std::string& principal) {
  std::lock_guard lock(mu_);
  if (receiving_.count(upload_id)) {
    return Status::Conflict("upload " + upload_id +
                            " is being received on another connection; a ticket takes one body "
                            "at a time (ask GET /v1/uploads/" +
                            upload_id + " whether it arrived)");
  }
  int64_t& mine = receiving_per_principal_[principal];
  if (mine >= limits_.max_receiving_uploads_per_principal) {
    return Refuse(
        "maxReceivingUploads", 0,
        "this principal's uploads are sending " + std::to_string(mine) + " bodies at once already",
        limits_.max_receiving_uploads_per_principal);
  }
  ++mine;
  receiving_[upload_id] = principal;
  return UploadSlot(this, upload_id);
}

Admission::PrincipalUsage Admission::UsageOf(const std::string& principal,
                                             const std::vector<std::string>& pipeline_ids) const {
  const int64_t now = clock_->NowMicros();
  std::lock_guard lock(mu_);
  PrincipalUsage u;
  u.request_tokens = limits_.principal_burst;
  if (auto b = buckets_.find(principal); b != buckets_.end() && b->second.at_micros != 0) {
    u.request_tokens = std::min(limits_.principal_burst,
                                b->second.tokens + static_cast<double>(now - b->second.at_micros) /
                                                       1e6 * limits_.principal_requests_per_second);
  }
  if (auto r = receiving_per_principal_.find(principal); r != receiving_per_principal_.end()) {
    u.receiving_uploads = r->second;
  }
  for (const std::string& id : pipeline_ids) {
    int64_t n = 0;
    if (auto t = tiny_.find(id); t != tiny_.end()) {
      n = std::count_if(t->second.begin(), t->second.end(),
                        [now](int64_t at) { return now - at < 60'000'000; });
    }
    u.tiny_runs_last_minute[id] = n;
  }
  return u;
}

size_t Admission::ReceivingUploads() const {
  std::lock_guard lock(mu_);
  return receiving_.size();
}

Admission::UploadSlot::~UploadSlot() {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mu_);
  auto it = owner_->receiving_.find(id_);
  if (it == owner_->receiving_.end()) return;
  auto mine = owner_->receiving_per_principal_.find(it->second);
  if (mine != owner_->receiving_per_principal_.end() && --mine->second <= 0) {
    owner_->receiving_per_principal_.erase(mine);
  }
  owner_->receiving_.erase(it);
}

Status Admission::TakeTokenLocked(const std::string& principal, int64_t now) {
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
                      std::to_string(limits_.principal_requests_per_second) + " requests/s",
                  static_cast<int64_t>(limits_.principal_burst),
                  static_cast<int64_t>(
                      std::ceil(limits_.principal_burst / limits_.principal_requests_per_second)));
  }
  // Every request past the rate check costs a token, refused or not: a
  // refusal may hold a place in a line.
  b.tokens -= 1;
  return Status::OK();
}

Status Admission::Admit(const std::string& principal, const std::string& key,
                        const std::string& pipeline_id, int64_t bytes, int64_t max_concurrent,
                        const QueueLoad& load) {
  const int64_t now = clock_->NowMicros();
  std::lock_guard lock(mu_);
  RETURN_NOT_OK(TakeTokenLocked(principal, now));
  // Keys are printable ASCII: the NUL makes the pair unambiguous.
  const Asker who{principal, principal + '\0' + key};
  const bool tiny = bytes < limits_.tiny_run_bytes;
  // A request refused by a later room gives up its places in the earlier
  // ones, whose room it could not use: it would hold back those behind it.
  RETURN_NOT_OK(CheckQueue(who, bytes, load, now));
  if (Status s = CheckConcurrency(who, pipeline_id, max_concurrent, bytes, load, now); !s.ok()) {
    queue_line_.Admitted(who.holder);
    return s;
  }
  if (Status s = tiny ? CheckTinyWindow(who, pipeline_id, now) : Status::OK(); !s.ok()) {
    queue_line_.Admitted(who.holder);
    LeaveLine(&concurrency_lines_, pipeline_id, who.holder);
    return s;
  }
  queue_line_.Admitted(who.holder);
  LeaveLine(&concurrency_lines_, pipeline_id, who.holder);
  LeaveLine(&tiny_lines_, pipeline_id, who.holder);
  if (tiny) tiny_[pipeline_id].push_back(now);
  return Status::OK();
}

}  // namespace loam::service
