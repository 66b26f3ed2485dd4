// A thread-safe LRU cache of immutable values, bounded by a total charge
// (bytes). An entry is keyed by its value's type as well as its name: Get<T>
// finds only what Put<T> stored under the name, so two callers that pick the
// same name for values of different types miss instead of reading one as the
// other. Only for content that never changes under a key (Loam's data,
// deletion and index files are write-once), so an entry can never be stale.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <utility>

#include "common/thread_annotations.h"

namespace loam {

class LruCache {
 public:
  explicit LruCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  template <typename T>
  std::shared_ptr<const T> Get(const std::string& key) {
    return std::static_pointer_cast<const T>(GetRaw({typeid(T), key}));
  }
  template <typename T>
  void Put(const std::string& key, std::shared_ptr<const T> value, uint64_t charge) {
    PutRaw({typeid(T), key}, std::static_pointer_cast<const void>(std::move(value)), charge);
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
  using Key = std::pair<std::type_index, std::string>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string>()(k.second) * 31 + k.first.hash_code();
    }
  };
  struct Entry {
    Key key;
    std::shared_ptr<const void> value;
    uint64_t charge;
  };

  std::shared_ptr<const void> GetRaw(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recent first
    ++hits_;
    return it->second->value;
  }

  void PutRaw(const Key& key, std::shared_ptr<const void> value, uint64_t charge) {
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
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index_ LOAM_GUARDED_BY(mu_);
  uint64_t used_ LOAM_GUARDED_BY(mu_) = 0;
  uint64_t hits_ LOAM_GUARDED_BY(mu_) = 0;
};

}  // namespace loam
