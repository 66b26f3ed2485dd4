#include "service/run_listing.h"

#include <algorithm>
#include <array>
#include <vector>

#include "common/status_macros.h"
#include "common/ulid.h"

namespace loam::service {
namespace {

constexpr size_t kTimeChars = 10;  // a ULID's millisecond part
constexpr int64_t kMaxMillis = (int64_t{1} << 48) - 1;
constexpr size_t kDenseWindowKeys = 20'000;  // narrow a window holding more
constexpr int64_t kMaxSpanMillis = int64_t{1} << 46;

// The first characters every id created at `ms` or later starts with: as a
// start-after key it precedes them all; as an upper bound it excludes them.
std::string TimeText(int64_t ms) {
  return Ulid::FromParts(static_cast<uint64_t>(std::clamp<int64_t>(ms, 0, kMaxMillis)), {})
      .ToString()
      .substr(0, kTimeChars);
}

int64_t TimeOf(std::string_view id) {
  if (id.size() < kTimeChars) return 0;
  Result<Ulid> u = Ulid::Parse(std::string(id.substr(0, kTimeChars)) + std::string(16, '0'));
  return u.ok() ? static_cast<int64_t>(u->millis()) : 0;
}

bool IsRunKey(std::string_view key, size_t prefix_size) {
  return key.size() == prefix_size + Ulid::kTextLength + 5 && key.ends_with(".json");
}

}  // namespace

RunIdScanner::RunIdScanner(ObjectStore* store, std::string prefix, const RunIdRange& range,
                           bool newest_first, int64_t now_ms)
    : store_(store), prefix_(std::move(prefix)), newest_first_(newest_first) {
  if (!range.after.empty()) low_ = prefix_ + range.after + ".json";
  if (range.since_ms >= 0) low_ = std::max(low_, prefix_ + TimeText(range.since_ms));
  auto lower_high = [this](std::string key) {
    if (high_.empty() || key < high_) high_ = std::move(key);
  };
  if (!range.before.empty()) lower_high(prefix_ + range.before + ".json");
  if (range.until_ms >= 0) lower_high(prefix_ + TimeText(range.until_ms));
  high_ms_ = high_.empty() ? now_ms : TimeOf(std::string_view(high_).substr(prefix_.size()));
  if (!high_.empty() && high_ <= low_) done_ = true;
}

std::string RunIdScanner::IdOf(const std::string& key) const {
  return key.substr(prefix_.size(), Ulid::kTextLength);
}

Result<std::optional<std::string>> RunIdScanner::Next() {
  while (ids_.empty() && !done_) {
    RETURN_NOT_OK(newest_first_ ? FillDescending() : FillAscending());
  }
  if (ids_.empty()) return std::optional<std::string>();
  std::string id = std::move(ids_.front());
  ids_.pop_front();
  return std::optional<std::string>(std::move(id));
}

Status RunIdScanner::FillAscending() {
  ASSIGN_OR_RETURN(ListPage page, store_->List(prefix_, low_, 1000));
  for (const ObjectInfo& o : page.objects) {
    if (!high_.empty() && o.key >= high_) {
      done_ = true;
      return Status::OK();
    }
    low_ = o.key;
    if (IsRunKey(o.key, prefix_.size())) ids_.push_back(IdOf(o.key));
  }
  if (!page.truncated) done_ = true;
  return Status::OK();
}

// One window [start, high_) of keys, read ascending and queued newest first.
// The window then moves below itself; an empty or sparse one doubles twice.
Status RunIdScanner::FillDescending() {
  const int64_t start_ms = std::max<int64_t>(0, high_ms_ - span_ms_);
  std::string start = prefix_ + TimeText(start_ms);
  const bool last = start <= low_ || start_ms == 0;
  if (last) start = low_;
  std::vector<std::string> keys;
  std::string after = start;
  for (bool more = true; more;) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(prefix_, after, 1000));
    more = page.truncated;
    for (const ObjectInfo& o : page.objects) {
      if (!high_.empty() && o.key >= high_) {
        more = false;
        break;
      }
      after = o.key;
      if (IsRunKey(o.key, prefix_.size())) keys.push_back(o.key);
    }
    if (keys.size() > kDenseWindowKeys && span_ms_ > 1) {
      span_ms_ = std::max<int64_t>(1, span_ms_ / 16);  // too dense: a narrower window
      return Status::OK();
    }
  }
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) ids_.push_back(IdOf(*it));
  high_ = start;
  high_ms_ = start_ms;
  if (keys.size() < 1000) span_ms_ = std::min(kMaxSpanMillis, span_ms_ * 4);
  if (last) {
    done_ = true;
  } else if (ids_.empty()) {
    ASSIGN_OR_RETURN(done_, BelowOldest(high_));
  }
  return Status::OK();
}

// True when no run key sorts below `key` (the scan has passed the oldest).
Result<bool> RunIdScanner::BelowOldest(const std::string& key) {
  if (!oldest_) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(prefix_, "", 1));
    if (page.objects.empty()) return true;
    oldest_ = page.objects.front().key;
  }
  return key <= *oldest_;
}

}  // namespace loam::service
