// LatencyObjectStore: wraps any store and delays every call, as a remote
// object store would, so throughput and contention under S3-like latency
// can be measured on one machine (several processes over one local-disk
// workspace, each behind its own wrapper).
//
// Each call waits a delay drawn from a log-normal distribution with the
// given median (p50) and 99th percentile, before the call runs: a request's
// round trip, not its transfer time. Draws come from a seeded generator;
// the wait goes through `sleep` (a test records it instead of waiting).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "common/thread_annotations.h"
#include "io/forwarding_object_store.h"

namespace loam {

struct LatencyProfile {
  int64_t p50_micros = 20'000;
  int64_t p99_micros = 100'000;  // at least p50_micros
  uint64_t seed = 0;
  // Waits `micros`; default: this thread sleeps.
  std::function<void(int64_t micros)> sleep;

  // "P50MS" or "P50MS:P99MS" (milliseconds, e.g. "20:100"); p99 defaults
  // to 5 × p50. InvalidArgument naming the text otherwise.
  static Result<LatencyProfile> Parse(const std::string& text);
};

class LatencyObjectStore final : public ForwardingObjectStore {
 public:
  LatencyObjectStore(std::shared_ptr<ObjectStore> base, LatencyProfile profile);

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  Status DeleteRelaxed(std::string_view key) override;
  std::string Describe() const override;

  // The delay the next call would wait (advances the generator).
  int64_t DrawMicros() LOAM_EXCLUDES(mu_);

 private:
  void Wait() { profile_.sleep(DrawMicros()); }

  LatencyProfile profile_;
  std::mutex mu_;
  std::mt19937_64 rng_ LOAM_GUARDED_BY(mu_);
  std::lognormal_distribution<double> delay_ LOAM_GUARDED_BY(mu_);
};

}  // namespace loam
