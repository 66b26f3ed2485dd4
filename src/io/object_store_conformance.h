// The ObjectStore conformance suite: one set of tests every backend and
// wrapper must pass (Arrow's GenericFileSystemTest, for object stores).
//
// A backend joins by instantiating the suite with a factory:
//   INSTANTIATE_TEST_SUITE_P(Local, ObjectStoreConformance,
//                            ::testing::Values(LocalBackend()), BackendName);
// and, when processes can share its storage, ObjectStoreCrossProcessConformance.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "loam/object_store.h"

namespace loam::testing {

// One instance of a backend under test, on fresh, empty storage.
class BackendUnderTest {
 public:
  virtual ~BackendUnderTest() = default;
  virtual std::shared_ptr<ObjectStore> store() = 0;
  // A second, independent client of the same storage, opened from scratch
  // (as another process would). Used by the cross-process race tests.
  virtual std::shared_ptr<ObjectStore> OpenAnotherClient() = 0;
  // True when separate processes can share the storage (fork-based tests).
  virtual bool shared_across_processes() const = 0;
  // True when object bytes live in this process's memory (bounds the
  // streaming-memory test differently).
  virtual bool holds_objects_in_process() const = 0;
};

struct BackendFactory {
  std::string name;
  std::function<std::unique_ptr<BackendUnderTest>()> make;
};

inline void PrintTo(const BackendFactory& f, std::ostream* os) { *os << f.name; }

inline std::string BackendName(const ::testing::TestParamInfo<BackendFactory>& info) {
  return info.param.name;
}

class ObjectStoreConformance : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    store_ = backend_->store();
  }
  ObjectStore& store() { return *store_; }

  std::unique_ptr<BackendUnderTest> backend_;
  std::shared_ptr<ObjectStore> store_;
};

// Tests that fork processes sharing one storage; instantiate only for
// backends whose storage outlives a process (local disk, S3).
class ObjectStoreCrossProcessConformance : public ObjectStoreConformance {};

}  // namespace loam::testing
