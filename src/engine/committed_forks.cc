#include "engine/committed_forks.h"

#include <algorithm>

namespace loam {

std::optional<Dataset> CommittedForks::Find(const std::string& table_root, const std::string& fork,
                                            uint64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find({table_root, fork});
  if (it == entries_.end() || it->second.latest.version() != version) return std::nullopt;
  return it->second.latest;
}

void CommittedForks::Remember(const std::string& table_root, const std::string& fork,
                              const Dataset& latest) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find({table_root, fork});
  if (it != entries_.end()) {
    if (it->second.latest.version() < latest.version()) it->second = {latest, next_stamp_++};
    return;
  }
  if (entries_.size() >= kMaxEntries) {
    entries_.erase(std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
      return a.second.stamp < b.second.stamp;
    }));
  }
  entries_.emplace(Key{table_root, fork}, Entry{latest, next_stamp_++});
}

void CommittedForks::Forget(const std::string& table_root, const std::string& fork) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase({table_root, fork});
}

}  // namespace loam
