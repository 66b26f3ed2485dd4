#include "engine/sidecar_lease.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/status_macros.h"

namespace loam {

SidecarLeases::SidecarLeases(std::shared_ptr<ObjectStore> store, const Clock* clock,
                             int64_t lease_micros)
    : store_(std::move(store)), clock_(clock), lease_micros_(lease_micros) {}

SidecarLeases::~SidecarLeases() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

Result<SidecarLeases::Held> SidecarLeases::PutAndHold(const std::string& key, Sidecar* s) {
  if (lease_micros_ > 0) s->lease_until_micros = clock_->NowMicros() + lease_micros_;
  const std::string text = EncodeSidecar(*s);
  StringSource src(text);
  ASSIGN_OR_RETURN(ObjectMeta meta,
                   store_->Write(key, src, {PutCondition::kIfAbsent, {}, /*durable=*/false}));
  if (lease_micros_ <= 0) return Held();  // nothing to renew
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  held_.emplace(id, Entry{key, *s, meta.etag});
  if (!renewer_.joinable()) renewer_ = std::thread([this] { RenewLoop(); });
  return Held(this, id);
}

void SidecarLeases::Release(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(id);
}

void SidecarLeases::RenewDue() {
  // Renewed outside the lock: a slow store delays no write's start or end.
  // A sidecar released meanwhile may still be renewed once, which only
  // moves its lease (put-if-match never brings back a deleted one).
  std::vector<std::pair<uint64_t, Entry>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clock_->NowMicros();
    for (const auto& [id, e] : held_) {
      if (e.sidecar.lease_until_micros - now <= lease_micros_ * 2 / 3) due.emplace_back(id, e);
    }
  }
  for (auto& [id, e] : due) {
    e.sidecar.lease_until_micros = clock_->NowMicros() + lease_micros_;
    const std::string text = EncodeSidecar(e.sidecar);
    StringSource src(text);
    Result<ObjectMeta> put =
        store_->Write(e.key, src, {PutCondition::kIfMatch, e.etag, /*durable=*/false});
    std::lock_guard<std::mutex> lock(mu_);
    auto held = held_.find(id);
    if (held == held_.end()) continue;  // released meanwhile
    if (put.ok()) {
      held->second.sidecar = e.sidecar;
      held->second.etag = put->etag;
    } else if (put.status().IsNotFound() || put.status().IsAborted()) {
      // Deleted by its writer just before it let go, or settled by recovery
      // (the writer's publish is then decided by the journal): not renewed.
      LOAM_LOG_DEBUG("write sidecar '{}' is gone or replaced: no longer renewed", e.key);
      held_.erase(held);
    } else {
      LOAM_LOG_WARN("renewing write sidecar '{}' failed: {}", e.key, put.status().ToString());
    }
  }
}

void SidecarLeases::RenewLoop() {
  // A lease is renewed between a third and half of the way through.
  const auto period = std::chrono::microseconds(std::max<int64_t>(lease_micros_ / 6, 10'000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // Real time between rounds; which leases are due is read on clock_.
    wake_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    RenewDue();
    lock.lock();
  }
}

}  // namespace loam
