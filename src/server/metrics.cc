#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "common/logging.h"

namespace loam::server {

namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return kBuckets;
}

const prometheus::Histogram::BucketBoundaries& RunBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};
  return kBuckets;
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  using namespace prometheus;
  requests_ = &BuildCounter()
                   .Name("loam_http_requests_total")
                   .Help("HTTP requests answered, by method, route and status")
                   .Register(*registry_);
  latency_ = &BuildHistogram()
                  .Name("loam_http_request_duration_seconds")
                  .Help("Time from a request's header to its answer, by method, route and status")
                  .Register(*registry_);
  overloaded_ = &BuildCounter()
                     .Name("loam_admission_rejections_total")
                     .Help("Submissions answered 429, by the admission limit that was full")
                     .Register(*registry_);
  runs_ = &BuildCounter()
               .Name("loam_runs_finished_total")
               .Help("Runs this process's workers brought to a terminal state, by state")
               .Register(*registry_);
  compaction_ = &BuildCounter()
                     .Name("loam_compaction_total")
                     .Help(
                         "Automatic compaction by this process: passes, tables compacted, "
                         "fragments removed and added, bytes written (by `what`)")
                     .Register(*registry_);
  table_fragments_ = &BuildGauge()
                          .Name("loam_table_fragments")
                          .Help(
                              "Fragments of each table after this process's last compaction "
                              "pass (\"branch:table\" off main)")
                          .Register(*registry_);
  retention_ = &BuildCounter()
                    .Name("loam_retention_total")
                    .Help(
                        "Retention passes by this process: passes, manifest and table versions "
                        "past the time-travel window removed, files and bytes removed (by `what`)")
                    .Register(*registry_);
  cleanup_failures_ = &BuildCounter()
                           .Name("loam_cleanup_failures_total")
                           .Help(
                               "Best-effort removals in this process that failed (unpublished "
                               "fragments and deletion files, inline uploads, idempotency "
                               "reservations, multipart uploads); a later pass reclaims them")
                           .Register(*registry_)
                           .Add({});
  queue_to_start_ = &BuildHistogram()
                         .Name("loam_run_queue_to_start_seconds")
                         .Help("Time from a run's submission to a worker starting it")
                         .Register(*registry_)
                         .Add({}, RunBuckets());
  run_duration_ = &BuildHistogram()
                       .Name("loam_run_duration_seconds")
                       .Help("Time from a worker starting a run to its terminal state")
                       .Register(*registry_)
                       .Add({}, RunBuckets());
  const auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*registry_).Add({});
  };
  queue_runs_ = gauge("loam_queue_runs", "Runs queued in the workspace (all processes)");
  queue_bytes_ = gauge("loam_queue_bytes", "Declared input bytes of the queued runs");
  leases_ = gauge("loam_worker_leases_held", "Runs this process's workers hold the lease of");
  backlog_ = gauge("loam_cleanup_backlog_seconds", "Age of the oldest pending cleanup");
  in_flight_ = gauge("loam_http_requests_in_flight", "Requests being read, handled or answered");
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::ObserveRequest(std::string_view method, std::string_view route, int status,
                                   double seconds) {
  const prometheus::Labels labels = {{"method", std::string(method)},
                                     {"route", std::string(route)},
                                     {"status", std::to_string(status)}};
  requests_->Add(labels).Increment();
  latency_->Add(labels, LatencyBuckets()).Observe(seconds);
}

void ServerMetrics::Overloaded(std::string_view limit) {
  overloaded_->Add({{"limit", std::string(limit)}}).Increment();
}

void ServerMetrics::RunFinished(const RunInfo& run) {
  runs_->Add({{"state", run.state}}).Increment();
  if (run.started_micros > 0 && run.created_micros > 0) {
    queue_to_start_->Observe(static_cast<double>(run.started_micros - run.created_micros) / 1e6);
  }
  if (run.started_micros > 0 && run.finished_micros >= run.started_micros) {
    run_duration_->Observe(static_cast<double>(run.finished_micros - run.started_micros) / 1e6);
  }
}

void ServerMetrics::CompactionPass(const MaintenanceReport& pass) {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  const auto add = [&](const char* what, double n) {
    compaction_->Add({{"what", what}}).Increment(n);
  };
  add("passes", 1);
  add("tables", pass.compacted);
  add("fragments_removed", static_cast<double>(pass.fragments_removed));
  add("fragments_added", static_cast<double>(pass.fragments_added));
  add("bytes_written", static_cast<double>(pass.bytes_written));
  for (const auto& [table, fragments] : pass.fragments) {
    table_fragments_->Add({{"table", table}}).Set(static_cast<double>(fragments));
  }
}

void ServerMetrics::RetentionPass(const RetentionReport& pass) {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  const auto add = [&](const char* what, double n) {
    retention_->Add({{"what", what}}).Increment(n);
  };
  add("passes", 1);
  add("manifest_versions_removed", pass.manifest_versions_removed);
  add("table_versions_removed", pass.table_versions_removed);
  add("tables_removed", pass.tables_removed);
  add("forks_removed", pass.forks_removed);
  add("files_removed", pass.files_removed);
  add("bytes_removed", static_cast<double>(pass.bytes_removed));
}

std::string ServerMetrics::Render(const GaugeSample& g) {
  queue_runs_->Set(static_cast<double>(g.queue_runs));
  queue_bytes_->Set(static_cast<double>(g.queue_bytes));
  leases_->Set(static_cast<double>(g.leases_held));
  backlog_->Set(g.cleanup_backlog_seconds);
  in_flight_->Set(static_cast<double>(g.in_flight_requests));
  std::lock_guard<std::mutex> lock(scrape_mu_);
  // A process-wide count (common/logging.h): catch the counter up to it,
  // one scrape at a time so two never add the same difference.
  cleanup_failures_->Increment(static_cast<double>(CleanupFailureCount()) -
                               cleanup_failures_->Value());
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace loam::server
