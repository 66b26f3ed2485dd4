#include "ingest/text_value.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/status_macros.h"
#include "common/utf8.h"
#include "format/json_check.h"

namespace loam::ingest {
namespace {

__extension__ using U128 = unsigned __int128;
__extension__ using I128 = __int128;

Status ExpectedForm(std::string_view form) {
  return Status::InvalidArgument("expected " + std::string(form));
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// -?(0|[1-9][0-9]*): no '+', no leading zeros, no spaces.
bool IsCanonicalInteger(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return AllDigits(s) && (s.size() == 1 || s.front() != '0');
}

bool Number(std::string_view s, size_t at, size_t len, unsigned* out) {
  if (at + len > s.size() || !AllDigits(s.substr(at, len))) return false;
  *out = 0;
  for (char c : s.substr(at, len)) *out = *out * 10 + static_cast<unsigned>(c - '0');
  return true;
}

// "YYYY-MM-DD" (years 0001 to 9999) at the start of `s` into days since
// 1970-01-01 (the proleptic Gregorian calendar).
bool DatePart(std::string_view s, int64_t* days) {
  unsigned y, m, d;
  if (s.size() < 10 || s[4] != '-' || s[7] != '-' || !Number(s, 0, 4, &y) || !Number(s, 5, 2, &m) ||
      !Number(s, 8, 2, &d) || y < 1) {
    return false;
  }
  const std::chrono::year_month_day date{std::chrono::year{static_cast<int>(y)},
                                         std::chrono::month{m}, std::chrono::day{d}};
  if (!date.ok()) return false;
  *days = std::chrono::sys_days(date).time_since_epoch().count();
  return true;
}

constexpr char kDateForm[] =
    "a date as YYYY-MM-DD (e.g. 2026-11-30); for another layout declare the patternToDate "
    "coercion";
constexpr char kTimestampForm[] =
    "a UTC timestamp as YYYY-MM-DDTHH:MM:SS[.ffffff]Z (e.g. 2026-11-30T04:10:00Z); "
    "for other offsets declare the iso8601ToTimestamp coercion, for another layout "
    "patternToTimestamp";

bool Base64Decode(std::string_view in, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = value(c)) < 0) {
        return false;
      }
    }
    const uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out->push_back(static_cast<char>(n >> 16));
    if (pad < 2) out->push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(n & 0xFF));
  }
  return true;
}

// The inverse of DatePart for any day count (std::chrono's years stop at
// ±32767; a stored date may hold any int32).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

void AppendPadded(std::string* out, int64_t v, int width) {
  std::string digits = std::to_string(v);
  if (static_cast<int>(digits.size()) < width) out->append(width - digits.size(), '0');
  *out += digits;
}

void AppendDate(std::string* out, int64_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  AppendPadded(out, y, 4);
  *out += '-';
  AppendPadded(out, m, 2);
  *out += '-';
  AppendPadded(out, d, 2);
}

void AppendTimestamp(std::string* out, int64_t micros) {
  int64_t days = micros / 86'400'000'000LL;
  int64_t rem = micros % 86'400'000'000LL;
  if (rem < 0) {
    rem += 86'400'000'000LL;
    --days;
  }
  AppendDate(out, days);
  const int64_t secs = rem / 1'000'000, frac = rem % 1'000'000;
  *out += 'T';
  AppendPadded(out, secs / 3600, 2);
  *out += ':';
  AppendPadded(out, secs / 60 % 60, 2);
  *out += ':';
  AppendPadded(out, secs % 60, 2);
  if (frac != 0) {
    std::string f;
    AppendPadded(&f, frac, 6);
    while (f.back() == '0') f.pop_back();
    *out += '.' + f;
  }
  *out += 'Z';
}

void AppendDecimal(std::string* out, Int128 v, int scale) {
  const I128 s = (static_cast<I128>(v.hi) << 64) | static_cast<I128>(v.lo);
  U128 mag = s < 0 ? -static_cast<U128>(s) : static_cast<U128>(s);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(mag % 10)));
    mag /= 10;
  } while (mag != 0);
  if (static_cast<int>(digits.size()) <= scale) digits.insert(0, scale - digits.size() + 1, '0');
  if (s < 0) *out += '-';
  *out += digits.substr(0, digits.size() - scale);
  if (scale > 0) *out += '.' + digits.substr(digits.size() - scale);
}

