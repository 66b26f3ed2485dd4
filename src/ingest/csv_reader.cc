#include "ingest/csv_reader.h"

#include <algorithm>
#include <cstring>
#include <set>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/status_macros.h"

namespace loam::ingest {

CsvReader::CsvReader(ByteSource& input, CsvOptions options)
    : input_(input), options_(std::move(options)), quote_(options_.dialect.quote) {
  for (char c : {options_.delimiter, '\n', '\r', quote_}) special_[static_cast<uint8_t>(c)] = true;
}

Status CsvReader::Error(int64_t line, size_t column, std::string_view what,
                        std::string_view fix) const {
  return Status::InvalidArgument("CSV line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": " + std::string(what) + "; " +
                                 std::string(fix));
}

Status CsvReader::LimitError(int64_t line, size_t column, std::string_view what,
                             std::string_view fix) const {
  return Status::ResourceExhausted(Error(line, column, what, fix).message());
}

Result<bool> CsvReader::Refill() {
  if (eof_) return false;
  chunk_.resize(options_.chunk_bytes);
  ASSIGN_OR_RETURN(size_t n, input_.Read(chunk_.data(), chunk_.size()));
  chunk_.resize(n);
  pos_ = 0;
  bytes_read_ += n;
  if (n == 0) eof_ = true;
  return n > 0;
}

// Drops a leading UTF-8 byte-order mark, however the input is split.
Status CsvReader::SkipByteOrderMark() {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  std::string head;
  while (head.size() < kBom.size()) {
    char buf[3];
    ASSIGN_OR_RETURN(size_t n, input_.Read(buf, kBom.size() - head.size()));
    if (n == 0) break;
    head.append(buf, n);
  }
  bytes_read_ += head.size();
  chunk_ = head == kBom ? std::string() : head;
  pos_ = 0;
  return Status::OK();
}

Status CsvReader::Ensure(size_t n) {
  std::string more;
  while (chunk_.size() - pos_ < n && !eof_) {
    chunk_.erase(0, pos_);
    pos_ = 0;
    more.resize(options_.chunk_bytes);
    ASSIGN_OR_RETURN(size_t got, input_.Read(more.data(), more.size()));
    if (got == 0) eof_ = true;
    chunk_.append(more.data(), got);
    bytes_read_ += got;
  }
  return Status::OK();
}

Status CsvReader::SkipLines(int64_t n) {
  for (int64_t i = 0; i < n;) {
    if (pos_ >= chunk_.size()) {
      ASSIGN_OR_RETURN(bool more, Refill());
      if (!more) return Status::OK();
    }
    const char* begin = chunk_.data() + pos_;
    const void* lf = std::memchr(begin, '\n', chunk_.size() - pos_);
    if (lf == nullptr) {
      pos_ = chunk_.size();
      continue;
    }
    pos_ += static_cast<size_t>(static_cast<const char*>(lf) - begin) + 1;
    ++line_;
    ++i;
  }
  return Status::OK();
}

Status CsvReader::SkipComments() {
  const std::string& prefix = options_.dialect.comment_prefix;
  if (prefix.empty()) return Status::OK();
  for (;;) {
    RETURN_NOT_OK(Ensure(prefix.size()));
    if (chunk_.compare(pos_, prefix.size(), prefix) != 0) return Status::OK();
    RETURN_NOT_OK(SkipLines(1));
  }
}

Status CsvReader::FieldTooLong(int64_t line) const {
  return LimitError(
      line, ends_.size() + 1,
      "field is longer than the limit of " + std::to_string(options_.max_field_bytes) + " bytes",
      "shorten it or raise the field-size limit");
}

Status CsvReader::EndField(int64_t line) {
  if (field_bytes_.size() - field_start_ > options_.max_field_bytes) return FieldTooLong(line);
  if (field_bytes_.size() > options_.max_field_bytes * 16) {
    return LimitError(line, ends_.size() + 1,
                      "record is longer than the limit of " +
                          std::to_string(options_.max_field_bytes * 16) +
                          " bytes (16 x the field limit)",
                      "split the record or raise the field-size limit");
  }
  ends_.push_back(field_bytes_.size());
  quoted_.push_back(field_quoted_ ? 1 : 0);
  field_quoted_ = false;
  field_start_ = field_bytes_.size();
  if (ends_.size() > options_.max_columns) {
    return LimitError(
        line, ends_.size(),
        "record has more than the limit of " + std::to_string(options_.max_columns) + " columns",
        "split the table or raise the column limit");
  }
  return Status::OK();
}

// The common case, a record wholly inside the chunk with no quote: its
// fields become views into the chunk and nothing is copied. False (nothing
// consumed) for anything else, which ParseRecord then reads in full. Only
// for the standard quote, which the block scan compares as a constant: an
// input with another quote is read by the general parser.
bool CsvReader::ParseSimpleRecord() {
  if (quote_ != '"') return false;
  const char* const begin = chunk_.data() + pos_;
  const char* const end = chunk_.data() + chunk_.size();
  const char delim = options_.delimiter;
  fields_.clear();
  const char* field = begin;
  for (const char* block = begin; block < end; block += kBlock) {
    // Each special byte of the block in turn, lowest first.
    for (uint32_t mask = SpecialBytes(block, end); mask != 0; mask &= mask - 1) {
      const char* p = block + __builtin_ctz(mask);
      if (*p == '"') return false;
      if (static_cast<size_t>(p - field) > options_.max_field_bytes) return false;
      // A record near its length limit is measured (and refused) by ParseRecord.
      if (static_cast<size_t>(p - begin) > options_.max_field_bytes * 16) return false;
      fields_.emplace_back(field, static_cast<size_t>(p - field));
      if (fields_.size() > options_.max_columns) return false;
      if (*p == delim) {
        field = p + 1;
        continue;
      }
      // '\r' or '\n' ends the record; a CR must not be the chunk's last
      // byte (an LF may follow in the next chunk).
      if (*p == '\r') {
        if (p + 1 == end) return false;
        if (p[1] == '\n') ++p;
      }
      pos_ = static_cast<size_t>(p + 1 - chunk_.data());
      quoted_.assign(fields_.size(), 0);
      record_line_ = line_++;
      return true;
    }
  }
  return false;
}

uint32_t CsvReader::SpecialBytes(const char* block, const char* end) const {
  uint32_t mask = 0;
#ifdef __SSE2__
  if (end - block >= kBlock) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m128i hits =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(options_.delimiter)),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
    return static_cast<uint32_t>(_mm_movemask_epi8(hits));
  }
