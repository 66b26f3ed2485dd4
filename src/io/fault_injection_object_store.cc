#include "io/fault_injection_object_store.h"

#include <thread>

#include "common/coding.h"

namespace loam {
namespace {

constexpr std::string_view kUnsyncedMagic = "loam-unsynced 1\n";

void PutOptional(std::string* out, const std::optional<std::string>& v) {
  PutFixed8(out, v ? 1 : 0);
  if (v) PutLengthPrefixed(out, *v);
}

Result<std::optional<std::string>> OptionalOf(Decoder& in) {
  ASSIGN_OR_RETURN(uint8_t present, in.U8());
  if (present > 1) return in.Corrupt("a presence flag is not 0 or 1");
  if (present == 0) return std::optional<std::string>();
  ASSIGN_OR_RETURN(std::string_view bytes, in.LengthPrefixed());
  return std::optional<std::string>(std::string(bytes));
}

}  // namespace

OpMask MaskOf(std::initializer_list<ObjectOp> ops) {
  OpMask m = 0;
  for (ObjectOp op : ops) m |= 1u << static_cast<int>(op);
  return m;
}

OpMask WriteOpMask() {
  return MaskOf({ObjectOp::kPut, ObjectOp::kPutIfAbsent, ObjectOp::kPutIfMatch, ObjectOp::kDelete});
}

FaultRule FaultRule::FailNth(std::string name, OpMask ops, uint64_t n, Status status,
                             std::string key_contains) {
  FaultRule r;
  r.name = std::move(name);
  r.ops = ops;
  r.key_contains = std::move(key_contains);
  r.skip = n == 0 ? 0 : n - 1;
  r.status = std::move(status);
  return r;
}

FaultRule FaultRule::HookAt(std::string name, OpMask ops, uint64_t n, std::function<void()> hook,
                            std::string key_contains) {
  FaultRule r = FailNth(std::move(name), ops, n, Status::OK(), std::move(key_contains));
  r.action = FaultAction::kRunHook;
  r.hook = std::move(hook);
  return r;
}

FaultRule FaultRule::LoseReplyAt(std::string name, OpMask ops, uint64_t n, Status status,
                                 std::function<void()> after, std::string key_contains) {
  FaultRule r = FailNth(std::move(name), ops, n, std::move(status), std::move(key_contains));
  r.action = FaultAction::kLoseReply;
  r.hook = std::move(after);
  return r;
}

FaultRule FaultRule::CrashAt(std::string name, OpMask ops, uint64_t n, FaultAction action,
                             std::string key_contains) {
  FaultRule r = FailNth(std::move(name), ops, n, Status::Unavailable("simulated crash"),
                        std::move(key_contains));
  r.action = action;
  return r;
}

void FaultInjectionObjectStore::AddRule(FaultRule rule) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.push_back({std::move(rule)});
}

void FaultInjectionObjectStore::ClearRules() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
}

uint64_t FaultInjectionObjectStore::Fired(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& r : rules_) {
    if (r.rule.name == name) n += r.fired;
  }
  return n;
}

uint64_t FaultInjectionObjectStore::Matched(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& r : rules_) {
    if (r.rule.name == name) n += r.matched;
  }
  return n;
}

void FaultInjectionObjectStore::SetLatency(OpMask ops, std::chrono::microseconds base,
                                           std::chrono::microseconds jitter) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_ops_ = ops;
  latency_base_ = base;
  latency_jitter_ = jitter;
}

void FaultInjectionObjectStore::Crash() {
  std::lock_guard<std::mutex> lock(mu_);
  crashed_ = true;
}

bool FaultInjectionObjectStore::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

void FaultInjectionObjectStore::TrackUnsyncedWrites() {
  std::lock_guard<std::mutex> lock(mu_);
  track_unsynced_ = true;
}

bool FaultInjectionObjectStore::tracking() const {
  std::lock_guard<std::mutex> lock(mu_);
  return track_unsynced_;
}

std::optional<std::string> FaultInjectionObjectStore::Before(std::string_view key) {
  Result<std::string> now = base_->Get(key);
  return now.ok() ? std::optional<std::string>(*std::move(now)) : std::nullopt;
}

