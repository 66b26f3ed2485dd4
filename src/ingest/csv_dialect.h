// How a CSV input is written beyond its delimiter: the quote character,
// whether a header names the columns (or the request does), the text that
// stands for a missing value, leading lines to skip and comment lines.
// Kept in run requests and pipelines (JSON keys below), applied by
// CsvReader, checked in one place.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/strict_json.h"
#include "loam/status.h"

namespace loam::ingest {

struct CsvDialect {
  char quote = '"';
  // False: the input has no header row; `columns` names its fields in order.
  bool header = true;
  std::vector<std::string> columns;
  // An unquoted field equal to it is a missing value, as an empty one is
  // ("" = none; a quoted field is always text).
  std::string null_marker;
  int64_t skip_lines = 0;      // lines skipped before the header (or the first record)
  std::string comment_prefix;  // a record starting with it is skipped to the line's end ("" = none)

  static constexpr int64_t kMaxSkipLines = 1'000'000;
  static constexpr size_t kMaxMarkerBytes = 64;

  bool IsDefault() const;
  // The rules, with `delimiter` the input's delimiter and `where` naming the
  // place the options came from ("pipeline formatOptions", "--quote").
  Status Check(char delimiter, size_t max_columns, std::string_view where) const;

  // Only the keys that differ from the defaults, each `prefix` + Name
  // ("csv" + "Quote", or "" + "quote"), into `out`.
  void ToJson(const std::string& prefix, nlohmann::json* out) const;
  // The keys ToJson writes, read from `o` (absent: the default).
  Status FromJson(const std::string& prefix, StrictObject& o);
};

}  // namespace loam::ingest