void AppendBase64(std::string* out, std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    for (int k = 3; k >= 0; --k) *out += kAlphabet[(n >> (6 * k)) & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    *out += kAlphabet[(n >> 18) & 63];
    *out += kAlphabet[(n >> 12) & 63];
    *out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    *out += '=';
  }
}

}  // namespace

void FormatCanonical(const Column& c, int64_t row, std::string* out) {
  if (c.IsNull(row)) return;
  switch (c.type().id) {
    case TypeId::kBool:
      *out += c.GetBool(row) ? "true" : "false";
      return;
    case TypeId::kInt32:
      *out += std::to_string(c.GetInt32(row));
      return;
    case TypeId::kInt64:
      *out += std::to_string(c.GetInt64(row));
      return;
    case TypeId::kFloat64: {
      char buf[32];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), c.GetFloat64(row));
      std::string_view text(buf, static_cast<size_t>(end - buf));
      *out += text;
      if (text.find_first_of(".e") == std::string_view::npos) *out += ".0";
      return;
    }
    case TypeId::kString:
    case TypeId::kJson:
      *out += c.GetBytes(row);
      return;
    case TypeId::kBinary:
      AppendBase64(out, c.GetBytes(row));
      return;
    case TypeId::kDate:
      AppendDate(out, c.GetInt32(row));
      return;
    case TypeId::kTimestamp:
      AppendTimestamp(out, c.GetInt64(row));
      return;
    case TypeId::kDecimal:
      AppendDecimal(out, c.GetInt128(row), c.type().scale);
      return;
  }
}

void FormatJsonValue(const Column& c, int64_t row, std::string* out) {
  if (c.IsNull(row)) {
    *out += "null";
    return;
  }
  switch (c.type().id) {
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kFloat64:
    case TypeId::kDecimal:
    case TypeId::kJson:
      FormatCanonical(c, row, out);
      return;
    default: {
      std::string text;
      FormatCanonical(c, row, &text);
      *out += nlohmann::json(text).dump();
      return;
    }
  }
}

Result<int64_t> ParseCanonicalInt(std::string_view text, int64_t min, int64_t max) {
  // The message is built only on failure: this runs once per value.
  auto form = [&] {
    return "an integer from " + std::to_string(min) + " to " + std::to_string(max) +
           " written as plain digits (e.g. -42)";
  };
  if (!IsCanonicalInteger(text)) return ExpectedForm(form());
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    return Status::InvalidArgument("out of range: expected " + form());
  }
  return v;
}

Result<int32_t> ParseCanonicalDate(std::string_view text) {
  int64_t days = 0;
  if (text.size() != 10 || !DatePart(text, &days)) return ExpectedForm(kDateForm);
  return static_cast<int32_t>(days);
}

Result<int64_t> ParseCanonicalTimestamp(std::string_view text) {
  int64_t days = 0;
  unsigned h, mi, sec;
  if (text.size() < 20 || !DatePart(text, &days) || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || !Number(text, 11, 2, &h) || !Number(text, 14, 2, &mi) ||
      !Number(text, 17, 2, &sec) || h > 23 || mi > 59 || sec > 59 || text.back() != 'Z') {
    return ExpectedForm(kTimestampForm);
  }
  int64_t micros = 0;
  std::string_view frac = text.substr(19, text.size() - 20);
  if (!frac.empty()) {
    if (frac.front() != '.' || frac.size() < 2 || frac.size() > 7 || !AllDigits(frac.substr(1))) {
      return ExpectedForm(kTimestampForm);
    }
    frac.remove_prefix(1);
    for (size_t i = 0; i < 6; ++i) micros = micros * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  }
  return ((days * 24 + h) * 60 + mi) * 60'000'000LL + sec * 1'000'000LL + micros;
}

Result<Int128> ParseCanonicalDecimal(std::string_view text, int precision, int scale) {
  auto form = [&] {
    return "a decimal with at most " + std::to_string(precision - scale) + " integer and " +
           std::to_string(scale) + " fraction digits, as -123.45 or .5 (no exponent, no '+')";
  };
  bool negative = false;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  const size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  // ".5" and "-.5" as SQL databases take them: no integer digits, some fraction digits.
  const bool no_whole = whole.empty() && dot != std::string_view::npos;
  if ((!no_whole && !AllDigits(whole)) || (whole.size() > 1 && whole.front() == '0') ||
      (dot != std::string_view::npos && !AllDigits(frac))) {
    return ExpectedForm(form());
  }
  const size_t int_digits = whole == "0" ? 0 : whole.size();
  if (frac.size() > static_cast<size_t>(scale) ||
      int_digits > static_cast<size_t>(precision - scale)) {
    return Status::InvalidArgument("does not fit: expected " + form());
  }
  // precision <= 38 digits fits in 128 bits.
  U128 v = 0;
  for (char c : whole) v = v * 10 + static_cast<unsigned>(c - '0');
  for (int i = 0; i < scale; ++i) {
    v = v * 10 + (static_cast<size_t>(i) < frac.size() ? static_cast<unsigned>(frac[i] - '0') : 0);
  }
  const I128 s = negative ? -static_cast<I128>(v) : static_cast<I128>(v);
  Int128 out;
  out.lo = static_cast<uint64_t>(s);
  out.hi = static_cast<int64_t>(s >> 64);
  return out;
}

