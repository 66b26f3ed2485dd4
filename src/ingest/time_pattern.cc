#include "ingest/time_pattern.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "common/status_macros.h"

namespace loam::ingest {
namespace {

constexpr std::array<std::string_view, 12> kMonths = {
    "January", "February", "March",     "April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December"};

bool IsPatternDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Exactly `n` digits at `*at`, or between `min` and `n` when `min` < `n`.
bool Digits(std::string_view s, size_t* at, size_t min, size_t n, int64_t* out) {
  size_t taken = 0;
  int64_t v = 0;
  while (taken < n && *at + taken < s.size() && IsPatternDigit(s[*at + taken])) {
    v = v * 10 + (s[*at + taken] - '0');
    ++taken;
  }
  if (taken < min) return false;
  *at += taken;
  *out = v;
  return true;
}

// A month name (full or its first three letters), case-insensitive: 1..12.
bool MonthName(std::string_view s, size_t* at, bool full, int64_t* out) {
  for (size_t m = 0; m < kMonths.size(); ++m) {
    const std::string_view name = full ? kMonths[m] : kMonths[m].substr(0, 3);
    if (EqualsIgnoringCase(s.substr(*at, name.size()), name)) {
      *at += name.size();
      *out = static_cast<int64_t>(m + 1);
      return true;
    }
  }
  return false;
}

// "Z", "+HH:MM", "+HHMM" at `*at` into seconds east of UTC.
bool Offset(std::string_view s, size_t* at, int64_t* out) {
  if (*at < s.size() && (s[*at] == 'Z' || s[*at] == 'z')) {
    ++*at;
    *out = 0;
    return true;
  }
  if (*at >= s.size() || (s[*at] != '+' && s[*at] != '-')) return false;
  const int sign = s[*at] == '-' ? -1 : 1;
  size_t i = *at + 1;
  int64_t h = 0, m = 0;
  if (!Digits(s, &i, 2, 2, &h)) return false;
  if (i < s.size() && s[i] == ':') ++i;
  if (!Digits(s, &i, 2, 2, &m) || h > 23 || m > 59) return false;
  *at = i;
  *out = sign * (h * 3600 + m * 60);
  return true;
}

bool Numeric(char directive) {
  return std::string_view("YmdeHIMSf").find(directive) != std::string_view::npos;
}

Status RefusePattern(std::string_view pattern, const std::string& why) {
  return Status::InvalidArgument("pattern '" + std::string(pattern) + "': " + why);
}

// Which fields the directives `seen` give, against what the kind needs.
Status CheckFields(std::string_view pattern, std::string_view seen, bool timestamp,
                   std::string_view time_zone) {
  auto has = [&](char d) { return seen.find(d) != std::string_view::npos; };
  auto refuse = [&](const std::string& why) { return RefusePattern(pattern, why); };
  const int months = has('m') + has('b') + has('B');
  if (!has('Y')) return refuse("no year (%Y)");
  if (months != 1) return refuse(months == 0 ? "no month (%m, %b or %B)" : "two months");
  if (has('d') + has('e') != 1) return refuse(has('d') ? "two days" : "no day (%d or %e)");
  if (!timestamp) {
    if (seen.find_first_of("HIpMSfz") != std::string_view::npos) {
      return refuse("a date pattern has no time of day or zone; use patternToTimestamp");
    }
    if (!time_zone.empty()) return refuse("a date takes no time zone");
    return Status::OK();
  }
  if (has('H') == has('I')) {
    return refuse(has('H') ? "both %H and %I" : "no hour (%H, or %I with %p)");
  }
  if (has('I') != has('p')) return refuse(has('I') ? "%I without %p (AM or PM?)" : "%p without %I");
  if (!has('M')) return refuse("no minutes (%M)");
  if (has('f') && !has('S')) return refuse("%f without %S");
  if (has('z') && !time_zone.empty()) {
    return refuse("both %z and a stated time zone: say which one counts by giving only one");
  }
  if (!has('z') && time_zone.empty()) {
    return refuse("the text has no zone (%z): state the zone its times are in, e.g. UTC");
  }
  return Status::OK();
}

}  // namespace

struct TimePattern::Fields {
  int64_t year = -1, month = -1, day = -1, hour = 0, minute = 0, second = 0, micros = 0;
  int64_t am_pm = -1;  // 0 AM, 1 PM
  bool has_offset = false;
  int64_t offset = 0;
};

Result<int64_t> ParseFixedZone(std::string_view zone) {
  if (zone == "UTC" || zone == "Z") return int64_t{0};
  size_t at = 0;
  int64_t seconds = 0;
  if (zone.size() == 6 && zone[3] == ':' && Offset(zone, &at, &seconds) && at == zone.size()) {
    return seconds;
  }
  return Status::InvalidArgument(
      "time zone '" + std::string(zone) +
      "': give UTC or a fixed offset such as +05:30 (named zones change their offsets over the "
      "year, so a text without one could mean two instants)");
}

Result<TimePattern> TimePattern::Compile(std::string_view pattern, bool timestamp,
                                         std::string_view time_zone) {
  TimePattern p;
  p.pattern_ = std::string(pattern);
  p.timestamp_ = timestamp;
  std::string seen;
  RETURN_NOT_OK(p.AddSteps(&seen));
  RETURN_NOT_OK(CheckFields(pattern, seen, timestamp, time_zone));
  if (timestamp && seen.find('z') == std::string::npos) {
    ASSIGN_OR_RETURN(p.zone_offset_seconds_, ParseFixedZone(time_zone));
  }
  return p;
}

Status TimePattern::AddSteps(std::string* seen) {
  const std::string_view pattern = pattern_;
  auto refuse = [&](const std::string& why) { return RefusePattern(pattern, why); };
  char previous = 0;  // the last directive, 0 after a literal
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || (i + 1 < pattern.size() && pattern[i + 1] == '%')) {
      if (pattern[i] == '%') ++i;  // "%%": a literal '%'
      if ((previous == 'e' || previous == 'f') && IsPatternDigit(pattern[i])) {
        return refuse(std::string("%") + previous + " (1 or more digits) runs into a digit");
      }
      if (steps_.empty() || steps_.back().part != Part::kLiteral) {
        steps_.push_back({Part::kLiteral, ""});
      }
      steps_.back().literal.push_back(pattern[i]);
      previous = 0;
      continue;
    }
    if (i + 1 >= pattern.size()) return refuse("ends inside a directive ('%')");
    const char d = pattern[++i];
    static constexpr std::pair<char, Part> kParts[] = {
        {'Y', Part::kYear},      {'m', Part::kMonth},  {'b', Part::kMonthAbbrev},
        {'B', Part::kMonthName}, {'d', Part::kDay},    {'e', Part::kDayLoose},
        {'H', Part::kHour24},    {'I', Part::kHour12}, {'p', Part::kAmPm},
        {'M', Part::kMinute},    {'S', Part::kSecond}, {'f', Part::kFraction},
        {'z', Part::kOffset}};
    const auto* known = std::find_if(std::begin(kParts), std::end(kParts),
                                     [d](const auto& k) { return k.first == d; });
    if (d == 'y') return refuse("%y (a two-digit year) is ambiguous; use %Y");
    if (known == std::end(kParts)) {
      return refuse(std::string("unknown directive %") + d +
                    " (known: %Y %m %b %B %d %e %H %I %p %M %S %f %z %%)");
    }
    if ((previous == 'e' || previous == 'f') && Numeric(d)) {
      return refuse(std::string("%") + previous + " (1 or more digits) runs into %" + d);
    }
    if (seen->find(d) != std::string::npos) return refuse(std::string("%") + d + " appears twice");
    seen->push_back(d);
    previous = d;
    steps_.push_back({known->second, ""});
  }
  return Status::OK();
}

