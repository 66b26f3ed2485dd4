// Pipelines: durable, named load configurations for one table, stored as
// "<root>/_control/pipelines/<id>.json" with a name index under
// "_control/pipeline-names/" (docs/format/control.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ingest/run_record.h"
#include "loam/object_store.h"
#include "service/limits.h"

namespace loam::service {

// The client's document (the HTTP body of POST /v1/pipelines).
struct PipelineSpec {
  std::string name;  // 1-128 of [A-Za-z0-9_.-]
  std::string table;
  ingest::LoadMode mode = ingest::LoadMode::kAppend;
  std::vector<std::string> key_columns;  // upsert (empty: the table's keys)
  ingest::InputFormat format = ingest::InputFormat::kCsv;
  char csv_delimiter = ',';
  ingest::CsvDialect csv;  // formatOptions csvQuote, csvHeader, csvColumns, ...
  ingest::SchemaPolicy schema_policy;
  ingest::ErrorPolicy error_policy = ingest::ErrorPolicy::kFailRun;
  LoadLimits limits;
  // The branch its runs load into ("main" by default; fixed at creation).
  std::string branch = "main";
  // New submissions and uploads are refused (pipeline_paused) and queued
  // runs wait; stored only when true.
  bool paused = false;

  // Strict: unknown fields, wrong types and "quarantine" are refused.
  static Result<PipelineSpec> FromJson(std::string_view text);
  nlohmann::json ToJson() const;
};

struct Pipeline {
  std::string id;  // ULID
  PipelineSpec spec;
  int64_t table_sid = 0;  // the target, resolved when created
  std::string created_by;
  int64_t created_micros = 0;
  std::string updated_by;
  int64_t updated_micros = 0;

  nlohmann::json ToJson() const;  // the stored object and the API's answer
  static Result<Pipeline> FromJson(std::string_view text);
  // A strong HTTP entity tag of this state ("\"<16 hex digits>\""): every
  // update changes it (updated_micros is part of what it hashes).
  std::string Etag() const;
};

class PipelineStore {
 public:
  PipelineStore(std::shared_ptr<ObjectStore> store, std::string workspace_root);

  // AlreadyExists when another pipeline has the name.
  Status Create(const Pipeline& p);
  Result<Pipeline> Get(const std::string& id, std::string* etag = nullptr) const;
  // Replaces it if it still has `etag` (Aborted: changed meanwhile).
  Status Update(const Pipeline& p, const std::string& etag);
  Status Delete(const Pipeline& p);
  Result<std::vector<Pipeline>> List() const;

 private:
  std::string Key(const std::string& id) const;
  std::string NameKey(const std::string& name) const;
  std::shared_ptr<ObjectStore> store_;
  std::string root_;
};

}  // namespace loam::service
