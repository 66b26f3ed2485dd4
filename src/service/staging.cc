#include "service/staging.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

bool PlainSegmentChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
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
  return "~" + HexEncode(principal);
}

Result<std::string> DecodeSegment(std::string_view segment) {
  if (segment.empty() || segment[0] != '~') return std::string(segment);
  std::optional<std::string> decoded = HexDecode(segment.substr(1));
  if (!decoded) return Status::InvalidArgument("malformed encoded segment");
  return std::move(*decoded);
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
  const std::string payload = Base64UrlEncode(json{
      {"u", g.upload_id}, {"k", g.key}, {"e", g.expires_seconds}, {"s", g.size}, {"h", g.sha256}}
                                                  .dump());
  const std::string signed_part = "v1." + payload;
  return signed_part + "." + Base64UrlEncode(HmacSha256(secret, signed_part));
}

Result<UploadGrant> VerifyUploadToken(std::string_view token, std::string_view secret,
                                      int64_t now_seconds) {
  if (token.size() > 8192) return Denied("too long");
  const size_t dot = token.rfind('.');
  if (token.substr(0, 3) != "v1." || dot == std::string_view::npos || dot < 3) {
    return Denied("not a Loam upload token");
  }
  const std::string_view signed_part = token.substr(0, dot);
  const std::optional<std::string> mac = Base64UrlDecode(token.substr(dot + 1));
  if (!mac || !ConstantTimeEqual(*mac, HmacSha256(secret, signed_part))) {
    return Denied("bad signature (tampered, truncated, or signed by another server)");
  }
  const std::optional<std::string> payload = Base64UrlDecode(signed_part.substr(3));
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

HashingSource::HashingSource(ByteSource& inner, uint64_t limit) : inner_(inner), limit_(limit) {}

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
  hasher_.Update(std::string_view(dst, got));
  return got;
}

std::string HashingSource::HexDigest() {
  if (digest_.empty()) digest_ = hasher_.HexDigest();
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

}  // namespace loam::service
