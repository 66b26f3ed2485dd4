// TimePattern: dates and timestamps written in an explicit, declared layout
// (the patternToDate and patternToTimestamp coercions; docs/ingest.md,
// "Patterns"). strftime-style directives, read strictly and in English, never
// through the C library's locale-dependent and lenient strptime.
//
// A pattern that could read one text two ways is refused when it is
// declared, not when a value meets it: two-digit years, a field given twice,
// a 12-hour clock without AM/PM, a timestamp whose time zone is neither in
// the text (%z) nor stated, a variable-width field run into digits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"

namespace loam::ingest {

class TimePattern {
 public:
  // `timestamp`: the pattern must give a time of day; `time_zone` ("UTC",
  // "Z" or a fixed offset "+05:30") is the zone of texts without %z, and
  // must be given exactly when the pattern has none. Dates take no zone.
  static Result<TimePattern> Compile(std::string_view pattern, bool timestamp,
                                     std::string_view time_zone = {});

  // Days since 1970-01-01 (a date pattern).
  Result<int32_t> ParseDate(std::string_view text) const;
  // Microseconds since 1970-01-01T00:00:00Z (a timestamp pattern).
  Result<int64_t> ParseTimestamp(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  enum class Part : uint8_t {
    kLiteral,
    kYear,
    kMonth,
    kMonthAbbrev,
    kMonthName,
    kDay,
    kDayLoose,
    kHour24,
    kHour12,
    kAmPm,
    kMinute,
    kSecond,
    kFraction,
    kOffset
  };
  struct Step {
    Part part;
    std::string literal;  // kLiteral only
  };
  struct Fields;
  // The steps of pattern_, and the directives it uses into `seen`.
  Status AddSteps(std::string* seen);
  Result<Fields> Read(std::string_view text) const;
  // Days since 1970-01-01 of the fields' date; InvalidArgument when no such day.
  Result<int64_t> Days(const Fields& f) const;
  Status Expected() const;

  std::string pattern_;
  bool timestamp_ = false;
  int64_t zone_offset_seconds_ = 0;  // when the text has no %z
  std::vector<Step> steps_;
};

// "UTC", "Z", "+HH:MM", "-HH:MM" into seconds east of UTC; InvalidArgument
// for anything else (named zones change their offsets: they are refused).
Result<int64_t> ParseFixedZone(std::string_view zone);

}  // namespace loam::ingest
