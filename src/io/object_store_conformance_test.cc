// Runs the conformance suite on every backend and wrapper that needs no
// external service. (S3 instantiates it in its own, `s3`-labelled binary.)
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"
#include "io/object_store_conformance.h"

namespace loam::testing {
namespace {

// A fresh directory under the system temp dir, removed with the backend.
class LocalBackend : public BackendUnderTest {
 public:
  LocalBackend() {
    static std::atomic<int> seq{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("loam-conformance-" + std::to_string(::getpid()) + "-" + std::to_string(seq++));
    std::filesystem::remove_all(dir_);
    store_ = OpenAnotherClient();
  }
  ~LocalBackend() override { std::filesystem::remove_all(dir_); }
  std::shared_ptr<ObjectStore> store() override { return store_; }
  std::shared_ptr<ObjectStore> OpenAnotherClient() override {
    return LocalObjectStore::Open(dir_.string()).value();
  }
  bool shared_across_processes() const override { return true; }
  bool holds_objects_in_process() const override { return false; }

 private:
  std::filesystem::path dir_;
  std::shared_ptr<ObjectStore> store_;
};

class MemoryBackend : public BackendUnderTest {
 public:
  std::shared_ptr<ObjectStore> store() override { return store_; }
  std::shared_ptr<ObjectStore> OpenAnotherClient() override { return store_; }
  bool shared_across_processes() const override { return false; }
  bool holds_objects_in_process() const override { return true; }

 private:
  std::shared_ptr<ObjectStore> store_ = std::make_shared<MemoryObjectStore>();
};

// A wrapper around another backend; wrappers must be transparent.
template <typename Wrapper>
class WrappedBackend : public BackendUnderTest {
 public:
  explicit WrappedBackend(std::unique_ptr<BackendUnderTest> inner)
      : inner_(std::move(inner)), store_(std::make_shared<Wrapper>(inner_->store())) {}
  std::shared_ptr<ObjectStore> store() override { return store_; }
  std::shared_ptr<ObjectStore> OpenAnotherClient() override {
    return std::make_shared<Wrapper>(inner_->OpenAnotherClient());
  }
  bool shared_across_processes() const override { return inner_->shared_across_processes(); }
  bool holds_objects_in_process() const override { return inner_->holds_objects_in_process(); }

 private:
  std::unique_ptr<BackendUnderTest> inner_;
  std::shared_ptr<ObjectStore> store_;
};

BackendFactory Local() { return {"Local", [] { return std::make_unique<LocalBackend>(); }}; }
BackendFactory Memory() { return {"Memory", [] { return std::make_unique<MemoryBackend>(); }}; }
BackendFactory CountingOverLocal() {
  return {"CountingOverLocal", [] {
            return std::make_unique<WrappedBackend<CountingObjectStore>>(
                std::make_unique<LocalBackend>());
          }};
}
BackendFactory FaultInjectionOverMemory() {
  return {"FaultInjectionOverMemory", [] {
            return std::make_unique<WrappedBackend<FaultInjectionObjectStore>>(
                std::make_unique<MemoryBackend>());
          }};
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreConformance,
                         ::testing::Values(Local(), Memory(), CountingOverLocal(),
                                           FaultInjectionOverMemory()),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreCrossProcessConformance, ::testing::Values(Local()),
                         BackendName);

}  // namespace
}  // namespace loam::testing
