// An open-addressing hash map keyed by 128-bit hashes: linear probing, at
// most half full. A probe reads a one-byte control array first (occupied
// bit + 7 bits of the hash) and touches a slot only when its tag matches, so
// the lookups that miss, the common case when a table's keys are probed
// against a run's, stay in cache. For the million-entry key sets of upserts,
// where node-based maps spend their time in cache misses. Values must be
// default-constructible and movable; entries are never erased. Slots are
// constructed only when filled: a reserved table costs its control bytes
// up front, not a pass over every slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "common/hash.h"

namespace loam {

template <typename V>
class FlatHashMap {
 public:
  explicit FlatHashMap(size_t expected = 0) { Rehash(Capacity(expected)); }
  ~FlatHashMap() { Release(); }
  FlatHashMap(const FlatHashMap&) = delete;
  FlatHashMap& operator=(const FlatHashMap&) = delete;
  FlatHashMap(FlatHashMap&& other) noexcept { *this = std::move(other); }
  FlatHashMap& operator=(FlatHashMap&& other) noexcept {
    if (this != &other) {
      Release();
      control_ = std::move(other.control_);
      slots_ = std::exchange(other.slots_, nullptr);
      size_ = std::exchange(other.size_, 0);
      other.Rehash(16);
    }
    return *this;
  }

  // The value for `key`, inserted default-constructed when absent; `fresh`
  // (if given) says whether it was.
  V& FindOrInsert(const Hash128Value& key, bool* fresh = nullptr) {
    if ((size_ + 1) * 2 > control_.size()) Rehash(control_.size() * 2);
    const size_t i = Probe(key);
    if (fresh) *fresh = control_[i] == kEmpty;
    if (control_[i] == kEmpty) {
      new (&slots_[i]) Slot{key, V{}};
      control_[i] = Tag(key);
      ++size_;
    }
    return slots_[i].value;
  }

  const V* Find(const Hash128Value& key) const {
    const size_t i = Probe(key);
    return control_[i] == kEmpty ? nullptr : &slots_[i].value;
  }
  V* Find(const Hash128Value& key) {
    const size_t i = Probe(key);
    return control_[i] == kEmpty ? nullptr : &slots_[i].value;
  }

  // Batched lookups: Prefetch a run of keys first, then look them up; their
  // memory accesses overlap instead of stalling one after another.
  // `for_insert` also prefetches the key's home slot, for writing.
  void Prefetch(const Hash128Value& key, bool for_insert = false) const {
    const size_t i = static_cast<size_t>(key.lo) & (control_.size() - 1);
    __builtin_prefetch(&control_[i]);
    if (for_insert) __builtin_prefetch(&slots_[i], 1);
  }

  // False when `key` is certainly absent, from the control bytes alone;
  // true when it may be present, with the slot to compare prefetched.
  bool MayContain(const Hash128Value& key) const {
    const size_t mask = control_.size() - 1;
    const uint8_t tag = Tag(key);
    for (size_t i = static_cast<size_t>(key.lo) & mask;; i = (i + 1) & mask) {
      const uint8_t c = control_[i];
      if (c == kEmpty) return false;
      if (c == tag) {
        __builtin_prefetch(&slots_[i]);
        return true;
      }
    }
  }

  // Room for `expected` entries without growing.
  void Reserve(size_t expected) {
    if (Capacity(expected) > control_.size()) Rehash(Capacity(expected));
  }

  size_t size() const { return size_; }
  // Bytes held (control bytes and slots); an insert that grows the map
  // holds this and twice this while it rehashes.
  size_t MemoryBytes() const { return control_.size() * (1 + sizeof(Slot)); }
  // Whether the next insert of a new key grows the map.
  bool FullForInsert() const { return (size_ + 1) * 2 > control_.size(); }
  // Bytes a map reserved for `expected` entries holds.
  static size_t MemoryBytesFor(size_t expected) { return Capacity(expected) * (1 + sizeof(Slot)); }

  // Calls f(key, value) for every entry, in no particular order.
  template <typename F>
  void ForEach(F f) const {
    for (size_t i = 0; i < control_.size(); ++i) {
      if (control_[i] != kEmpty) f(slots_[i].key, slots_[i].value);
    }
  }

 private:
  static constexpr uint8_t kEmpty = 0;
  struct Slot {
    Hash128Value key;
    V value{};
  };
  // The slot index comes from `lo`, the tag from `hi`: independent bits.
  static uint8_t Tag(const Hash128Value& k) { return static_cast<uint8_t>(0x80 | (k.hi & 0x7f)); }

  static size_t Capacity(size_t expected) {
    size_t c = 16;
    while (c < expected * 2) c *= 2;
    return c;
  }

  // The slot holding `key`, or the empty slot where it would go.
  size_t Probe(const Hash128Value& key) const {
    const size_t mask = control_.size() - 1;
    const uint8_t tag = Tag(key);
    for (size_t i = static_cast<size_t>(key.lo) & mask;; i = (i + 1) & mask) {
      const uint8_t c = control_[i];
      if (c == kEmpty || (c == tag && slots_[i].key == key)) return i;
    }
  }

  static Slot* Allocate(size_t capacity) {
    return static_cast<Slot*>(
        ::operator new(capacity * sizeof(Slot), std::align_val_t(alignof(Slot))));
  }

  // Destroys the filled slots and frees the storage.
  void Release() {
    if (slots_ == nullptr) return;
    for (size_t i = 0; i < control_.size(); ++i) {
      if (control_[i] != kEmpty) slots_[i].~Slot();
    }
    ::operator delete(slots_, std::align_val_t(alignof(Slot)));
    slots_ = nullptr;
  }

  void Rehash(size_t capacity) {
    std::vector<uint8_t> old_control(capacity, kEmpty);
    Slot* old_slots = Allocate(capacity);
    old_control.swap(control_);
    std::swap(old_slots, slots_);
    for (size_t j = 0; j < old_control.size(); ++j) {
      if (old_control[j] == kEmpty) continue;
      const size_t i = Probe(old_slots[j].key);
      new (&slots_[i]) Slot(std::move(old_slots[j]));
      control_[i] = old_control[j];
      old_slots[j].~Slot();
    }
    if (old_slots != nullptr) ::operator delete(old_slots, std::align_val_t(alignof(Slot)));
  }

  std::vector<uint8_t> control_;  // kEmpty, or the tag of a filled slot
  Slot* slots_ = nullptr;         // constructed where control_ is not kEmpty
  size_t size_ = 0;
};

}  // namespace loam
