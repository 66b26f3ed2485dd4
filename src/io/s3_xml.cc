#include "io/s3_xml.h"

#include <expat.h>

#include <charconv>
#include <chrono>
#include <memory>

#include "common/percent_decode.h"

namespace loam::s3 {
namespace {

// Expat reports namespaced names as "uri\x01local".
constexpr char kNamespaceSeparator = '\x01';

struct ParseState {
  XML_Parser parser = nullptr;
  XmlElement root;
  std::vector<XmlElement*> open;  // the path from the root to the current element
  bool has_root = false;
  std::string refusal;  // why the handlers stopped the parser
};

std::string LocalName(const XML_Char* name) {
  std::string_view n(name);
  const size_t sep = n.rfind(kNamespaceSeparator);
  return std::string(sep == std::string_view::npos ? n : n.substr(sep + 1));
}

void Stop(ParseState* s, std::string why) {
  if (s->refusal.empty()) s->refusal = std::move(why);
  XML_StopParser(s->parser, XML_FALSE);
}

void XMLCALL OnStart(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
  auto* s = static_cast<ParseState*>(data);
  if (s->open.size() >= static_cast<size_t>(kMaxXmlDepth)) {
    return Stop(s, "elements nested deeper than " + std::to_string(kMaxXmlDepth));
  }
  XmlElement* element;
  if (s->open.empty()) {
    s->has_root = true;
    element = &s->root;
  } else {
    element = &s->open.back()->children.emplace_back();
  }
  element->name = LocalName(name);
  s->open.push_back(element);
}

void XMLCALL OnEnd(void* data, const XML_Char* /*name*/) {
  static_cast<ParseState*>(data)->open.pop_back();
}

void XMLCALL OnText(void* data, const XML_Char* text, int length) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->open.empty()) s->open.back()->text.append(text, static_cast<size_t>(length));
}

// S3 never sends a DTD; one could only define entities to expand.
void XMLCALL OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  Stop(static_cast<ParseState*>(data), "a document type declaration");
}

Status Malformed(const std::string& what, const std::string& why) {
  return Status::Unavailable("s3 " + what + ": unreadable answer (" + why + ")");
}

// Digits only, no sign, no overflow.
template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && text[0] != '-';
}

// Fixed-width decimal field at `text[pos, pos + width)`.
bool Digits(std::string_view text, size_t pos, size_t width, int* out) {
  return pos + width <= text.size() && ParseNumber(text.substr(pos, width), out);
}

