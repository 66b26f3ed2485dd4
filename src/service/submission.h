// The body of a run submission (docs/service.md, "Submitting a run").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/limits.h"
#include "service/upload_store.h"

namespace loam::service {

struct SubmitBody {
  std::vector<std::string> uploads;  // upload ids, each once
  bool staged_here = false;          // inline: the request staged `uploads` itself
  // Inline: the run id its uploads were staged already claimed by (the
  // submission creates the run under it); "" = mint one. `staged`: their
  // records as written, when this very request staged them.
  std::string run_id;
  std::vector<UploadRecord> staged;
  // Inline data small enough to travel in the run record itself (no upload
  // is staged: `uploads` is empty), and its SHA-256.
  std::string_view record_input;
  std::string record_input_sha256;
  std::string source_id;
  bool reload = false;
  std::optional<std::string> error_policy;
  std::optional<int64_t> expected_table_version;
  LoadLimits limits;
};

// Required, 1-255 printable ASCII characters.
Status CheckIdempotencyKey(std::string_view key);
// 1-1024 characters.
Status CheckSourceId(const std::string& id);

// Strict: unknown fields, wrong types, duplicate uploads and
// "quarantine": true are refused.
Result<SubmitBody> ParseSubmitBody(std::string_view text, int64_t max_uploads);

}  // namespace loam::service
