// Leases of write sidecars. A write's sidecar names the end of its lease
// (`Sidecar::lease_until_micros`); while the write runs, a background
// thread of its process renews the lease between a third and half of the
// way through, so a live writer's sidecar is not due (until the grace
// period, SidecarDueAt). A writer that crashed stops renewing:
// its sidecar is due for recovery once the lease ends, not a whole grace
// period after it was made (recovery.cc).
//
// Renewal is a put-if-match on the etag the last put returned: a sidecar
// that recovery settled (deleted) or replaced is never written back.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "engine/sidecar.h"
#include "loam/object_store.h"
#include "loam/result.h"

namespace loam {

class SidecarLeases {
 public:
  // `lease_micros`: how long a sidecar stays alive without a renewal, on
  // `clock` (the writers' clocks must agree to well within it); 0: sidecars
  // carry no lease and nothing is renewed. Rounds
  // of renewal run at most every 10 ms: shorter leases are for tests of
  // crashed writers.
  SidecarLeases(std::shared_ptr<ObjectStore> store, const Clock* clock, int64_t lease_micros);
  ~SidecarLeases();  // stops renewing; held sidecars are left as they are
  SidecarLeases(const SidecarLeases&) = delete;
  SidecarLeases& operator=(const SidecarLeases&) = delete;

  // A sidecar being renewed; renewal stops when it is destroyed (before or
  // after the writer deletes the sidecar: a renewal never recreates one).
  class Held {
   public:
    Held() = default;
    Held(Held&& other) noexcept : owner_(other.owner_), id_(other.id_) { other.owner_ = nullptr; }
    Held& operator=(Held&&) = delete;
    Held(const Held&) = delete;
    ~Held() {
      if (owner_ != nullptr) owner_->Release(id_);
    }

   private:
    friend class SidecarLeases;
    Held(SidecarLeases* owner, uint64_t id) : owner_(owner), id_(id) {}
    SidecarLeases* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  // Sets `s->lease_until_micros`, puts `s` at `key` (put-if-absent, not
  // fsynced: a sidecar lost with the machine only turns a roll-forward into
  // a rollback of an effect no reader ever saw, see WorkspaceEngine::OpenFork) and
  // renews it until the result is destroyed.
  Result<Held> PutAndHold(const std::string& key, Sidecar* s);

  // Renews every held sidecar whose lease is a third over; the thread
  // calls it, and tests that move the clock by hand. A renewal refused by
  // the store (the sidecar is gone: deleted by its writer, or settled by
  // recovery) drops the sidecar from the held ones; an I/O error leaves it
  // for the next round.
  void RenewDue();

  int64_t lease_micros() const { return lease_micros_; }

 private:
  struct Entry {
    std::string key;
    Sidecar sidecar;
    std::string etag;
  };

  void Release(uint64_t id);
  void RenewLoop();

  const std::shared_ptr<ObjectStore> store_;
  const Clock* const clock_;
  const int64_t lease_micros_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<uint64_t, Entry> held_ LOAM_GUARDED_BY(mu_);
  uint64_t next_id_ LOAM_GUARDED_BY(mu_) = 1;
  bool stop_ LOAM_GUARDED_BY(mu_) = false;
  std::thread renewer_;  // started by the first PutAndHold
};

}  // namespace loam
