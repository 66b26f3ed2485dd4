// S3 response bodies, read with libexpat: namespaces, entities and CDATA are
// the parser's business; a body that is not one well-formed document (cut
// short, malformed, with a DTD) is an error, never an empty answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"

namespace loam::s3 {

// One element: its local name (namespace dropped), its character data
// (entities and CDATA resolved, whitespace kept) and its child elements.
struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  // The first child named `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // The first such child's text, or "" when there is none.
  std::string ChildText(std::string_view name) const;
};

// Limits of a parsed body: S3 documents are flat and at most a few MB.
inline constexpr int kMaxXmlDepth = 16;

// Parses `body` as one XML document. Unavailable (the answer is unreadable,
// as a cut connection would leave it) naming `what` when it is not
// well-formed, declares a DTD or nests deeper than kMaxXmlDepth.
Result<XmlElement> ParseXml(std::string_view body, const std::string& what);

// One <Contents> of a ListObjectsV2 answer.
struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as sent (usually quoted)
  int64_t mtime_micros = 0;
};

struct ListObjectsResult {
  std::vector<ListedObject> objects;
  bool truncated = false;
};

// A <ListBucketResult>; its <IsTruncated> and each entry's <Key> and <Size>
// must be present and well-formed. Keys are URL-decoded when the answer says
// <EncodingType>url</EncodingType>.
Result<ListObjectsResult> ParseListObjects(std::string_view body, const std::string& what);

// The <UploadId> of an <InitiateMultipartUploadResult>.
Result<std::string> ParseUploadId(std::string_view body, const std::string& what);

// An <Error> answer's code and message; both "" when the body is not one
// (a proxy's HTML page, an empty body).
struct S3Error {
  std::string code;
  std::string message;
};
S3Error ParseError(std::string_view body);

// A CompleteMultipartUpload answer: the object's <ETag> (Ceph RGW 16 sends
// it empty on the first completion), or Unavailable for
// an <Error> sent with status 200 (S3 does that when completion fails late).
Result<std::string> ParseCompletedEtag(std::string_view body, const std::string& what);

// Escapes &, <, >, " and ' for an element's text.
std::string XmlEscape(std::string_view text);

// "2026-11-30T04:10:00.000Z" -> Unix microseconds; 0 when unparsable.
int64_t ParseIso8601Micros(std::string_view text);
// "Mon, 30 Nov 2026 04:10:00 GMT" (an HTTP date) -> Unix microseconds; 0 when unparsable.
int64_t ParseHttpDateMicros(std::string_view text);

}  // namespace loam::s3