int64_t MicrosOf(int year, int month, int day, int hour, int minute, int second, int64_t frac) {
  using namespace std::chrono;
  const year_month_day date{std::chrono::year(year),
                            std::chrono::month(static_cast<unsigned>(month)),
                            std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return 0;
  const sys_seconds t = sys_days(date) + hours(hour) + minutes(minute) + seconds(second);
  return t.time_since_epoch().count() * 1000000 + frac;
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child) const {
  for (const XmlElement& c : children) {
    if (c.name == child) return &c;
  }
  return nullptr;
}

std::string XmlElement::ChildText(std::string_view child) const {
  const XmlElement* c = Child(child);
  return c == nullptr ? std::string() : c->text;
}

Result<XmlElement> ParseXml(std::string_view body, const std::string& what) {
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(
      XML_ParserCreateNS(nullptr, kNamespaceSeparator), &XML_ParserFree);
  if (parser == nullptr) return Status::Internal("s3 " + what + ": cannot create an XML parser");
  ParseState state;
  state.parser = parser.get();
  XML_SetUserData(parser.get(), &state);
  XML_SetElementHandler(parser.get(), &OnStart, &OnEnd);
  XML_SetCharacterDataHandler(parser.get(), &OnText);
  XML_SetStartDoctypeDeclHandler(parser.get(), &OnDoctype);
  // AWS keeps a slow CompleteMultipartUpload alive by sending whitespace
  // before the document; the XML declaration must start the entity.
  const size_t start = body.find_first_not_of(" \t\r\n");
  body.remove_prefix(start == std::string_view::npos ? body.size() : start);
  if (body.size() > static_cast<size_t>(INT32_MAX)) return Malformed(what, "body too large");
  if (XML_Parse(parser.get(), body.data(), static_cast<int>(body.size()), XML_TRUE) !=
      XML_STATUS_OK) {
    if (!state.refusal.empty()) return Malformed(what, state.refusal);
    return Malformed(what, std::string(XML_ErrorString(XML_GetErrorCode(parser.get()))) +
                               " at line " +
                               std::to_string(XML_GetCurrentLineNumber(parser.get())));
  }
  if (!state.has_root) return Malformed(what, "no element");
  return std::move(state.root);
}

Result<ListObjectsResult> ParseListObjects(std::string_view body, const std::string& what) {
  Result<XmlElement> doc = ParseXml(body, what);
  if (!doc.ok()) return doc.status();
  if (doc->name != "ListBucketResult") return Malformed(what, "<" + doc->name + "> is no listing");
  ListObjectsResult out;
  const XmlElement* truncated = doc->Child("IsTruncated");
  if (truncated == nullptr || (truncated->text != "true" && truncated->text != "false")) {
    return Malformed(what, "no <IsTruncated>true|false</IsTruncated>");
  }
  out.truncated = truncated->text == "true";
  // Asked for with encoding-type=url, so that keys holding characters XML
  // cannot carry (control characters) still list; a server that ignores
  // the request sends keys as they are, without <EncodingType>.
  const bool url_encoded = doc->ChildText("EncodingType") == "url";
  for (const XmlElement& c : doc->children) {
    if (c.name != "Contents") continue;
    ListedObject o;
    const XmlElement* key = c.Child("Key");
    if (key == nullptr || key->text.empty()) return Malformed(what, "an entry without a <Key>");
    if (!url_encoded) {
      o.key = key->text;
    } else if (std::optional<std::string> decoded = PercentDecode(key->text, true)) {
      o.key = *std::move(decoded);  // AWS escapes a literal '+'
    } else {
      return Malformed(what, "a <Key> that is not URL-encoded");
    }
    if (!ParseNumber(c.ChildText("Size"), &o.size)) {
      return Malformed(what, "entry '" + o.key + "' has no valid <Size>");
    }
    o.etag = c.ChildText("ETag");
    o.mtime_micros = ParseIso8601Micros(c.ChildText("LastModified"));
    out.objects.push_back(std::move(o));
  }
  return out;
}

Result<std::string> ParseUploadId(std::string_view body, const std::string& what) {
  Result<XmlElement> doc = ParseXml(body, what);
  if (!doc.ok()) return doc.status();
  std::string id = doc->ChildText("UploadId");
  if (doc->name != "InitiateMultipartUploadResult" || id.empty()) {
    return Malformed(what, "no <UploadId>");
  }
  return id;
}

S3Error ParseError(std::string_view body) {
  Result<XmlElement> doc = ParseXml(body, "error");
  if (!doc.ok() || doc->name != "Error") return {};
  return {doc->ChildText("Code"), doc->ChildText("Message")};
}

Result<std::string> ParseCompletedEtag(std::string_view body, const std::string& what) {
  Result<XmlElement> doc = ParseXml(body, what);
  if (!doc.ok()) return doc.status();
  if (doc->name == "Error") {
    return Status::Unavailable("s3 " + what + ": " + doc->ChildText("Code") + ": " +
                               doc->ChildText("Message"));
  }
  const XmlElement* etag = doc->Child("ETag");
  if (doc->name != "CompleteMultipartUploadResult" || etag == nullptr) {
    return Malformed(what, "no <ETag>");
  }
  return etag->text;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

int64_t ParseIso8601Micros(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  int year, month, day, hour, minute, second;
  if (!Digits(text, 0, 4, &year) || !Digits(text, 5, 2, &month) || !Digits(text, 8, 2, &day) ||
      !Digits(text, 11, 2, &hour) || !Digits(text, 14, 2, &minute) ||
      !Digits(text, 17, 2, &second) || text[4] != '-' || text[7] != '-' || text[10] != 'T' ||
      text[13] != ':' || text[16] != ':') {
    return 0;
  }
  int64_t frac = 0;
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    int64_t scale = 100000;
    for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, scale /= 10) {
      frac += (text[pos] - '0') * scale;
    }
  }
  return MicrosOf(year, month, day, hour, minute, second, frac);
}

int64_t ParseHttpDateMicros(std::string_view text) {
  // "Www, DD Mon YYYY HH:MM:SS GMT"
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  int day, year, hour, minute, second;
  if (text.size() < 29 || text.substr(3, 2) != ", " || !Digits(text, 5, 2, &day) ||
      !Digits(text, 12, 4, &year) || !Digits(text, 17, 2, &hour) || !Digits(text, 20, 2, &minute) ||
      !Digits(text, 23, 2, &second) || text.substr(25) != " GMT") {
    return 0;
  }
  const size_t m = kMonths.find(text.substr(8, 3));
  if (m == std::string_view::npos || m % 3 != 0) return 0;
  return MicrosOf(year, static_cast<int>(m / 3) + 1, day, hour, minute, second, 0);
}

}  // namespace loam::s3
