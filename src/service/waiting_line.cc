#include "service/waiting_line.h"

namespace loam::service {

WaitingLine::Ahead WaitingLine::AheadOf(const std::string& holder, int64_t now_micros) {
  // Holders who stayed away lose their places (`holder` too: it is new again).
  for (auto it = places_.begin(); it != places_.end();) {
    if (it->second.hold_until_micros >= now_micros) {
      ++it;
      continue;
    }
    order_of_.erase(it->second.holder);
    it = places_.erase(it);
  }
  const auto mine = order_of_.find(holder);
  const auto end = mine == order_of_.end() ? places_.end() : places_.find(mine->second);
  Ahead ahead;
  for (auto it = places_.begin(); it != end; ++it) {
    ++ahead.runs;
    ahead.bytes += it->second.bytes;
  }
  return ahead;
}

void WaitingLine::Refused(const std::string& holder, int64_t bytes, int64_t due_micros) {
  auto it = order_of_.find(holder);
  if (it == order_of_.end()) {
    if (places_.size() >= kMaxPlaces) return;
    it = order_of_.emplace(holder, next_order_++).first;
  }
  places_[it->second] = Place{holder, bytes, due_micros + kHoldAfterDueMicros};
}

void WaitingLine::Admitted(const std::string& holder) {
  const auto it = order_of_.find(holder);
  if (it == order_of_.end()) return;
  places_.erase(it->second);
  order_of_.erase(it);
}

}  // namespace loam::service