// The JSON number grammar with a fraction or an exponent, and a fraction
// without integer digits (".5", "-.5e3") as SQL databases take it; integers
// need intToFloat.
static Result<double> ParseCanonicalFloat(std::string_view text) {
  constexpr char kForm[] =
      "a finite number with a fraction or exponent (e.g. 3.25, .5, -1e-3); for integers "
      "declare the intToFloat coercion";
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  const size_t stop = digits.find_first_of(".eE");
  const bool leading_dot =
      stop == 0 && digits.size() > 1 && digits[0] == '.' && digits[1] >= '0' && digits[1] <= '9';
  if (stop == std::string_view::npos ||
      (!leading_dot && !IsCanonicalInteger(digits.substr(0, stop)))) {
    return ExpectedForm(kForm);
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return ExpectedForm(kForm);
  }
  return v;
}

Status AppendCanonical(const Field& field, std::string_view text, bool quoted, Column* out) {
  if (text.empty() && !quoted) {
    if (!field.nullable) {
      return Status::InvalidArgument("missing value for non-nullable column '" + field.name +
                                     "'; give a value in every row");
    }
    out->AppendNull();
    return Status::OK();
  }
  switch (field.type.id) {
    case TypeId::kBool:
      if (text == "true" || text == "false") {
        out->AppendBool(text == "true");
        return Status::OK();
      }
      return ExpectedForm("true or false");
    case TypeId::kInt32: {
      ASSIGN_OR_RETURN(int64_t v, ParseCanonicalInt(text, std::numeric_limits<int32_t>::min(),
                                                    std::numeric_limits<int32_t>::max()));
      out->AppendInt32(static_cast<int32_t>(v));
      return Status::OK();
    }
    case TypeId::kInt64: {
      ASSIGN_OR_RETURN(int64_t v, ParseCanonicalInt(text, std::numeric_limits<int64_t>::min(),
                                                    std::numeric_limits<int64_t>::max()));
      out->AppendInt64(v);
      return Status::OK();
    }
    case TypeId::kFloat64: {
      ASSIGN_OR_RETURN(double v, ParseCanonicalFloat(text));
      out->AppendFloat64(v);
      return Status::OK();
    }
    case TypeId::kString:
      if (!IsValidUtf8(text)) {
        return Status::InvalidArgument("invalid UTF-8 at byte " +
                                       std::to_string(FindInvalidUtf8(text)) +
                                       " of the field; re-encode the file as UTF-8");
      }
      out->AppendBytes(text);
      return Status::OK();
    case TypeId::kBinary: {
      std::string bytes;
      if (!Base64Decode(text, &bytes)) return ExpectedForm("base64 (RFC 4648, with '=' padding)");
      out->AppendBytes(bytes);
      return Status::OK();
    }
    case TypeId::kDate: {
      ASSIGN_OR_RETURN(int32_t days, ParseCanonicalDate(text));
      out->AppendInt32(days);
      return Status::OK();
    }
    case TypeId::kTimestamp: {
      ASSIGN_OR_RETURN(int64_t micros, ParseCanonicalTimestamp(text));
      out->AppendInt64(micros);
      return Status::OK();
    }
    case TypeId::kDecimal: {
      ASSIGN_OR_RETURN(Int128 v,
                       ParseCanonicalDecimal(text, field.type.precision, field.type.scale));
      out->AppendInt128(v);
      return Status::OK();
    }
    case TypeId::kJson:
      if (!CheckJsonDocument(text, kJsonDepthCeiling).ok()) {
        return ExpectedForm("a JSON document (RFC 8259) in UTF-8");
      }
      out->AppendBytes(text);
      return Status::OK();
  }
  return Status::Internal("unknown column type");
}

}  // namespace loam::ingest
