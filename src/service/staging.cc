#include "service/staging.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

constexpr char kHex[] = "0123456789abcdef";

std::string Hex(const unsigned char* p, size_t n) {
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 15];
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool PlainSegmentChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64Url(std::string_view in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kB64[(v >> k) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    for (int k = 18; k >= 6; k -= 6) out += kB64[(v >> k) & 63];
  }
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const char* at = std::char_traits<char>::find(kB64, 64, c);
    if (at == nullptr) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(at - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string Mac(std::string_view payload, std::string_view secret) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string UtcDay(int64_t micros) {
  const std::chrono::sys_days day = std::chrono::floor<std::chrono::days>(
      std::chrono::sys_time<std::chrono::microseconds>(std::chrono::microseconds(micros)));
  const std::chrono::year_month_day ymd(day);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

Status Denied(const std::string& why) {
  return Status::PermissionDenied("upload token refused: " + why);
}

}  // namespace

std::string EncodeSegment(std::string_view principal) {
  bool plain =
      !principal.empty() && principal.size() <= 128 && principal[0] != '.' && principal[0] != '~';
  for (char c : principal) plain = plain && PlainSegmentChar(c);
  if (plain) return std::string(principal);
  return "~" + Hex(reinterpret_cast<const unsigned char*>(principal.data()), principal.size());
}

Result<std::string> DecodeSegment(std::string_view segment) {
  if (segment.empty() || segment[0] != '~') return std::string(segment);
  if (segment.size() % 2 != 1) return Status::InvalidArgument("malformed encoded segment");
  std::string out;
  for (size_t i = 1; i < segment.size(); i += 2) {
    const int hi = HexValue(segment[i]), lo = HexValue(segment[i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("malformed encoded segment");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string StagingDayPrefix(const std::string& workspace_root, int64_t micros) {
  return (workspace_root.empty() ? "" : workspace_root + "/") + "ingestion-staging/v1/" +
         UtcDay(micros) + "/";
}

std::string StagingUploadPrefix(const StagingPlace& p) {
  return StagingDayPrefix(p.workspace_root, p.created_micros) + "workspaces/" + p.workspace_id +
         "/subjects/" + EncodeSegment(p.principal) + "/pipelines/" + p.pipeline_id + "/targets/" +
         std::to_string(p.table_sid) + "/uploads/" + p.upload_id + "/";
}

std::string StagingDataKey(const StagingPlace& place) {
  return StagingUploadPrefix(place) + "data";
}

std::string SignUploadToken(const UploadGrant& g, std::string_view secret) {
  const std::string payload = Base64Url(json{
      {"u", g.upload_id}, {"k", g.key}, {"e", g.expires_seconds}, {"s", g.size}, {"h", g.sha256}}
                                            .dump());
  const std::string signed_part = "v1." + payload;
  return signed_part + "." + Base64Url(Mac(signed_part, secret));
}

Result<UploadGrant> VerifyUploadToken(std::string_view token, std::string_view secret,
                                      int64_t now_seconds) {
  if (token.size() > 8192) return Denied("too long");
  const size_t dot = token.rfind('.');
  if (token.substr(0, 3) != "v1." || dot == std::string_view::npos || dot < 3) {
    return Denied("not a Loam upload token");
  }
  const std::string_view signed_part = token.substr(0, dot);
  const std::optional<std::string> mac = FromBase64Url(token.substr(dot + 1));
  const std::string want = Mac(signed_part, secret);
  if (!mac || mac->size() != want.size() ||
      CRYPTO_memcmp(mac->data(), want.data(), want.size()) != 0) {
    return Denied("bad signature (tampered, truncated, or signed by another server)");
  }
  const std::optional<std::string> payload = FromBase64Url(signed_part.substr(3));
  json j = payload ? ParseJson(*payload) : json();
  UploadGrant g;
  try {
    g.upload_id = j.at("u");
    g.key = j.at("k");
    g.expires_seconds = j.at("e");
    g.size = j.at("s");
    g.sha256 = j.at("h");
  } catch (const json::exception&) {
    return Denied("malformed payload");
  }
  if (now_seconds >= g.expires_seconds) {
    return Denied("expired " + std::to_string(now_seconds - g.expires_seconds) +
                  " s ago; ask for a new upload");
  }
  return g;
}

HashingSource::HashingSource(ByteSource& inner, uint64_t limit)
    : inner_(inner), limit_(limit), ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

HashingSource::~HashingSource() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Result<size_t> HashingSource::Read(char* dst, size_t n) {
  ASSIGN_OR_RETURN(size_t got, inner_.Read(dst, n));
  if (got == 0) {
    if (at_end) RETURN_NOT_OK(at_end(*this));
    return size_t{0};
  }
  bytes_ += got;
  if (bytes_ > limit_) {
    return Status::ResourceExhausted("the body is larger than the declared " +
                                     std::to_string(limit_) + " bytes; nothing was stored")
        .WithErrorCode(ErrorCode::kLimitExceeded);
  }
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), dst, got);
  return got;
}

std::string HashingSource::HexDigest() {
  if (digest_.empty()) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &len);
    digest_ = Hex(out, len);
  }
  return digest_;
}

std::string CombineDigests(const std::vector<std::string>& digests) {
  for (const std::string& d : digests) {
    if (d.empty()) return "";
  }
  if (digests.size() == 1) return digests[0];
  std::string joined;
  for (const std::string& d : digests) joined += (joined.empty() ? "" : "\n") + d;
  return Sha256Hex(joined);
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (HexValue(c) < 0) return false;
  }
  return true;
}

}  // namespace loam::service
