#include "io/s3_sigv4.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "common/crypto.h"

namespace loam::s3 {
namespace {

std::string Md5(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_md5(), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims and collapses runs of spaces, as the canonical header form requires.
std::string CanonicalValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string DateOf(int64_t unix_seconds) { return AmzDate(unix_seconds).substr(0, 8); }

// Lower-cased, sorted, with the mandatory headers included.
std::vector<Header> CanonicalHeaders(const std::vector<Header>& headers) {
  std::vector<Header> out;
  for (const auto& [name, value] : headers) out.emplace_back(Lower(name), CanonicalValue(value));
  std::sort(out.begin(), out.end());
  return out;
}

std::string SignedHeaderList(const std::vector<Header>& canonical) {
  std::string out;
  for (const auto& h : canonical) {
    if (!out.empty()) out.push_back(';');
    out += h.first;
  }
  return out;
}

}  // namespace

std::string Md5Base64(std::string_view data) {
  const std::string d = Md5(data);
  unsigned char out[64];
  const int n = EVP_EncodeBlock(out, reinterpret_cast<const unsigned char*>(d.data()),
                                static_cast<int>(d.size()));
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n));
}

std::string AwsUriEncode(std::string_view s, bool encode_slash) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 0xf]);
    }
  }
  return out;
}

std::string CanonicalQueryString(const QueryParams& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [k, v] : query)
    encoded.emplace_back(AwsUriEncode(k, true), AwsUriEncode(v, true));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += k + "=" + v;
  }
  return out;
}

std::string AmzDate(int64_t unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string Signer::CanonicalRequest(const RequestToSign& request,
                                     const std::vector<Header>& headers,
                                     std::string_view payload) const {
  const std::vector<Header> canonical = CanonicalHeaders(headers);
  std::string out = request.method + "\n" + request.encoded_path + "\n" +
                    CanonicalQueryString(request.query) + "\n";
  for (const auto& [name, value] : canonical) out += name + ":" + value + "\n";
  out += "\n" + SignedHeaderList(canonical) + "\n";
  out += payload;
  return out;
}

std::string Signer::Signature(std::string_view canonical_request, int64_t unix_seconds) const {
  const std::string date = DateOf(unix_seconds);
  const std::string scope = date + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + AmzDate(unix_seconds) + "\n" + scope + "\n" +
                              Sha256Hex(canonical_request);
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, "aws4_request");
  const std::string sig = HmacSha256(key, to_sign);
  return HexEncode(sig);
}

std::vector<Header> Signer::Sign(const RequestToSign& request, int64_t unix_seconds) const {
  std::vector<Header> added = {{"x-amz-date", AmzDate(unix_seconds)},
                               {"x-amz-content-sha256", request.payload_sha256}};
  if (!credentials.session_token.empty()) {
    added.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::vector<Header> signed_headers = request.headers;
  signed_headers.emplace_back("host", request.host);
  signed_headers.insert(signed_headers.end(), added.begin(), added.end());
  const std::string creq = CanonicalRequest(request, signed_headers, request.payload_sha256);
  const std::string scope = DateOf(unix_seconds) + "/" + region + "/" + service + "/aws4_request";
  added.emplace_back("Authorization",
                     "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                         ",SignedHeaders=" + SignedHeaderList(CanonicalHeaders(signed_headers)) +
                         ",Signature=" + Signature(creq, unix_seconds));
  return added;
}

std::string Signer::PresignQuery(const RequestToSign& request, int64_t unix_seconds,
                                 int64_t expires_seconds) const {
  std::vector<Header> signed_headers = request.headers;
  signed_headers.emplace_back("host", request.host);
  const std::string scope = DateOf(unix_seconds) + "/" + region + "/" + service + "/aws4_request";
  RequestToSign presigned = request;
  presigned.query.emplace_back("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
  presigned.query.emplace_back("X-Amz-Credential", credentials.access_key_id + "/" + scope);
  presigned.query.emplace_back("X-Amz-Date", AmzDate(unix_seconds));
  presigned.query.emplace_back("X-Amz-Expires", std::to_string(expires_seconds));
  presigned.query.emplace_back("X-Amz-SignedHeaders",
                               SignedHeaderList(CanonicalHeaders(signed_headers)));
  if (!credentials.session_token.empty()) {
    presigned.query.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  const std::string creq =
      CanonicalRequest(presigned, signed_headers,
                       request.payload_sha256.empty() ? kUnsignedPayload : request.payload_sha256);
  return CanonicalQueryString(presigned.query) +
         "&X-Amz-Signature=" + Signature(creq, unix_seconds);
}

}  // namespace loam::s3