void FaultInjectionObjectStore::NoteWrite(std::string_view key, bool unsynced,
                                          std::optional<std::string> before) {
  std::optional<std::string> after;
  if (unsynced) after = Before(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = unsynced_.find(key);
  if (!unsynced) {
    if (it != unsynced_.end()) unsynced_.erase(it);
    return;
  }
  if (it == unsynced_.end()) it = unsynced_.emplace(std::string(key), Unsynced{before, {}}).first;
  it->second.after = std::move(after);
}

Result<int> FaultInjectionObjectStore::LosePower(int* from_earlier) {
  std::map<std::string, Unsynced, std::less<>> lost;
  std::vector<uint64_t> draws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    crashed_ = true;
    lost.swap(unsynced_);
    // Mixed (splitmix64's finalizer): the first outputs of generators with
    // nearby small seeds share their low bits.
    for (size_t i = 0; i < lost.size(); ++i) {
      uint64_t z = rng_();
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      draws.push_back(z ^ (z >> 31));
    }
  }
  int changed = 0;
  if (from_earlier != nullptr) *from_earlier = 0;
  size_t i = 0;
  for (const auto& [key, u] : lost) {
    const uint64_t draw = draws[i++];
    std::optional<std::string> now;
    switch (draw % 4) {
      case 0:  // the last write survives
        continue;
      case 1:  // back to before the first unsynced write
        now = u.before;
        break;
      case 2:  // truncated
        if (!u.after || u.after->empty()) continue;
        now = u.after->substr(0, (draw >> 8) % u.after->size());
        break;
      default:  // empty
        if (!u.after) continue;
        now = std::string();
        break;
    }
    if (now == u.after) continue;
    ++changed;
    if (from_earlier != nullptr && u.earlier) ++*from_earlier;
    if (now) {
      RETURN_NOT_OK(base_->Put(key, *now).status());
    } else {
      RETURN_NOT_OK(base_->Delete(key));
    }
  }
  return changed;
}

std::string FaultInjectionObjectStore::SaveUnsynced() const {
  std::string out(kUnsyncedMagic);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, u] : unsynced_) {
    PutLengthPrefixed(&out, key);
    PutOptional(&out, u.before);
    PutOptional(&out, u.after);
  }
  return out;
}

Status FaultInjectionObjectStore::AdoptUnsynced(std::string_view saved) {
  if (saved.substr(0, kUnsyncedMagic.size()) != kUnsyncedMagic)
    return Status::InvalidArgument("not a list of unsynced writes (no \"loam-unsynced 1\")");
  Decoder in(saved.substr(kUnsyncedMagic.size()), "the list of unsynced writes");
  std::map<std::string, Unsynced, std::less<>> adopted;
  while (!in.done()) {
    Result<std::string_view> key = in.LengthPrefixed();
    Result<std::optional<std::string>> before =
        key.ok() ? OptionalOf(in) : Result<std::optional<std::string>>(key.status());
    Result<std::optional<std::string>> after =
        before.ok() ? OptionalOf(in) : Result<std::optional<std::string>>(before.status());
    if (!after.ok()) return Status::InvalidArgument(after.status().message());
    adopted[std::string(*key)] = Unsynced{*std::move(before), *std::move(after), true};
  }
  std::lock_guard<std::mutex> lock(mu_);
  track_unsynced_ = true;
  // A key this store wrote unsynced since keeps its own last write, and goes
  // back to what it held before the earlier process's first one.
  for (auto& [key, u] : adopted) {
    auto [it, fresh] = unsynced_.try_emplace(key, u);
    if (!fresh) {
      it->second.before = std::move(u.before);
      it->second.earlier = true;
    }
  }
  return Status::OK();
}

