#include "io/latency_object_store.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

namespace loam {
namespace {

// The standard normal's 99th percentile: p99 = p50 · exp(z99 · sigma).
constexpr double kZ99 = 2.3263478740408408;

Result<int64_t> ParseMillis(const std::string& text, const std::string& whole) {
  double ms = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || !(ms >= 0) || ms > 600'000) {
    return Status::InvalidArgument("latency '" + whole +
                                   "': expected P50MS or P50MS:P99MS in milliseconds, e.g. 20:100");
  }
  return static_cast<int64_t>(ms * 1000);
}

}  // namespace

Result<LatencyProfile> LatencyProfile::Parse(const std::string& text) {
  LatencyProfile p;
  const size_t colon = text.find(':');
  Result<int64_t> p50 = ParseMillis(text.substr(0, colon), text);
  if (!p50.ok()) return p50.status();
  p.p50_micros = *p50;
  p.p99_micros = 5 * *p50;
  if (colon != std::string::npos) {
    Result<int64_t> p99 = ParseMillis(text.substr(colon + 1), text);
    if (!p99.ok()) return p99.status();
    if (*p99 < *p50) {
      return Status::InvalidArgument("latency '" + text + "': the p99 is below the p50");
    }
    p.p99_micros = *p99;
  }
  return p;
}

LatencyObjectStore::LatencyObjectStore(std::shared_ptr<ObjectStore> base, LatencyProfile profile)
    : ForwardingObjectStore(std::move(base)), profile_(std::move(profile)), rng_(profile_.seed) {
  const double p50 = std::max<double>(1, static_cast<double>(profile_.p50_micros));
  const double p99 = std::max<double>(p50, static_cast<double>(profile_.p99_micros));
  delay_ = std::lognormal_distribution<double>(std::log(p50), std::log(p99 / p50) / kZ99);
  if (!profile_.sleep) {
    profile_.sleep = [](int64_t micros) {
      std::this_thread::sleep_for(std::chrono::microseconds(micros));
    };
  }
}

int64_t LatencyObjectStore::DrawMicros() {
  if (profile_.p50_micros == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(delay_(rng_));
}

Result<ObjectMeta> LatencyObjectStore::Read(std::string_view key, std::optional<ByteRange> range,
                                            ByteSink& sink) {
  Wait();
  return base_->Read(key, range, sink);
}

Result<ObjectMeta> LatencyObjectStore::Head(std::string_view key) {
  Wait();
  return base_->Head(key);
}

Result<std::string> LatencyObjectStore::GetRange(std::string_view key, uint64_t offset,
                                                 uint64_t length) {
  Wait();
  return base_->GetRange(key, offset, length);
}

Result<ObjectMeta> LatencyObjectStore::Write(std::string_view key, ByteSource& source,
                                             const PutOptions& options) {
  Wait();
  return base_->Write(key, source, options);
}

Result<ListPage> LatencyObjectStore::List(std::string_view prefix, std::string_view start_after,
                                          size_t limit) {
  Wait();
  return base_->List(prefix, start_after, limit);
}

Status LatencyObjectStore::Delete(std::string_view key) {
  Wait();
  return base_->Delete(key);
}

Status LatencyObjectStore::DeleteRelaxed(std::string_view key) {
  Wait();
  return base_->DeleteRelaxed(key);
}

std::string LatencyObjectStore::Describe() const {
  auto ms = [](int64_t micros) {  // one decimal: "0.2ms"
    return std::to_string(micros / 1000) + "." + std::to_string(micros % 1000 / 100) + "ms";
  };
  return "latency(" + ms(profile_.p50_micros) + " p50, " + ms(profile_.p99_micros) + " p99, " +
         base_->Describe() + ")";
}

}  // namespace loam
