#include "engine/sidecar_lease.h"

#include <algorithm>
#include <chrono>

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
  s->lease_until_micros = clock_->NowMicros() + lease_micros_;
  const std::string text = EncodeSidecar(*s);
  StringSource src(text);
  ASSIGN_OR_RETURN(ObjectMeta meta,
                   store_->Write(key, src, {PutCondition::kIfAbsent, {}, /*durable=*/false}));
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
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = held_.begin(); it != held_.end();) {
    Entry& e = it->second;
    const int64_t now = clock_->NowMicros();
    if (e.sidecar.lease_until_micros - now > lease_micros_ * 2 / 3) {
      ++it;
      continue;
    }
    Sidecar renewed = e.sidecar;
    renewed.lease_until_micros = now + lease_micros_;
    const std::string text = EncodeSidecar(renewed);
    StringSource src(text);
    Result<ObjectMeta> put =
        store_->Write(e.key, src, {PutCondition::kIfMatch, e.etag, /*durable=*/false});
    if (put.ok()) {
      e.sidecar = std::move(renewed);
      e.etag = put->etag;
    } else if (put.status().IsNotFound() || put.status().IsAborted()) {
      // Settled by recovery while its writer ran: the writer's own publish
      // is then decided by the journal, as for any lost answer.
      LOAM_LOG_WARN("write sidecar '{}' was settled by recovery while its writer ran", e.key);
      it = held_.erase(it);
      continue;
    } else {
      LOAM_LOG_WARN("renewing write sidecar '{}' failed: {}", e.key, put.status().ToString());
    }
    ++it;
  }
}

void SidecarLeases::RenewLoop() {
  const auto period = std::chrono::microseconds(std::max<int64_t>(lease_micros_ / 3, 1000));
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