#endif
  const ptrdiff_t n = std::min<ptrdiff_t>(kBlock, end - block);
  for (ptrdiff_t i = 0; i < n; ++i) {
    if (special_[static_cast<uint8_t>(block[i])]) mask |= uint32_t{1} << i;
  }
  return mask;
}

// One record, RFC 4180. States: at the start of a field, inside an unquoted
// field, inside a quoted field, just after a quote inside a quoted field.
Result<bool> CsvReader::ParseRecord() {
  if (pos_ < chunk_.size() && ParseSimpleRecord()) return true;
  ASSIGN_OR_RETURN(bool found, ParseGeneralRecord());
  if (found) {  // fields_ as views into field_bytes_
    fields_.clear();
    size_t start = 0;
    for (size_t e : ends_) {
      fields_.emplace_back(field_bytes_.data() + start, e - start);
      start = e;
    }
  }
  return found;
}

void CsvReader::StartRecord() {
  field_bytes_.clear();
  ends_.clear();
  quoted_.clear();
  field_quoted_ = false;
  field_start_ = 0;
  record_line_ = line_;
}

Status CsvReader::EndRecordAt(const char* p) {
  const char* end = chunk_.data() + chunk_.size();
  if (*p == '\r') {
    ++p;
    if (p == end) {  // a CRLF split across chunks
      pos_ = chunk_.size();
      ASSIGN_OR_RETURN(bool more, Refill());
      if (more && chunk_[pos_] == '\n') ++pos_;
      RETURN_NOT_OK(EndField(line_));
      ++line_;
      return Status::OK();
    }
    if (*p == '\n') ++p;
  } else {
    ++p;
  }
  pos_ = static_cast<size_t>(p - chunk_.data());
  RETURN_NOT_OK(EndField(line_));
  ++line_;
  return Status::OK();
}

Status CsvReader::QuoteInUnquotedField() const {
  return Error(
      line_, ends_.size() + 1, "a quote inside an unquoted field",
      "quote the whole field and double the quotes inside it (" +
          std::string{quote_, 'a', ' ', quote_, quote_, 'b', quote_, quote_, ' ', 'c', quote_} +
          ")");
}

Status CsvReader::UnexpectedAfterQuote(char c) const {
  return Error(line_, ends_.size() + 1,
               std::string("unexpected '") + c + "' after the closing quote",
               "put the delimiter right after the closing quote, or double the quote if it "
               "belongs to the text");
}

Status CsvReader::TakeUnquoted(const char** p, const char* end) {
  // Fast path: copy the run of ordinary bytes at once.
  const char* q = *p;
  while (q < end && !special_[static_cast<uint8_t>(*q)]) ++q;
  field_bytes_.append(*p, static_cast<size_t>(q - *p));
  *p = q;
  if (field_bytes_.size() - field_start_ > options_.max_field_bytes) return FieldTooLong(line_);
  return Status::OK();
}

Result<bool> CsvReader::TakeQuoted(const char** p, const char* end, int64_t quote_line) {
  const char* q = *p;
  while (q < end && *q != quote_) {
    if (*q == '\n') ++line_;
    ++q;
  }
  field_bytes_.append(*p, static_cast<size_t>(q - *p));
  if (field_bytes_.size() - field_start_ > options_.max_field_bytes) {
    return FieldTooLong(quote_line);
  }
  *p = q;
  if (q == end) return false;
  ++*p;  // past the quote
  return true;
}

