#include "service/waiting_line.h"

namespace loam::service {

void WaitingLine::Drop(std::map<uint64_t, Place>::iterator it) {
  expiries_.erase({it->second.hold_until_micros, it->first});
  order_of_.erase(it->second.holder);
  if (--owned_[it->second.owner] == 0) owned_.erase(it->second.owner);
  total_bytes_ -= it->second.bytes;
  if (it->second.bytes <= small_run_bytes_) {
    --small_places_;
    small_bytes_ -= it->second.bytes;
  }
  places_.erase(it);
}

WaitingLine::Ahead WaitingLine::AheadOf(const std::string& holder, int64_t now_micros) {
  // Holders who stayed away lose their places (`holder` too: it is new again).
  while (!expiries_.empty() && expiries_.begin()->first < now_micros) {
    Drop(places_.find(expiries_.begin()->second));
  }
  const auto mine = order_of_.find(holder);
  if (mine == order_of_.end()) {
    return Ahead{static_cast<int64_t>(places_.size()), total_bytes_, small_places_, small_bytes_};
  }
  Ahead ahead;
  for (auto it = places_.begin(); it->first != mine->second; ++it) {
    ++ahead.runs;
    ahead.bytes += it->second.bytes;
    if (it->second.bytes <= small_run_bytes_) {
      ++ahead.small_runs;
      ahead.small_bytes += it->second.bytes;
    }
  }
  return ahead;
}

void WaitingLine::Refused(const std::string& holder, const std::string& owner, int64_t bytes,
                          int64_t due_micros) {
  uint64_t order;
  if (const auto it = order_of_.find(holder); it != order_of_.end()) {
    order = it->second;
    Drop(places_.find(order));  // taken again below, in the same order
  } else if (places_.size() < kMaxPlaces &&
             (!owned_.count(owner) || owned_.at(owner) < kMaxPlacesPerOwner)) {
    order = next_order_++;
  } else {
    return;
  }
  const Place place{holder, owner, bytes, due_micros + kHoldAfterDueMicros};
  places_.emplace(order, place);
  order_of_.emplace(holder, order);
  expiries_.emplace(place.hold_until_micros, order);
  ++owned_[owner];
  total_bytes_ += bytes;
  if (bytes <= small_run_bytes_) {
    ++small_places_;
    small_bytes_ += bytes;
  }
}

void WaitingLine::Admitted(const std::string& holder) {
  const auto it = order_of_.find(holder);
  if (it != order_of_.end()) Drop(places_.find(it->second));
}

}  // namespace loam::service
