// WaitingLine: the submissions one room (the queue, a pipeline's concurrency,
// a pipeline's tiny-run window) refused, in the order they were first
// refused. A refused request keeps its place while its client waits out the
// retry-after, so its retry is not refused again by the crowd refused after
// it: admission counts the places ahead of a request as if they were already
// in the room. Without it every refused client is told the same short wait
// and they all retry into the same room at once.
//
// A place is named by who holds it (principal and idempotency key), belongs
// to an owner (the principal), lasts until a while after the time its holder
// was told to come back, and ends when its holder is admitted. The line lives
// in one process: a retry that reaches another process is new there. Not
// thread-safe: `Admission` holds its lock around every call.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace loam::service {

class WaitingLine {
 public:
  // A place is dropped when its holder has not come back this long after
  // the time it was given; a later retry starts again at the end.
  static constexpr int64_t kHoldAfterDueMicros = 15'000'000;
  // At most this many places, and this many per owner; a request refused
  // beyond either holds none (so one principal cannot fill a line).
  static constexpr size_t kMaxPlaces = 100'000;
  static constexpr size_t kMaxPlacesPerOwner = 1'000;

  struct Ahead {
    int64_t runs = 0;   // places ahead
    int64_t bytes = 0;  // their declared upload bytes
    // Of those, the places of at most `small_run_bytes` (a small-run lane's
    // runs), and their bytes.
    int64_t small_runs = 0;
    int64_t small_bytes = 0;
  };

  explicit WaitingLine(int64_t small_run_bytes = 0) : small_run_bytes_(small_run_bytes) {}

  // The places ahead of `holder` (every place, if it holds none), after
  // dropping those whose holders stayed away. Costs the dropped places plus,
  // for a holder, its position: a client that comes back on time finds
  // those ahead of it mostly admitted.
  Ahead AheadOf(const std::string& holder, int64_t now_micros);
  // `holder` (of `owner`) was refused and told to come back at `due_micros`:
  // it keeps its place, or takes the last one.
  void Refused(const std::string& holder, const std::string& owner, int64_t bytes,
               int64_t due_micros);
  // `holder` was admitted: its place ends.
  void Admitted(const std::string& holder);
  size_t size() const { return places_.size(); }

 private:
  struct Place {
    std::string holder;
    std::string owner;
    int64_t bytes = 0;
    int64_t hold_until_micros = 0;
  };
  void Drop(std::map<uint64_t, Place>::iterator it);

  int64_t small_run_bytes_;
  uint64_t next_order_ = 0;
  std::map<uint64_t, Place> places_;  // by order of first refusal
  std::unordered_map<std::string, uint64_t> order_of_;
  std::set<std::pair<int64_t, uint64_t>> expiries_;  // (hold_until_micros, order)
  std::unordered_map<std::string, size_t> owned_;    // places per owner
  int64_t total_bytes_ = 0;
  int64_t small_places_ = 0;  // places of at most small_run_bytes_
  int64_t small_bytes_ = 0;
};

}  // namespace loam::service
