// Helpers shared by the files of Manifest (manifest.cc, journal.cc); not a
// public interface.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status_macros.h"
#include "manifest/manifest.h"

namespace loam::manifest_internal {

// Jittered backoff between publish attempts: up to 1 ms * 2^attempt, capped at 20 ms.
inline void Backoff(int attempt) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  const int64_t cap_us = std::min<int64_t>(20'000, 1000LL << std::min(attempt, 10));
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % (cap_us + 1)));
}

inline HeadDirectory::File FileOf(const Fragment& f) {
  return HeadDirectory::File{f.data_path, f.data_size, f.data_offset};
}

inline Result<HeadDirectory> DirectoryOf(std::string_view app_section) {
  if (app_section.empty()) return HeadDirectory{};  // version 1: nothing published yet
  return DecodeHeadDirectory(app_section);
}

// Every mutable row of `v`, grouped by the partition the current format puts
// it in; every partition appears (empty ones too), so writing them all
// replaces the directory whole.
inline Result<std::map<uint32_t, std::vector<ManifestRow>>> RegroupPartitions(
    const ManifestVersion& v,
    const std::function<Result<std::vector<ManifestRow>>(uint32_t)>& read) {
  std::map<uint32_t, std::vector<ManifestRow>> out;
  for (uint32_t p = 0; p < kNumPartitions; ++p) out[p];
  for (uint32_t p = 0; p < kNumPartitions; ++p) {
    if (v.dir.slots[p].file < 0) continue;
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, read(p));
    for (ManifestRow& r : rows) {
      ASSIGN_OR_RETURN(uint32_t to, PartitionOf(r));
      out[to].push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace loam::manifest_internal
