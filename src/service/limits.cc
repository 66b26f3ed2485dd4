#include "service/limits.h"

#include <limits>

#include "common/status_macros.h"

namespace loam::service {
namespace {

using json = nlohmann::json;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

template <typename T>
Status ReadOpt(StrictObject& o, const char* key, std::optional<T>* out, T min, T max) {
  if (o.Field(key) == nullptr) return Status::OK();
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    RETURN_NOT_OK(o.Number(key, &v, min, max));
  } else {
    RETURN_NOT_OK(o.Int(key, &v, min, max));
  }
  *out = v;
  return Status::OK();
}

template <typename T>
Status Lower(const char* name, const std::optional<T>& upper, const std::optional<T>& lower,
             std::optional<T>* out, const std::string& what) {
  if (lower && upper && *lower > *upper) {
    return Status::InvalidArgument(what + " limit \"" + name + "\" (" + json(*lower).dump() +
                                   ") is above the server's ceiling (" + json(*upper).dump() +
                                   "); limits can only be lowered");
  }
  *out = lower ? lower : upper;
  return Status::OK();
}

}  // namespace

Result<LoadLimits> LoadLimits::FromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return Status::InvalidArgument(where + " must be an object");
  StrictObject o(j, where);
  LoadLimits l;
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxRows", &l.max_rows, 1, kMax));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxColumns", &l.max_columns, 1, 1 << 20));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxFieldBytes", &l.max_field_bytes, 1, int64_t{1} << 30));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxJsonDepth", &l.max_json_depth, 1, 1024));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxDecodedBytes", &l.max_decoded_bytes, 1, kMax));
  RETURN_NOT_OK(ReadOpt<double>(o, "maxExpansionRatio", &l.max_expansion_ratio, 1, 1e9));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "timeBudgetMs", &l.time_budget_ms, 1, kMax));
  RETURN_NOT_OK(
      ReadOpt<int64_t>(o, "maxErrors", &l.max_errors, 1, ingest::RunRequest::kMaxErrorsCeiling));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxRunBytes", &l.max_run_bytes, 0, kMax));
  RETURN_NOT_OK(ReadOpt<int64_t>(o, "maxConcurrentRuns", &l.max_concurrent_runs, 1, 1 << 20));
  RETURN_NOT_OK(o.Finish());
  return l;
}

json LoadLimits::ToJson() const {
  json j = json::object();
  auto put = [&](const char* k, const auto& v) {
    if (v) j[k] = *v;
  };
  put("maxRows", max_rows);
  put("maxColumns", max_columns);
  put("maxFieldBytes", max_field_bytes);
  put("maxJsonDepth", max_json_depth);
  put("maxDecodedBytes", max_decoded_bytes);
  put("maxExpansionRatio", max_expansion_ratio);
  put("timeBudgetMs", time_budget_ms);
  put("maxErrors", max_errors);
  put("maxRunBytes", max_run_bytes);
  put("maxConcurrentRuns", max_concurrent_runs);
  return j;
}

LoadLimits ServiceLimits::Ceiling() const {
  LoadLimits l;
  l.max_rows = max_rows;
  l.max_columns = max_columns;
  l.max_field_bytes = max_field_bytes;
  l.max_json_depth = max_json_depth;
  l.max_decoded_bytes = max_decoded_bytes;
  l.max_expansion_ratio = max_expansion_ratio;
  l.time_budget_ms = time_budget_ms;
  l.max_errors = max_errors;
  l.max_run_bytes = max_run_bytes;
  l.max_concurrent_runs = max_concurrent_runs_per_pipeline;
  return l;
}

