// The store a storage test suite runs on, chosen by LOAM_TEST_BACKEND:
//   unset or "memory"  a fresh in-memory store (the default ctest run)
//   "local"            a fresh directory under the system temp dir
//   "s3"               a fresh prefix of the Ceph RGW test bucket
// Suites registered with `loam_test(... ON_S3)` run a second time with
// LOAM_TEST_BACKEND=s3 and the label `s3`, so every assertion they make is
// checked on a real S3 server too.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "io/local_object_store.h"
#include "io/memory_object_store.h"
#include "io/s3_test_util.h"

namespace loam::testing {

inline std::string TestBackendName() {
  const char* b = std::getenv("LOAM_TEST_BACKEND");
  return b == nullptr || *b == '\0' ? "memory" : b;
}

inline std::shared_ptr<ObjectStore> NewTestStore() {
  const std::string backend = TestBackendName();
  if (backend == "s3") {
    Result<std::shared_ptr<S3ObjectStore>> s3 = OpenS3TestStore();
    if (!s3.ok()) {
      ADD_FAILURE() << s3.status();
      std::abort();  // every test of the suite would fail the same way
    }
    return *s3;
  }
  if (backend == "local") {
    static std::atomic<int> seq{0};
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() /
        ("loam-test-" + std::to_string(::getpid()) + "-" + std::to_string(seq++));
    std::filesystem::remove_all(dir);
    return LocalObjectStore::Open(dir.string()).value();
  }
  if (backend != "memory") {
    ADD_FAILURE() << "unknown LOAM_TEST_BACKEND '" << backend << "' (memory, local, s3)";
    std::abort();
  }
  return std::make_shared<MemoryObjectStore>();
}

}  // namespace loam::testing
