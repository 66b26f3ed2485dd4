// AWS Signature Version 4 for S3: header signing and presigned URLs.
//
// Pure functions over a described request; no I/O. The canonical request is
// built exactly as AWS specifies (sorted, AWS-percent-encoded query with "="
// even for empty values, lower-cased sorted headers), because S3-compatible
// servers such as Ceph RGW reject anything else with 403.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loam::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // optional (temporary credentials)
};

using Header = std::pair<std::string, std::string>;
using QueryParams = std::vector<std::pair<std::string, std::string>>;  // raw, unencoded

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

// Base64 of the MD5 of `data` (the Content-MD5 header).
std::string Md5Base64(std::string_view data);
// AWS percent-encoding: keeps A-Z a-z 0-9 - _ . ~ (and '/' unless
// `encode_slash`), encodes every other byte as %XX with upper-case hex.
std::string AwsUriEncode(std::string_view s, bool encode_slash);
// Sorted by encoded name then value, "name=value" joined by '&'.
std::string CanonicalQueryString(const QueryParams& query);
// "20130524T000000Z" for a Unix time in seconds.
std::string AmzDate(int64_t unix_seconds);

struct RequestToSign {
  std::string method;        // "GET", "PUT", ...
  std::string host;          // the Host header: "bucket.s3.amazonaws.com", "127.0.0.1:7480"
  std::string encoded_path;  // canonical URI, already encoded: "/bucket/a%20b"
  QueryParams query;
  // Headers to sign besides host, x-amz-date and x-amz-content-sha256.
  std::vector<Header> headers;
  // Hex SHA-256 of the body, or kUnsignedPayload.
  std::string payload_sha256;
};

struct Signer {
  Credentials credentials;
  std::string region;
  std::string service = "s3";

  // The headers to add to the request: x-amz-date, x-amz-content-sha256,
  // x-amz-security-token (with a session token) and Authorization.
  std::vector<Header> Sign(const RequestToSign& request, int64_t unix_seconds) const;

  // The complete query string of a presigned URL (the request's own query
  // plus the X-Amz-* parameters) valid for `expires_seconds` from
  // `unix_seconds`. The payload is UNSIGNED-PAYLOAD unless
  // `request.payload_sha256` is set (then the request must send that
  // x-amz-content-sha256); headers in `request.headers` (e.g. content-md5)
  // become signed and must be sent.
  std::string PresignQuery(const RequestToSign& request, int64_t unix_seconds,
                           int64_t expires_seconds) const;

  // Exposed for tests against AWS's published examples.
  std::string CanonicalRequest(const RequestToSign& request, const std::vector<Header>& headers,
                               std::string_view payload) const;
  std::string Signature(std::string_view canonical_request, int64_t unix_seconds) const;
};

}  // namespace loam::s3
