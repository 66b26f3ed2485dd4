// Runs the conformance suite on every backend and wrapper that needs no
// external service. (S3 instantiates it in its own, `s3`-labelled binary.)
#include "io/object_store_conformance.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>

#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/latency_object_store.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"

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
class WrappedBackend : public BackendUnderTest {
 public:
  using Wrap = std::function<std::shared_ptr<ObjectStore>(std::shared_ptr<ObjectStore>)>;
  WrappedBackend(std::unique_ptr<BackendUnderTest> inner, Wrap wrap)
      : inner_(std::move(inner)), wrap_(std::move(wrap)), store_(wrap_(inner_->store())) {}
  std::shared_ptr<ObjectStore> store() override { return store_; }
  std::shared_ptr<ObjectStore> OpenAnotherClient() override {
    return wrap_(inner_->OpenAnotherClient());
  }
  bool shared_across_processes() const override { return inner_->shared_across_processes(); }
  bool holds_objects_in_process() const override { return inner_->holds_objects_in_process(); }

 private:
  std::unique_ptr<BackendUnderTest> inner_;
  Wrap wrap_;
  std::shared_ptr<ObjectStore> store_;
};

template <typename Wrapper>
std::unique_ptr<BackendUnderTest> Wrapped(std::unique_ptr<BackendUnderTest> inner) {
  return std::make_unique<WrappedBackend>(std::move(inner), [](std::shared_ptr<ObjectStore> s) {
    return std::make_shared<Wrapper>(s);
  });
}

BackendFactory Local() {
  return {"Local", [] { return std::make_unique<LocalBackend>(); }};
}
BackendFactory Memory() {
  return {"Memory", [] { return std::make_unique<MemoryBackend>(); }};
}
BackendFactory CountingOverLocal() {
  return {"CountingOverLocal",
          [] { return Wrapped<CountingObjectStore>(std::make_unique<LocalBackend>()); }};
}
BackendFactory FaultInjectionOverMemory() {
  return {"FaultInjectionOverMemory",
          [] { return Wrapped<FaultInjectionObjectStore>(std::make_unique<MemoryBackend>()); }};
}
// Real waits, kept short (the suite makes thousands of calls).
BackendFactory LatencyOverLocal() {
  return {"LatencyOverLocal", [] {
            return std::make_unique<WrappedBackend>(
                std::make_unique<LocalBackend>(), [](std::shared_ptr<ObjectStore> s) {
                  return std::make_shared<LatencyObjectStore>(s, LatencyProfile{50, 200, 1, {}});
                });
          }};
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreConformance,
                         ::testing::Values(Local(), Memory(), CountingOverLocal(),
                                           FaultInjectionOverMemory(), LatencyOverLocal()),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreCrossProcessConformance, ::testing::Values(Local()),
                         BackendName);

}  // namespace
}  // namespace loam::testing
