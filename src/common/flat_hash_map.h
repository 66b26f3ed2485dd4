// An open-addressing hash map keyed by 128-bit hashes: one flat array,
// linear probing, at most half full. For the million-entry key sets of
// upserts, where node-based maps spend their time in cache misses. Values
// must be default-constructible; entries are never erased.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/hash.h"

namespace loam {

template <typename V>
class FlatHashMap {
 public:
  explicit FlatHashMap(size_t expected = 0) { Rehash(Capacity(expected)); }

  // The value for `key`, inserted default-constructed when absent; `fresh`
  // (if given) says whether it was.
  V& FindOrInsert(const Hash128Value& key, bool* fresh = nullptr) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    const Hash128Value k = Stored(key);
    Slot& s = Probe(k);
    if (fresh) *fresh = !Used(s);
    if (!Used(s)) {
      s.key = k;
      ++size_;
    }
    return s.value;
  }

  const V* Find(const Hash128Value& key) const {
    const Slot& s = const_cast<FlatHashMap*>(this)->Probe(Stored(key));
    return Used(s) ? &s.value : nullptr;
  }

  size_t size() const { return size_; }

 private:
  // A zero key marks an empty slot; the (astronomically rare) zero hash is
  // stored as {1, 0}, which can then share a slot with a real {1, 0}: both
  // are 2^-128 events.
  struct Slot {
    Hash128Value key;
    V value{};
  };
  static Hash128Value Stored(const Hash128Value& k) {
    return k.lo == 0 && k.hi == 0 ? Hash128Value{1, 0} : k;
  }
  static bool Used(const Slot& s) { return s.key.lo != 0 || s.key.hi != 0; }

  static size_t Capacity(size_t expected) {
    size_t c = 16;
    while (c < expected * 2) c *= 2;
    return c;
  }

  Slot& Probe(const Hash128Value& key) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(key.lo) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!Used(s) || s.key == key) return s;
    }
  }

  void Rehash(size_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(capacity);
    size_ = 0;
    for (Slot& s : old) {
      if (!Used(s)) continue;
      Slot& to = Probe(s.key);
      to = std::move(s);
      ++size_;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace loam