json ServiceLimits::ToJson() const {
  return {{"load", Ceiling().ToJson()},
          {"admission",
           {{"maxQueuedRuns", max_queued_runs},
            {"maxQueuedBytes", max_queued_bytes},
            {"maxConcurrentRunsPerPipeline", max_concurrent_runs_per_pipeline},
            {"principalRequestsPerSecond", principal_requests_per_second},
            {"principalBurst", principal_burst},
            {"tinyRunBytes", tiny_run_bytes},
            {"tinyRunsPerMinute", tiny_runs_per_minute},
            {"maxQueueWaitSeconds", max_queue_wait_seconds},
            {"retryAfterMinMillis", retry_after_min_millis},
            {"retryAfterMaxMillis", retry_after_max_millis}}},
          {"uploads",
           {{"maxUploadsPerRun", max_uploads_per_run},
            {"ttlSeconds", upload_ttl_seconds},
            {"maxTtlSeconds", max_upload_ttl_seconds},
            {"maxOutstandingPerPrincipal", max_outstanding_uploads_per_principal},
            {"maxReceivingPerPrincipal", max_receiving_uploads_per_principal}}},
          {"retention",
           {{"idempotencySeconds", idempotency_retention_seconds},
            {"sourceIdentitySeconds", idempotency_retention_seconds},
            {"stagingGraceSeconds", staging_grace_seconds}}}};
}

Result<LoadLimits> LowerOnly(const LoadLimits& upper, const LoadLimits& lower,
                             const std::string& what) {
  LoadLimits out;
  RETURN_NOT_OK(Lower("maxRows", upper.max_rows, lower.max_rows, &out.max_rows, what));
  RETURN_NOT_OK(Lower("maxColumns", upper.max_columns, lower.max_columns, &out.max_columns, what));
  RETURN_NOT_OK(Lower("maxFieldBytes", upper.max_field_bytes, lower.max_field_bytes,
                      &out.max_field_bytes, what));
  RETURN_NOT_OK(
      Lower("maxJsonDepth", upper.max_json_depth, lower.max_json_depth, &out.max_json_depth, what));
  RETURN_NOT_OK(Lower("maxDecodedBytes", upper.max_decoded_bytes, lower.max_decoded_bytes,
                      &out.max_decoded_bytes, what));
  RETURN_NOT_OK(Lower("maxExpansionRatio", upper.max_expansion_ratio, lower.max_expansion_ratio,
                      &out.max_expansion_ratio, what));
  RETURN_NOT_OK(
      Lower("timeBudgetMs", upper.time_budget_ms, lower.time_budget_ms, &out.time_budget_ms, what));
  RETURN_NOT_OK(Lower("maxErrors", upper.max_errors, lower.max_errors, &out.max_errors, what));
  RETURN_NOT_OK(
      Lower("maxRunBytes", upper.max_run_bytes, lower.max_run_bytes, &out.max_run_bytes, what));
  RETURN_NOT_OK(Lower("maxConcurrentRuns", upper.max_concurrent_runs, lower.max_concurrent_runs,
                      &out.max_concurrent_runs, what));
  return out;
}

void ApplyLimits(const LoadLimits& l, ingest::RunRequest* r) {
  r->max_rows = l.max_rows.value_or(r->max_rows);
  r->limits.max_columns = static_cast<size_t>(l.max_columns.value_or(r->limits.max_columns));
  r->limits.max_field_bytes =
      static_cast<size_t>(l.max_field_bytes.value_or(r->limits.max_field_bytes));
  r->limits.max_json_depth = static_cast<int>(l.max_json_depth.value_or(r->limits.max_json_depth));
  r->limits.decode.max_decoded_bytes = static_cast<uint64_t>(
      l.max_decoded_bytes.value_or(static_cast<int64_t>(r->limits.decode.max_decoded_bytes)));
  r->limits.decode.max_expansion_ratio =
      l.max_expansion_ratio.value_or(r->limits.decode.max_expansion_ratio);
  r->time_budget_ms = l.time_budget_ms.value_or(r->time_budget_ms);
  r->max_errors = l.max_errors.value_or(r->max_errors);
}

}  // namespace loam::service
