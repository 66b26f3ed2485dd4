// A thread-safe LRU cache of immutable values, bounded by a total charge
// (bytes). Values are shared_ptr<const void>; callers cast to what they put.
// Only for content that never changes under a key (Loam's data, deletion
// and index files are write-once), so an entry can never be stale.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/thread_annotations.h"

namespace loam {

class LruCache {
 public:
  explicit LruCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  template <typename T>
  std::shared_ptr<const T> Get(const std::string& key) {
    return std::static_pointer_cast<const T>(GetRaw(key));
  }
  template <typename T>
  void Put(const std::string& key, std::shared_ptr<const T> value, uint64_t charge) {
    PutRaw(key, std::static_pointer_cast<const void>(std::move(value)), charge);
  }

  uint64_t charge() const {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  uint64_t hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const void> value;
    uint64_t charge;
  };

  std::shared_ptr<const void> GetRaw(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recent first
    ++hits_;
    return it->second->value;
  }

  void PutRaw(const std::string& key, std::shared_ptr<const void> value, uint64_t charge) {
    if (charge > capacity_) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      used_ -= it->second->charge;
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.push_front({key, std::move(value), charge});
    index_[key] = order_.begin();
    used_ += charge;
    while (used_ > capacity_) {
      used_ -= order_.back().charge;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
  }

  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> order_ LOAM_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::list<Entry>::iterator> index_ LOAM_GUARDED_BY(mu_);
  uint64_t used_ LOAM_GUARDED_BY(mu_) = 0;
  uint64_t hits_ LOAM_GUARDED_BY(mu_) = 0;
};

}  // namespace loam
