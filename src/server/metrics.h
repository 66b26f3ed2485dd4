// ServerMetrics: what `GET /metrics` exposes (Prometheus text format, built
// with prometheus-cpp core; docs/server.md, "Metrics"). Counters and
// histograms are updated as requests and runs end; gauges of the queue,
// leases and cleanup backlog are sampled at each scrape.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "service/service.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace loam::server {

struct GaugeSample {
  int64_t queue_runs = 0;
  int64_t queue_bytes = 0;
  int64_t leases_held = 0;
  double cleanup_backlog_seconds = 0;
  int64_t in_flight_requests = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();

  // `route` is the route's pattern (/v1/runs/{id}), never the raw path.
  void ObserveRequest(std::string_view method, std::string_view route, int status, double seconds);
  void Overloaded(std::string_view limit);
  void RunFinished(const RunInfo& run);
  // A compaction pass this process made: its counts, and each table's
  // fragments after it.
  void CompactionPass(const MaintenanceReport& pass);
  void RetentionPass(const RetentionReport& pass);
  // The exposition, with `gauges` as of now.
  std::string Render(const GaugeSample& gauges);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Counter>* overloaded_;
  prometheus::Family<prometheus::Counter>* runs_;
  prometheus::Family<prometheus::Counter>* compaction_;
  prometheus::Family<prometheus::Gauge>* table_fragments_;
  prometheus::Family<prometheus::Counter>* retention_;
  // Held by a scrape and by a pass's update, so one scrape shows a pass's
  // counters and gauges all before it or all after it; also orders Render's
  // catch-up of cleanup_failures_.
  std::mutex scrape_mu_;
  prometheus::Counter* cleanup_failures_;
  prometheus::Histogram* queue_to_start_;
  prometheus::Histogram* run_duration_;
  prometheus::Gauge* queue_runs_;
  prometheus::Gauge* queue_bytes_;
  prometheus::Gauge* leases_;
  prometheus::Gauge* backlog_;
  prometheus::Gauge* in_flight_;
};

}  // namespace loam::server