Status TimePattern::Expected() const {
  return Status::InvalidArgument("expected a " + std::string(timestamp_ ? "timestamp" : "date") +
                                 " as '" + pattern_ + "'");
}

Result<TimePattern::Fields> TimePattern::Read(std::string_view text) const {
  Fields f;
  size_t at = 0;
  for (const Step& s : steps_) {
    bool ok = true;
    int64_t frac_start = 0;
    switch (s.part) {
      case Part::kLiteral:
        ok = text.substr(at, s.literal.size()) == s.literal;
        at += ok ? s.literal.size() : 0;
        break;
      case Part::kYear:
        ok = Digits(text, &at, 4, 4, &f.year) && f.year >= 1;
        break;
      case Part::kMonth:
        ok = Digits(text, &at, 2, 2, &f.month);
        break;
      case Part::kMonthAbbrev:
        ok = MonthName(text, &at, false, &f.month);
        break;
      case Part::kMonthName:
        ok = MonthName(text, &at, true, &f.month);
        break;
      case Part::kDay:
        ok = Digits(text, &at, 2, 2, &f.day);
        break;
      case Part::kDayLoose:
        ok = Digits(text, &at, 1, 2, &f.day);
        break;
      case Part::kHour24:
        ok = Digits(text, &at, 2, 2, &f.hour) && f.hour <= 23;
        break;
      case Part::kHour12:
        ok = Digits(text, &at, 2, 2, &f.hour) && f.hour >= 1 && f.hour <= 12;
        break;
      case Part::kAmPm:
        f.am_pm = EqualsIgnoringCase(text.substr(at, 2), "AM")   ? 0
                  : EqualsIgnoringCase(text.substr(at, 2), "PM") ? 1
                                                                 : -1;
        ok = f.am_pm >= 0;
        at += 2;
        break;
      case Part::kMinute:
        ok = Digits(text, &at, 2, 2, &f.minute) && f.minute <= 59;
        break;
      case Part::kSecond:
        ok = Digits(text, &at, 2, 2, &f.second) && f.second <= 59;
        break;
      case Part::kFraction:
        frac_start = static_cast<int64_t>(at);
        ok = Digits(text, &at, 1, 6, &f.micros);
        for (int64_t n = static_cast<int64_t>(at) - frac_start; ok && n < 6; ++n) f.micros *= 10;
        break;
      case Part::kOffset:
        ok = Offset(text, &at, &f.offset);
        f.has_offset = true;
        break;
    }
    if (!ok) return Expected();
  }
  if (at != text.size()) return Expected();
  if (f.am_pm >= 0) f.hour = f.hour % 12 + 12 * f.am_pm;
  return f;
}

