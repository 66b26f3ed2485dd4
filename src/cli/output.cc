#include "cli/output.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/utf8.h"
#include "loam/scan.h"

namespace loam::cli {
namespace {

constexpr size_t kMaxCell = 48;

// Display width, approximated by code points (no East Asian widths).
size_t Width(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string TableCell(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (Width(s) <= kMaxCell) return s;
  size_t cut = 0, seen = 0;
  while (cut < s.size() && seen < kMaxCell - 1) {
    ++cut;
    while (cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) ++cut;
    ++seen;
  }
  return s.substr(0, cut) + "…";
}

void TextTable::Print(std::ostream& out) const {
  std::vector<size_t> w(header_.size());
  for (size_t i = 0; i < header_.size(); ++i) w[i] = Width(header_[i]);
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], Width(r[i]));
  }
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string& v = i < r.size() ? r[i] : std::string();
      out << (i ? "  " : "") << v;
      if (i + 1 < w.size()) out << std::string(w[i] - Width(v), ' ');
    }
    out << "\n";
  };
  line(header_);
  std::vector<std::string> rule;
  for (size_t x : w) rule.push_back(std::string(x, '-'));
  line(rule);
  for (const auto& r : rows_) line(r);
}

Result<RowFormat> ParseRowFormat(const std::string& s) {
  if (s == "table") return RowFormat::kTable;
  if (s == "csv") return RowFormat::kCsv;
  if (s == "jsonl") return RowFormat::kJsonLines;
  return Status::InvalidArgument("unknown output format '" + s + "'; use table, csv or jsonl");
}

std::string CsvQuote(std::string_view field, bool null) {
  if (null) return "";
  if (!field.empty() && field.find_first_of(",\"\r\n") == std::string_view::npos) {
    return std::string(field);
  }
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void RowWriter::Header() {
  if (!header_done_) {
    header_done_ = true;
    std::vector<std::string> names;
    for (const Field& f : schema_.fields) names.push_back(f.name);
    if (format_ == RowFormat::kTable) table_ = std::make_unique<TextTable>(names);
    if (format_ == RowFormat::kCsv) {
      std::string line;
      for (size_t i = 0; i < names.size(); ++i) line += (i ? "," : "") + CsvQuote(names[i], false);
      out_ << line << "\n";
    }
  }
}

void RowWriter::Write(const RecordBatch& b) {
  Header();
  std::string line, value;
  for (int64_t r = 0; r < b.num_rows(); ++r, ++rows_) {
    line.clear();
    if (format_ == RowFormat::kJsonLines) {
      AppendJsonLine(b, r, &line);
      out_ << line;
      continue;
    }
    std::vector<std::string> cells;
    for (size_t c = 0; c < b.columns.size(); ++c) {
      const Column& col = b.columns[c];
      value.clear();
      AppendCanonicalText(col, r, &value);
      if (format_ == RowFormat::kTable) {
        cells.push_back(TableCell(col.IsNull(r) ? "null" : value));
      } else {
        line += (c ? "," : "") + CsvQuote(value, col.IsNull(r));
      }
    }
    if (format_ == RowFormat::kTable) {
      table_->Add(std::move(cells));
    } else {
      out_ << line << "\n";
    }
  }
}

void RowWriter::Finish() {
  Header();
  if (table_) table_->Print(out_);
}

}  // namespace loam::cli
