#include "common/rfc3339.h"

#include <chrono>
#include <string>

namespace loam {
namespace {

constexpr char kForm[] =
    "expected an RFC 3339 timestamp with an explicit offset, as 2026-11-30T05:10:00+01:00 or "
    "2026-11-30T04:10:00.25Z";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The `n` digits at `at`, or -1.
int Digits(std::string_view text, size_t at, size_t n) {
  if (at + n > text.size()) return -1;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!IsDigit(text[i])) return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

// Days since the epoch of "YYYY-MM-DD" at the start of `text`.
Result<int64_t> Days(std::string_view text) {
  const int y = Digits(text, 0, 4), m = Digits(text, 5, 2), d = Digits(text, 8, 2);
  if (y < 1 || m < 0 || d < 0 || text[4] != '-' || text[7] != '-') {
    return Status::InvalidArgument(kForm);
  }
  const std::chrono::year_month_day date{std::chrono::year{y},
                                         std::chrono::month{static_cast<unsigned>(m)},
                                         std::chrono::day{static_cast<unsigned>(d)}};
  if (!date.ok()) return Status::InvalidArgument(kForm);
  return std::chrono::sys_days(date).time_since_epoch().count();
}

// ".ffffff" at *at, if there: its microseconds.
Result<int64_t> Fraction(std::string_view text, size_t* at) {
  int64_t micros = 0;
  if (*at >= text.size() || text[*at] != '.') return micros;
  const size_t start = ++*at;
  while (*at < text.size() && IsDigit(text[*at])) ++*at;
  if (*at == start) return Status::InvalidArgument(kForm);
  for (size_t i = start; i < *at; ++i) {
    if (i - start < 6) {
      micros = micros * 10 + (text[i] - '0');
    } else if (text[i] != '0') {
      return Status::InvalidArgument(
          "sub-microsecond digits would be lost; timestamps keep microseconds");
    }
  }
  for (size_t i = *at - start; i < 6; ++i) micros *= 10;
  return micros;
}

}  // namespace

Result<int64_t> ParseRfc3339Micros(std::string_view text) {
  if (text.size() < 19) return Status::InvalidArgument(kForm);
  Result<int64_t> days = Days(text);
  if (!days.ok()) return days.status();
  const int h = Digits(text, 11, 2), mi = Digits(text, 14, 2), sec = Digits(text, 17, 2);
  if ((text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':' || h < 0 ||
      h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) {
    return Status::InvalidArgument(kForm);
  }
  size_t at = 19;
  Result<int64_t> micros = Fraction(text, &at);
  if (!micros.ok()) return micros.status();
  if (at == text.size()) {
    return Status::InvalidArgument(
        "the timestamp has no UTC offset, so it is ambiguous; add Z or ±HH:MM");
  }
  int64_t offset_minutes = 0;
  if (text[at] == 'Z' || text[at] == 'z') {
    ++at;
  } else if (text[at] == '+' || text[at] == '-') {
    const int oh = Digits(text, at + 1, 2), om = Digits(text, at + 4, 2);
    if (oh < 0 || om < 0 || text[at + 3] != ':' || oh > 23 || om > 59) {
      return Status::InvalidArgument(kForm);
    }
    offset_minutes = (oh * 60 + om) * (text[at] == '-' ? -1 : 1);
    at += 6;
  }
  if (at != text.size()) return Status::InvalidArgument(kForm);
  const int64_t local = ((*days * 24 + h) * 60 + mi) * 60 + sec;
  return (local - offset_minutes * 60) * 1'000'000 + *micros;
}

}  // namespace loam
