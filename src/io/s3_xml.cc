#include "io/s3_xml.h"

#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace loam::s3 {
namespace {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int64_t MicrosOf(struct tm* tm, int64_t frac_micros) {
  const time_t t = timegm(tm);
  if (t == static_cast<time_t>(-1)) return 0;
  return static_cast<int64_t>(t) * 1000000 + frac_micros;
}

}  // namespace

std::string XmlUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out.push_back(text[i]);
      continue;
    }
    const size_t semi = text.find(';', i);
    if (semi == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    const std::string_view name = text.substr(i + 1, semi - i - 1);
    if (name == "amp") {
      out.push_back('&');
    } else if (name == "lt") {
      out.push_back('<');
    } else if (name == "gt") {
      out.push_back('>');
    } else if (name == "quot") {
      out.push_back('"');
    } else if (name == "apos") {
      out.push_back('\'');
    } else if (name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x' || name[1] == 'X';
      const std::string digits(name.substr(hex ? 2 : 1));
      AppendUtf8(static_cast<uint32_t>(std::strtoul(digits.c_str(), nullptr, hex ? 16 : 10)), &out);
    } else {
      out.append(text.substr(i, semi - i + 1));  // unknown: keep verbatim
    }
    i = semi;
  }
  return out;
}

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag) + ">";
  const std::string empty = "<" + std::string(tag) + "/>";
  const std::string close = "</" + std::string(tag) + ">";
  size_t pos = 0;
  while (pos < xml.size()) {
    const size_t a = xml.find(open, pos);
    const size_t e = xml.find(empty, pos);
    if (e != std::string_view::npos && (a == std::string_view::npos || e < a)) {
      out.emplace_back();
      pos = e + empty.size();
      continue;
    }
    if (a == std::string_view::npos) break;
    const size_t start = a + open.size();
    const size_t b = xml.find(close, start);
    if (b == std::string_view::npos) break;
    out.push_back(xml.substr(start, b - start));
    pos = b + close.size();
  }
  return out;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  const std::vector<std::string_view> all = XmlElements(xml, tag);
  return all.empty() ? std::string() : XmlUnescape(all.front());
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

int64_t ParseIso8601Micros(std::string_view text) {
  struct tm tm = {};
  const std::string s(text);
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return 0;
  int64_t frac = 0;
  if (*rest == '.') {
    int64_t scale = 100000;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10) frac += (*rest - '0') * scale;
  }
  return MicrosOf(&tm, frac);
}

int64_t ParseHttpDateMicros(std::string_view text) {
  struct tm tm = {};
  const std::string s(text);
  if (strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr) return 0;
  return MicrosOf(&tm, 0);
}

}  // namespace loam::s3
