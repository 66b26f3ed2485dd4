// Fuzz target: JSON Lines over any bytes into a table of every kind of
// column, and the JSON document check against nlohmann::json's parser: both
// must agree on what is one valid RFC 8259 document. Not compared: inputs
// with a leading byte-order mark (nlohmann skips it, Loam refuses it) or a
// NUL byte (nlohmann stops reading there, so "{}\0garbage" passes it; Loam
// refuses, as RFC 8259 does).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "format/json_check.h"
#include "ingest/jsonl_batches.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!text.starts_with("\xEF\xBB\xBF") && text.find('\0') == std::string::npos) {
    const bool ours = CheckJsonDocument(text, kJsonDepthCeiling).ok();
    bool theirs = nlohmann::json::accept(text);
    if (ours && !theirs) {
      // nlohmann refuses a number beyond a double's range (out_of_range);
      // RFC 8259 allows any length, and Loam keeps json values as text.
      try {
        const nlohmann::json parsed = nlohmann::json::parse(text);
        theirs = !parsed.is_discarded();
      } catch (const nlohmann::json::out_of_range&) {
        theirs = true;
      } catch (const nlohmann::json::exception&) {
      }
    }
    if (ours != theirs) {
      std::fprintf(stderr, "json check says %d, nlohmann says %d, for: %s\n", ours, theirs,
                   text.c_str());
      std::abort();
    }
  }
  static const Schema table{{{"id", DataType::Int64(), false},
                             {"name", DataType::String()},
                             {"amount", DataType::Decimal(10, 2)},
                             {"at", DataType::Timestamp()},
                             {"doc", DataType::Json()},
                             {"x", DataType::Float64()},
                             {"ok", DataType::Bool()}}};
  StringSource src(text);
  ingest::ParseLimits limits;
  limits.max_columns = 16;
  limits.max_field_bytes = 256;
  limits.max_json_depth = 8;
  limits.batch_bytes = 1024;
  ingest::JsonlBatches jsonl(src, table, {}, "f.jsonl", limits);
  int64_t rows = 0;
  bool clean = false;  // the read reached the end without an error
  while (true) {
    Result<std::optional<RecordBatch>> b = jsonl.Next(5);
    if (!b.ok()) break;
    if (!*b) {
      clean = true;
      break;
    }
    if ((*b)->num_rows() > 5) std::abort();
    rows += (*b)->num_rows();
  }
  if (clean && rows != jsonl.rows_read()) std::abort();
  return 0;
}