Result<int64_t> TimePattern::Days(const Fields& f) const {
  const std::chrono::year_month_day date{std::chrono::year{static_cast<int>(f.year)},
                                         std::chrono::month{static_cast<unsigned>(f.month)},
                                         std::chrono::day{static_cast<unsigned>(f.day)}};
  if (!date.ok()) return Status::InvalidArgument("not a calendar day; " + Expected().message());
  return static_cast<int64_t>(std::chrono::sys_days(date).time_since_epoch().count());
}

Result<int32_t> TimePattern::ParseDate(std::string_view text) const {
  ASSIGN_OR_RETURN(Fields f, Read(text));
  ASSIGN_OR_RETURN(int64_t days, Days(f));
  return static_cast<int32_t>(days);  // years 0001-9999: well inside int32
}

Result<int64_t> TimePattern::ParseTimestamp(std::string_view text) const {
  ASSIGN_OR_RETURN(Fields f, Read(text));
  ASSIGN_OR_RETURN(int64_t days, Days(f));
  const int64_t offset = f.has_offset ? f.offset : zone_offset_seconds_;
  const int64_t seconds = ((days * 24 + f.hour) * 60 + f.minute) * 60 + f.second - offset;
  return seconds * 1'000'000 + f.micros;
}

}  // namespace loam::ingest