Result<bool> CsvReader::ParseGeneralRecord() {
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted };
  StartRecord();
  State state = State::kFieldStart;
  int64_t quote_line = 0;
  bool any = false;  // consumed at least one byte of this record
  const char delim = options_.delimiter;
  while (true) {
    if (pos_ >= chunk_.size()) {
      ASSIGN_OR_RETURN(bool more, Refill());
      if (!more) break;
    }
    const char* p = chunk_.data() + pos_;
    const char* end = chunk_.data() + chunk_.size();
    while (p < end) {
      const char c = *p;
      switch (state) {
        case State::kFieldStart:
          any = true;
          if (c == quote_) {
            state = State::kQuoted;
            field_quoted_ = true;
            quote_line = line_;
            ++p;
            continue;
          }
          state = State::kUnquoted;
          [[fallthrough]];
        case State::kUnquoted: {
          RETURN_NOT_OK(TakeUnquoted(&p, end));
          if (p == end) continue;
          if (*p == quote_) return QuoteInUnquotedField();
          if (*p == delim) {
            ++p;
            RETURN_NOT_OK(EndField(line_));
            state = State::kFieldStart;
            continue;
          }
          RETURN_NOT_OK(EndRecordAt(p));  // '\r' or '\n'
          return true;
        }
        case State::kQuoted: {
          ASSIGN_OR_RETURN(const bool closed, TakeQuoted(&p, end, quote_line));
          if (closed) state = State::kQuoteInQuoted;
          continue;
        }
        case State::kQuoteInQuoted:
          if (c == quote_) {  // a doubled quote stands for one
            field_bytes_.push_back(quote_);
            state = State::kQuoted;
            ++p;
            continue;
          }
          if (c == delim) {
            ++p;
            RETURN_NOT_OK(EndField(line_));
            state = State::kFieldStart;
            continue;
          }
          if (c == '\r' || c == '\n') {
            state = State::kUnquoted;  // ends the record on the next pass
            continue;
          }
          return UnexpectedAfterQuote(c);
      }
    }
    pos_ = chunk_.size();
  }
  // End of input.
  if (state == State::kQuoted) {
    return Error(quote_line, ends_.size() + 1,
                 "a quoted field is never closed (the input ends inside it)",
                 "close the quote, and double any quote that belongs to the text");
  }
  if (!any) return false;
  RETURN_NOT_OK(EndField(line_));
  return true;
}

Result<std::vector<std::string>> CsvReader::ReadHeader() {
  if (records_ >= 0) return Status::FailedPrecondition("the CSV header was already read");
  RETURN_NOT_OK(SkipByteOrderMark());
  RETURN_NOT_OK(SkipLines(options_.dialect.skip_lines));
  if (!options_.dialect.header) {
    header_columns_ = options_.dialect.columns.size();
    records_ = 0;
    return options_.dialect.columns;
  }
  RETURN_NOT_OK(SkipComments());
  ASSIGN_OR_RETURN(bool found, ParseRecord());
  if (!found) {
    return Status::InvalidArgument(
        "CSV input is empty; a header row naming the columns is required");
  }
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (size_t i = 0; i < fields_.size(); ++i) {
    std::string name(fields_[i]);
    if (name.empty()) {
      return Error(record_line_, i + 1, "empty column name in the header",
                   "name every column in the first row");
    }
    if (!seen.insert(name).second) {
      return Error(record_line_, i + 1, "column '" + name + "' appears twice in the header",
                   "give every column a distinct name");
    }
    names.push_back(std::move(name));
  }
  header_columns_ = names.size();
  header_line_ = record_line_;
  records_ = 0;
  return names;
}

Result<bool> CsvReader::Next(CsvRecord* out) {
  if (records_ < 0) return Status::FailedPrecondition("read the CSV header first");
  RETURN_NOT_OK(SkipComments());
  const uint64_t offset = bytes_read_ - (chunk_.size() - pos_);
  ASSIGN_OR_RETURN(bool found, ParseRecord());
  if (!found) return false;
  out->line = record_line_;
  out->offset = offset;
  if (fields_.size() != header_columns_) {
    ++records_;  // read whole: the next call reads the next record
    const bool named = !options_.dialect.header;
    return Error(record_line_, std::min(fields_.size(), header_columns_) + 1,
                 "record has " + std::to_string(fields_.size()) + " fields but " +
                     (named ? "the request names " : "the header has ") +
                     std::to_string(header_columns_) + (named ? " columns" : ""),
                 "give every row one field per " + std::string(named ? "named" : "header") +
                     " column (quote fields that contain '" + std::string(1, options_.delimiter) +
                     "')")
        .WithDetail("fieldCount", std::to_string(fields_.size()));
  }
  if (const std::string& marker = options_.dialect.null_marker; !marker.empty()) {
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (quoted_[i] == 0 && fields_[i] == marker) fields_[i] = std::string_view();
    }
  }
  out->fields.assign(fields_.begin(), fields_.end());
  out->quoted = quoted_;
  out->number = ++records_;
  return true;
}

}  // namespace loam::ingest
