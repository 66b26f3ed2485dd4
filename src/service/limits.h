// Limits: the server's ceilings (published by Service::Limits) and the
// per-pipeline / per-request limits that may only lower them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/strict_json.h"
#include "ingest/run_record.h"

namespace loam::service {

// The parse limits a load runs under (docs/ingest.md, "Limits"). Unset
// fields take the next level up: request, then pipeline, then the ceiling.
struct LoadLimits {
  std::optional<int64_t> max_rows;
  std::optional<int64_t> max_columns;
  std::optional<int64_t> max_field_bytes;
  std::optional<int64_t> max_json_depth;
  std::optional<int64_t> max_decoded_bytes;
  std::optional<double> max_expansion_ratio;
  std::optional<int64_t> time_budget_ms;
  std::optional<int64_t> max_errors;           // invalid rows a run lists (RunRequest::max_errors)
  std::optional<int64_t> max_run_bytes;        // the uploads of one run, together
  std::optional<int64_t> max_concurrent_runs;  // non-terminal runs of one pipeline

  // Reads {"maxRows": ..., ...} strictly; `where` names it in errors.
  static Result<LoadLimits> FromJson(const nlohmann::json& j, const std::string& where);
  nlohmann::json ToJson() const;  // set fields only
};

struct ServiceLimits {
  // Admission (429 before a run exists).
  int64_t max_queued_runs = 1000;                // non-terminal runs per workspace
  int64_t max_queued_bytes = int64_t{16} << 30;  // their upload bytes together
  int64_t max_concurrent_runs_per_pipeline = 128;
  // Defaults from measured capacity (docs/benchmarks.md, "Small runs at
  // event rates"): one process commits about 200 small runs/s of one
  // pipeline with group commit, and automatic compaction bounds the
  // fragments they add.
  double principal_requests_per_second = 200;  // token bucket, per principal
  double principal_burst = 400;
  int64_t tiny_run_bytes = 64 << 10;     // runs below this size are "tiny" ...
  int64_t tiny_runs_per_minute = 12000;  // ... and limited per pipeline: batch instead
  // A new run would wait longer than this for the queue ahead of it (at the
  // measured pace of this process's workers): refused. 0 = no limit.
  int64_t max_queue_wait_seconds = 30;
  int64_t retry_after_min_millis = 1000;
  int64_t retry_after_max_millis = 300'000;
  // Loads.
  int64_t max_run_bytes = int64_t{1} << 30;
  int64_t max_uploads_per_run = 100;
  int64_t max_rows = 100'000'000;
  int64_t max_columns = 1024;
  int64_t max_field_bytes = 1 << 20;
  int64_t max_json_depth = 64;
  int64_t max_decoded_bytes = int64_t{64} << 30;
  double max_expansion_ratio = 200;
  int64_t time_budget_ms = 3'600'000;
  int64_t max_errors = ingest::RunRequest::kDefaultMaxErrors;
  // Uploads.
  int64_t upload_ttl_seconds = 3600;
  int64_t max_upload_ttl_seconds = 24 * 3600;
  // Uploads a principal holds, handed out and not yet submitted or expired.
  int64_t max_outstanding_uploads_per_principal = 1000;
  // Upload bodies a principal's tickets are sending to this process at once.
  int64_t max_receiving_uploads_per_principal = 4;
  // Retention: idempotency records and source identities (at least 24 h).
  int64_t idempotency_retention_seconds = 7 * 24 * 3600;
  // Staging objects no live run references are swept after this.
  int64_t staging_grace_seconds = 24 * 3600;

  nlohmann::json ToJson() const;
  // The ceiling as a LoadLimits with every field set.
  LoadLimits Ceiling() const;
};

// `lower` over `upper` field by field. InvalidArgument naming the field when
// `lower` sets one above `upper` (`what` says whose: "pipeline", "request").
Result<LoadLimits> LowerOnly(const LoadLimits& upper, const LoadLimits& lower,
                             const std::string& what);
// Puts fully set `limits` into a run request.
void ApplyLimits(const LoadLimits& limits, ingest::RunRequest* request);

}  // namespace loam::service