FaultInjectionObjectStore::Decision FaultInjectionObjectStore::Decide(ObjectOp op,
                                                                      std::string_view key) {
  std::chrono::microseconds delay{0};
  Decision d;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const OpMask bit = 1u << static_cast<int>(op);
    if (latency_ops_ & bit) {
      delay = latency_base_;
      if (latency_jitter_.count() > 0) {
        delay += std::chrono::microseconds(rng_() % (latency_jitter_.count() + 1));
      }
    }
    if (crashed_ && IsWriteOp(op)) {
      d.drop = true;
      d.status = Status::Unavailable("simulated crash: " + std::string(ObjectOpName(op)) + " of '" +
                                     std::string(key) + "' dropped");
    } else {
      for (RuleState& r : rules_) {
        if (!(r.rule.ops & bit)) continue;
        if (!r.rule.key_contains.empty() &&
            key.find(r.rule.key_contains) == std::string_view::npos) {
          continue;
        }
        ++r.matched;
        if (r.matched <= r.rule.skip || r.fired >= r.rule.times) continue;
        if (r.rule.probability < 1.0 &&
            std::uniform_real_distribution<double>(0, 1)(rng_) >= r.rule.probability) {
          continue;
        }
        ++r.fired;
        if (r.rule.action == FaultAction::kRunHook) {
          d.hook = r.rule.hook;
          break;
        }
        d.status = r.rule.status.WithContext("fault rule '" + r.rule.name + "' on " +
                                             std::string(ObjectOpName(op)) + " '" +
                                             std::string(key) + "'");
        if (r.rule.action == FaultAction::kCrashAfter) {
          d.crash_after = true;
        } else if (r.rule.action == FaultAction::kLoseReply) {
          d.lose_reply = true;
          d.after = r.rule.hook;
        } else {
          d.drop = true;
          if (r.rule.action == FaultAction::kCrashBefore) crashed_ = true;
        }
        break;
      }
    }
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  return d;
}

template <typename Call>
auto FaultInjectionObjectStore::Run(ObjectOp op, std::string_view key, Call&& call)
    -> decltype(call()) {
  Decision d = Decide(op, key);
  if (d.hook) d.hook();
  if (d.drop) return d.status;
  auto result = call();
  if (d.crash_after) {
    Crash();
    return d.status;
  }
  if (d.lose_reply) {
    if (d.after) d.after();
    return d.status;
  }
  return result;
}

Result<ObjectMeta> FaultInjectionObjectStore::Read(std::string_view key,
                                                   std::optional<ByteRange> range, ByteSink& sink) {
  return Run(range ? ObjectOp::kGetRange : ObjectOp::kGet, key,
             [&] { return base_->Read(key, range, sink); });
}

Result<ObjectMeta> FaultInjectionObjectStore::Head(std::string_view key) {
  return Run(ObjectOp::kHead, key, [&] { return base_->Head(key); });
}

Result<ObjectMeta> FaultInjectionObjectStore::Write(std::string_view key, ByteSource& source,
                                                    const PutOptions& options) {
  return Run(PutOpOf(options), key, [&]() -> Result<ObjectMeta> {
    if (!tracking()) return base_->Write(key, source, options);
    std::optional<std::string> before = options.durable ? std::nullopt : Before(key);
    Result<ObjectMeta> put = base_->Write(key, source, options);
    if (put.ok()) NoteWrite(key, !options.durable, std::move(before));
    return put;
  });
}

Result<ListPage> FaultInjectionObjectStore::List(std::string_view prefix,
                                                 std::string_view start_after, size_t limit) {
  return Run(ObjectOp::kList, prefix, [&] { return base_->List(prefix, start_after, limit); });
}

Status FaultInjectionObjectStore::Delete(std::string_view key) {
  return Run(ObjectOp::kDelete, key, [&] {
    Status deleted = base_->Delete(key);
    if (deleted.ok() && tracking()) NoteWrite(key, /*unsynced=*/false, std::nullopt);
    return deleted;
  });
}

Status FaultInjectionObjectStore::DeleteRelaxed(std::string_view key) {
  return Run(ObjectOp::kDelete, key, [&] {
    if (!tracking()) return base_->DeleteRelaxed(key);
    std::optional<std::string> before = Before(key);
    Status deleted = base_->DeleteRelaxed(key);
    if (deleted.ok()) NoteWrite(key, /*unsynced=*/true, std::move(before));
    return deleted;
  });
}

}  // namespace loam
