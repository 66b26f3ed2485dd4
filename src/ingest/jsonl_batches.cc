#include "ingest/jsonl_batches.h"

#include <simdjson.h>

#include <cstring>

#include "common/json_depth.h"
#include "common/status_macros.h"
#include "format/json_check.h"
#include "ingest/row_source.h"

namespace loam::ingest {
namespace {

namespace od = simdjson::ondemand;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

struct JsonlBatches::Parser {
  od::parser parser;
};

JsonlBatches::JsonlBatches(ByteSource& input, Schema table, const SchemaPolicy& policy,
                           std::string source, ParseLimits limits)
    : input_(&input),
      table_(std::move(table)),
      source_(std::move(source)),
      limits_(limits),
      parser_(std::make_unique<Parser>()) {
  for (size_t c = 0; c < table_.fields.size(); ++c) {
    column_of_[table_.fields[c].name] = static_cast<int>(c);
    const Coercion* k = policy.For(table_.fields[c].name);
    coercion_of_.push_back(k ? std::optional<Coercion>(*k) : std::nullopt);
  }
  // A mapped key loads its target; the target's own name stays a key too
  // (an object with both has the column twice, which is refused).
  for (const ColumnRename& r : policy.Mappings()) {
    if (const int at = table_.IndexOf(r.target_column); at >= 0) column_of_[r.source_column] = at;
  }
}

JsonlBatches::~JsonlBatches() = default;
JsonlBatches::JsonlBatches(JsonlBatches&&) noexcept = default;

Status JsonlBatches::Error(std::string_view where, std::string_view what,
                           std::string_view column) const {
  return RowError(Status::InvalidArgument(source_ + ": line " + std::to_string(line_number_) +
                                          (where.empty() ? "" : ", " + std::string(where)) + ": " +
                                          std::string(what)),
                  line_number_, line_offset_, column);
}

Status JsonlBatches::LimitError(std::string_view where, std::string_view what) const {
  return Status::ResourceExhausted(Error(where, what).message());
}

Result<bool> JsonlBatches::NextLine() {
  ASSIGN_OR_RETURN(bool got, ReadLine());
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (got && line_number_ == 1 && std::string_view(line_.data(), line_size_).starts_with(kBom)) {
    line_size_ -= kBom.size();
    std::memmove(line_.data(), line_.data() + kBom.size(), line_size_);
  }
  return got;
}

Result<bool> JsonlBatches::ReadLine() {
  const size_t max_line = limits_.max_field_bytes * 16;
  line_size_ = 0;
  line_offset_ = consumed_;
  bool any = false;
  while (true) {
    if (pos_ == chunk_.size()) {
      if (eof_) return any;
      chunk_.resize(1 << 16);
      ASSIGN_OR_RETURN(size_t got, input_->Read(chunk_.data(), chunk_.size()));
      chunk_.resize(got);
      pos_ = 0;
      if (got == 0) {
        eof_ = true;
        if (any) ++line_number_;
        return any;
      }
    }
    any = true;
    const char* start = chunk_.data() + pos_;
    const void* nl = std::memchr(start, '\n', chunk_.size() - pos_);
    const size_t take =
        nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : chunk_.size() - pos_;
    if (line_size_ + take > max_line) {
      ++line_number_;
      return LimitError(
          "", "the line is longer than " + std::to_string(max_line) +
                  " bytes (16 x the field limit); split the record or raise the field limit");
    }
    if (line_.size() < line_size_ + take + simdjson::SIMDJSON_PADDING) {
      line_.resize((line_size_ + take) * 2 + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(line_.data() + line_size_, start, take);
    line_size_ += take;
    pos_ += take;
    consumed_ += take;
    if (nl) {
      ++pos_;
      ++consumed_;
      ++line_number_;
      if (line_size_ > 0 && line_[line_size_ - 1] == '\r') --line_size_;
      return true;
    }
  }
}

namespace {

std::string MalformedJson(simdjson::error_code e) {
  std::string what = simdjson::error_message(e);
  if (e == simdjson::UTF8_ERROR) what = "the line is not valid UTF-8; re-encode the file as UTF-8";
  return "malformed JSON (" + what + "); each line must be one JSON object";
}

// A value's text and form as the coercions read them: a json column takes
// the raw JSON of any value but null (ResourceExhausted past `max_depth`);
// any other column a scalar. InvalidArgument says what is wrong.
Status ReadValue(od::value v, const Field& f, int max_depth, std::string_view* text,
                 ValueForm* form) {
  od::json_type type;
  simdjson::error_code e;
  if ((e = v.type().get(type))) return Status::InvalidArgument(MalformedJson(e));
  if (f.type.id == TypeId::kJson && type != od::json_type::null) {
    *form = ValueForm::kJsonRaw;
    if (type == od::json_type::object) {
      od::object o;
      if ((e = v.get_object().get(o)) || (e = o.raw_json().get(*text)))
        return Status::InvalidArgument(MalformedJson(e));
    } else if (type == od::json_type::array) {
      od::array a;
      if ((e = v.get_array().get(a)) || (e = a.raw_json().get(*text)))
        return Status::InvalidArgument(MalformedJson(e));
    } else {
      *text = v.raw_json_token();
    }
    *text = TrimRight(*text);
    if (JsonNestingDepth(*text) > max_depth) {
      return Status::ResourceExhausted("nested deeper than " + std::to_string(max_depth) +
                                       " levels; flatten the value or raise the depth limit");
    }
  } else {
    switch (type) {
      case od::json_type::string:
        *form = ValueForm::kJsonString;
        if ((e = v.get_string().get(*text))) return Status::InvalidArgument(MalformedJson(e));
        break;
      case od::json_type::number:
        *form = ValueForm::kJsonNumber;
        *text = TrimRight(v.raw_json_token());
        break;
      case od::json_type::boolean: {
        *form = ValueForm::kJsonBool;
        bool b;
        if ((e = v.get_bool().get(b))) return Status::InvalidArgument(MalformedJson(e));
        *text = b ? "true" : "false";
        break;
      }
      case od::json_type::null:
        *form = ValueForm::kJsonNull;
        if (!v.is_null()) return Status::InvalidArgument(MalformedJson(simdjson::INCORRECT_TYPE));
        break;
      default:
        return Status::InvalidArgument("expected a " + f.type.ToString() +
                                       " value, got a JSON object or array");
    }
  }
  return Status::OK();
}

}  // namespace

Status JsonlBatches::ParseLine(RecordBatch* batch) {
  auto fail = [&](std::string_view where, simdjson::error_code e) {
    return Error(where, MalformedJson(e));
  };
  RETURN_NOT_OK(CheckLine());
  od::document doc;
  simdjson::error_code e =
      parser_->parser.iterate(simdjson::padded_string_view(line_.data(), line_size_, line_.size()))
          .get(doc);
  if (e) return fail("", e);
  od::object obj;
  if ((e = doc.get_object().get(obj))) {
    return e == simdjson::INCORRECT_TYPE ? Error("", "expected a JSON object per line")
                                         : fail("", e);
  }
  seen_.assign(table_.fields.size(), 0);
  size_t keys = 0;
  for (auto field_result : obj) {
    od::field field;
    if ((e = std::move(field_result).get(field))) return fail("", e);
    std::string_view key;
    if ((e = field.unescaped_key().get(key))) return fail("", e);
    if (++keys > limits_.max_columns) {
      return LimitError("", "more than " + std::to_string(limits_.max_columns) +
                                " keys in one object; raise the column limit");
    }
    // Keys are input too: a long one is cut short in messages.
    const std::string where =
        "field '" + std::string(key.substr(0, 64)) + (key.size() > 64 ? "…'" : "'");
    auto it = column_of_.find(std::string(key));
    if (it == column_of_.end()) {
      return Error(where,
                   "not a column of the table; remove it from the input or add it to the table");
    }
    const int c = it->second;
    const std::string& column = table_.fields[c].name;
    if (seen_[c]) {
      return Error(where,
                   "loads column '" + column +
                       "', which another key of this object loaded already (a key given twice, "
                       "or a mapped key and its column's own name); give each column one key",
                   column);
    }
    seen_[c] = 1;
    const Field& f = table_.fields[c];
    std::string_view text;
    ValueForm form = ValueForm::kJsonNull;
    if (Status read = ReadValue(field.value(), f, limits_.max_json_depth, &text, &form);
        !read.ok()) {
      return read.IsResourceExhausted() ? LimitError(where, read.message())
                                        : Error(where, read.message(), column);
    }
    if (text.size() > limits_.max_field_bytes) {
      return LimitError(where, "the value is longer than " +
                                   std::to_string(limits_.max_field_bytes) +
                                   " bytes; raise the field limit");
    }
    const std::optional<Coercion>& k = coercion_of_[c];
    Status s = AppendValue(f, k ? &*k : nullptr, text, form, &batch->columns[c]);
    if (!s.ok()) return Error(where + " (" + f.type.ToString() + ")", s.message(), column);
  }
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return Error("", "content follows the object; put one JSON object on each line");
  }
  return FillMissing(batch);
}

Status JsonlBatches::CheckLine() const {
  // The on-demand parser checks only what it visits: check every byte first.
  // (A json column's own depth limit is checked with its field's name.)
  const std::string_view line(line_.data(), line_size_);
  if (JsonCheck check = CheckJsonDocument(line, kJsonDepthCeiling); !check.ok()) {
    if (check.outcome == JsonCheck::Outcome::kTooDeep) {
      return LimitError("", "byte " + std::to_string(check.offset + 1) +
                                ": the line nests deeper than " +
                                std::to_string(kJsonDepthCeiling) + " levels; flatten it");
    }
    return Error("", "malformed JSON at byte " + std::to_string(check.offset + 1) + " (" +
                         check.what + "); each line must be exactly one JSON object");
  }
  return Status::OK();
}

Status JsonlBatches::FillMissing(RecordBatch* batch) const {
  for (size_t c = 0; c < table_.fields.size(); ++c) {
    if (seen_[c]) continue;
    const Field& f = table_.fields[c];
    if (!f.nullable) {
      return Error("field '" + f.name + "'",
                   "missing, and the column is not nullable; give it in every object", f.name);
    }
    batch->columns[c].AppendNull();
  }
  return Status::OK();
}

Result<std::optional<RecordBatch>> JsonlBatches::Next(size_t max_rows) {
  RecordBatch batch(table_);
  row_lines_.clear();
  size_t batch_bytes = 0;
  bool ended = false;
  while (static_cast<size_t>(batch.num_rows()) < max_rows && batch_bytes < limits_.batch_bytes) {
    ASSIGN_OR_RETURN(bool more, NextLine());
    if (!more) {
      ended = true;
      break;
    }
    batch_bytes += line_size_;
    if (TrimRight(std::string_view(line_.data(), line_size_)).empty()) continue;  // blank line
    const int64_t before = batch.columns.empty() ? 0 : batch.columns[0].length();
    Status s = ParseLine(&batch);
    if (!s.ok()) {
      // The caller drops the batch with its partial row. A limit ends the
      // run, whatever the error policy.
      if (!reject_ || s.IsResourceExhausted()) return s;
      for (Column& c : batch.columns) c.Truncate(before);
      ++rejected_;
      RETURN_NOT_OK(reject_(s));
      continue;
    }
    row_lines_.push_back(line_number_);
    ++rows_;
  }
  // A batch's bytes can all be rows left out (or blank lines): that is no
  // end of input.
  if (batch.num_rows() == 0 && ended) return std::optional<RecordBatch>();
  return std::optional<RecordBatch>(std::move(batch));
}

}  // namespace loam::ingest
