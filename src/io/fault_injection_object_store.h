// FaultInjectionObjectStore: wraps any store and misbehaves on command.
//
// Rules match calls by operation and key substring; a rule lets `skip`
// matching calls through, then fires `times` times (each eligible call firing
// with `probability`, drawn from a seeded generator, so a run replays exactly
// given the same seed and call order). Firing either fails the call with the
// rule's status or "crashes" the store:
//   kCrashBefore  the call is dropped, as if the process died just before it;
//   kCrashAfter   the call is applied, then the process "dies" (the caller
//                 sees Unavailable and cannot know the call landed);
//   kLoseReply    the call is applied and its reply is lost: the caller sees
//                 the rule's status and lives on (the rule's hook, if any,
//                 runs after the call, before the caller hears back).
// Once crashed, every later write is dropped and returns Unavailable; reads
// still pass through, so a test can inspect what a dead process left behind
// (or open the base store, as a restarted process would).
//
// Power loss: a crash keeps every call that landed, as a process death does.
// With TrackUnsyncedWrites(), LosePower() also undoes what a machine losing
// power may lose: writes made without durability (a put with
// PutOptions::durable = false, DeleteRelaxed) that no durable write or delete
// of the same key followed. Each such key, drawn from the seeded generator,
// keeps its last write, or goes back to what it held before the first
// unsynced one (an unsynced new object vanishes, a relaxed delete comes
// back), or holds its last write truncated, or empty.
//
// A machine's page cache outlives the process that wrote through it:
// SaveUnsynced() hands the unsynced writes to a later process's store
// (AdoptUnsynced), so its power loss undoes them too (loam_power_loss keeps
// them in a file between commands).
//
// Modelled on leveldb's fault-injection Env and RocksDB's FaultInjectionTestFS.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "io/forwarding_object_store.h"

namespace loam {

using OpMask = uint32_t;
inline constexpr OpMask kAllOps = (1u << kObjectOpCount) - 1;
OpMask MaskOf(std::initializer_list<ObjectOp> ops);
OpMask WriteOpMask();  // put variants and delete

// kRunHook calls the rule's hook just before the matching call, which then
// proceeds normally: a deterministic way to interleave another writer at an
// exact point of a protocol (like RocksDB's sync points, at the I/O level).
enum class FaultAction { kFail, kCrashBefore, kCrashAfter, kLoseReply, kRunHook };

struct FaultRule {
  static constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

  std::string name;  // for Fired() / Matched()
  OpMask ops = kAllOps;
  std::string key_contains;  // "" matches every key
  uint64_t skip = 0;         // matching calls let through before the rule is armed
  uint64_t times = 1;        // firings before the rule is spent
  double probability = 1.0;  // chance that an armed rule fires on a matching call
  FaultAction action = FaultAction::kFail;
  Status status = Status::Unavailable("injected fault");
  // With kRunHook (before the call) or kLoseReply (after it); runs without
  // the store's lock held.
  std::function<void()> hook;

  // The Nth (1-based) call matching `ops` and `key_contains` fails with `status`.
  static FaultRule FailNth(std::string name, OpMask ops, uint64_t n, Status status,
                           std::string key_contains = "");
  // Runs `hook` before the Nth (1-based) matching call.
  static FaultRule HookAt(std::string name, OpMask ops, uint64_t n, std::function<void()> hook,
                          std::string key_contains = "");
  // The Nth (1-based) matching call is applied but answers `status`; `after`
  // (may be empty) runs once it has landed, as another process would.
  static FaultRule LoseReplyAt(std::string name, OpMask ops, uint64_t n, Status status,
                               std::function<void()> after, std::string key_contains = "");
  // The process "dies" at the Nth (1-based) matching call.
  static FaultRule CrashAt(std::string name, OpMask ops, uint64_t n, FaultAction action,
                           std::string key_contains = "");
};

class FaultInjectionObjectStore final : public ForwardingObjectStore {
 public:
  explicit FaultInjectionObjectStore(std::shared_ptr<ObjectStore> base, uint64_t seed = 0)
      : ForwardingObjectStore(std::move(base)), rng_(seed) {}

  void AddRule(FaultRule rule);
  void ClearRules();
  uint64_t Fired(std::string_view rule_name) const;
  uint64_t Matched(std::string_view rule_name) const;

  // Every call of `ops` sleeps base + uniform[0, jitter] first. Simulated
  // latency only; never used for synchronisation.
  void SetLatency(OpMask ops, std::chrono::microseconds base, std::chrono::microseconds jitter);

  void Crash();
  bool crashed() const;

  // From now on, remembers each unsynced write and what its key held before
  // (a read of the base store per unsynced write).
  void TrackUnsyncedWrites();
  // Crashes the store, then applies a power loss to the base store (above).
  // Returns the number of keys that lost their last write; `from_earlier`
  // (if given) counts those an adopted earlier process wrote first.
  Result<int> LosePower(int* from_earlier = nullptr);

  // The unsynced writes remembered, as bytes ("loam-unsynced 1": per key,
  // its name and what it held before and after, each length-prefixed or
  // absent). Not a workspace format: it never enters a store.
  std::string SaveUnsynced() const;
  // Starts tracking with the unsynced writes of `saved` as an earlier
  // process's. InvalidArgument if `saved` is not SaveUnsynced()'s.
  Status AdoptUnsynced(std::string_view saved);

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  Status DeleteRelaxed(std::string_view key) override;
  std::string Describe() const override { return "faulty(" + base_->Describe() + ")"; }

 private:
  struct RuleState {
    FaultRule rule;
    uint64_t matched = 0;
    uint64_t fired = 0;
  };
  // What to do with one call, decided before it runs.
  struct Decision {
    bool drop = false;         // return `status` without calling the base store
    bool crash_after = false;  // call the base store, then crash
    bool lose_reply = false;   // call the base store, run `after`, answer `status`
    std::function<void()> after;
    std::function<void()> hook;  // run before the call
    Status status;
  };

  // A key's unsynced writes: its content before the first (nullopt: no
  // object) and after the last (nullopt: deleted).
  struct Unsynced {
    std::optional<std::string> before, after;
    bool earlier = false;  // first written by an adopted earlier process
  };
  bool tracking() const;
  // Before an unsynced write of `key`: what it holds now.
  std::optional<std::string> Before(std::string_view key);
  // After a write of `key` landed: unsynced (with what it held before) or
  // durable (which makes the key's earlier unsynced writes durable too).
  void NoteWrite(std::string_view key, bool unsynced, std::optional<std::string> before);

  Decision Decide(ObjectOp op, std::string_view key);
  // Runs `call` under the decision for (op, key); `call` returns a Status or Result.
  template <typename Call>
  auto Run(ObjectOp op, std::string_view key, Call&& call) -> decltype(call());

  mutable std::mutex mu_;
  std::vector<RuleState> rules_ LOAM_GUARDED_BY(mu_);
  std::mt19937_64 rng_ LOAM_GUARDED_BY(mu_);
  bool crashed_ LOAM_GUARDED_BY(mu_) = false;
  bool track_unsynced_ LOAM_GUARDED_BY(mu_) = false;
  std::map<std::string, Unsynced, std::less<>> unsynced_ LOAM_GUARDED_BY(mu_);
  OpMask latency_ops_ LOAM_GUARDED_BY(mu_) = 0;
  std::chrono::microseconds latency_base_ LOAM_GUARDED_BY(mu_){0};
  std::chrono::microseconds latency_jitter_ LOAM_GUARDED_BY(mu_){0};
};

}  // namespace loam
