#include "ingest/csv_dialect.h"

#include <cctype>
#include <set>

#include "common/status_macros.h"
#include "common/utf8.h"

namespace loam::ingest {
namespace {

bool Printable(char c) { return c >= 0x20 && c < 0x7f; }

bool HasLineEnd(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

// A JSON key: `name` as is, or after `prefix` with its first letter raised
// ("csv" + "quote" = "csvQuote").
std::string OptionKey(const std::string& prefix, std::string name) {
  if (!prefix.empty()) name[0] = static_cast<char>(std::toupper(name[0]));
  return prefix + name;
}

}  // namespace

bool CsvDialect::IsDefault() const {
  return quote == '"' && header && columns.empty() && null_marker.empty() && skip_lines == 0 &&
         comment_prefix.empty();
}

Status CsvDialect::Check(char delimiter, size_t max_columns, std::string_view where) const {
  const std::string at(where);
  if (!Printable(quote) || quote == delimiter || quote == ' ') {
    return Status::InvalidArgument(
        at +
        ": the quote must be one printable ASCII character other than a space and the "
        "delimiter");
  }
  if (header && !columns.empty()) {
    return Status::InvalidArgument(at +
                                   ": columns are named only for an input without a header; set "
                                   "header to false, or leave the names to the header");
  }
  if (!header && columns.empty()) {
    return Status::InvalidArgument(
        at + ": an input without a header needs its columns named, in the order of its fields");
  }
  if (columns.size() > max_columns) {
    return Status::ResourceExhausted(at + ": " + std::to_string(columns.size()) +
                                     " columns named, more than the limit of " +
                                     std::to_string(max_columns));
  }
  std::set<std::string> seen;
  for (const std::string& c : columns) {
    if (c.empty()) return Status::InvalidArgument(at + ": a column name is empty");
    if (!seen.insert(c).second) {
      return Status::InvalidArgument(at + ": column '" + c + "' is named twice");
    }
  }
  if (null_marker.size() > kMaxMarkerBytes || HasLineEnd(null_marker) ||
      null_marker.find(delimiter) != std::string::npos ||
      null_marker.find(quote) != std::string::npos) {
    return Status::InvalidArgument(at + ": the null marker must be at most " +
                                   std::to_string(kMaxMarkerBytes) +
                                   " bytes without the delimiter, the quote or a line end");
  }
  if (skip_lines < 0 || skip_lines > kMaxSkipLines) {
    return Status::InvalidArgument(at + ": the lines to skip must be from 0 to " +
                                   std::to_string(kMaxSkipLines));
  }
  if (comment_prefix.size() > kMaxMarkerBytes || HasLineEnd(comment_prefix) ||
      (!comment_prefix.empty() && (comment_prefix[0] == quote || comment_prefix[0] == delimiter))) {
    return Status::InvalidArgument(
        at + ": the comment prefix must be at most " + std::to_string(kMaxMarkerBytes) +
        " bytes without a line end, and not start with the quote or the delimiter");
  }
  for (const std::string* text : {&null_marker, &comment_prefix}) {
    if (!IsValidUtf8(*text)) {
      return Status::InvalidArgument(at + ": the null marker and comment prefix must be UTF-8");
    }
  }
  for (const std::string& c : columns) {
    if (!IsValidUtf8(c)) return Status::InvalidArgument(at + ": a column name is not UTF-8");
  }
  return Status::OK();
}

void CsvDialect::ToJson(const std::string& prefix, nlohmann::json* out) const {
  if (quote != '"') (*out)[OptionKey(prefix, "quote")] = std::string(1, quote);
  if (!header) (*out)[OptionKey(prefix, "header")] = false;
  if (!columns.empty()) (*out)[OptionKey(prefix, "columns")] = columns;
  if (!null_marker.empty()) (*out)[OptionKey(prefix, "nullMarker")] = null_marker;
  if (skip_lines != 0) (*out)[OptionKey(prefix, "skipLines")] = skip_lines;
  if (!comment_prefix.empty()) (*out)[OptionKey(prefix, "commentPrefix")] = comment_prefix;
}

Status CsvDialect::FromJson(const std::string& prefix, StrictObject& o) {
  std::string q(1, quote);
  const std::string quote_key = OptionKey(prefix, "quote");
  RETURN_NOT_OK(o.String(quote_key.c_str(), &q));
  if (q.size() != 1) return o.Bad(quote_key.c_str(), "one character");
  quote = q[0];
  RETURN_NOT_OK(o.Bool(OptionKey(prefix, "header").c_str(), &header));
  RETURN_NOT_OK(o.Strings(OptionKey(prefix, "columns").c_str(), &columns));
  RETURN_NOT_OK(o.String(OptionKey(prefix, "nullMarker").c_str(), &null_marker));
  RETURN_NOT_OK(o.Int(OptionKey(prefix, "skipLines").c_str(), &skip_lines, 0, kMaxSkipLines));
  return o.String(OptionKey(prefix, "commentPrefix").c_str(), &comment_prefix);
}

}  // namespace loam::ingest
