// S3ObjectStore: objects in an S3-compatible bucket (AWS S3, Ceph RGW, MinIO).
//
// Every request is signed with our SigV4 signer (io/s3_sigv4.h) and sent over
// a bounded pool of reused libcurl connections. Coordination uses only
// conditional writes: put-if-absent is `If-None-Match: *`, put-if-match is
// `If-Match: <etag>`. Idempotent requests are retried with jittered backoff on
// 5xx, throttling and transport errors. A conditional PUT is never blindly
// retried: after a 5xx (or a lost connection) its outcome is unknown, so the
// store reads the object back and decides by the writer nonce it attached as
// user metadata (`x-amz-meta-loam-nonce`) whether its own write landed.
// Large unconditional puts stream as multipart uploads; commit objects
// (conditional puts) are always single PUTs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/http_client.h"
#include "io/s3_sigv4.h"
#include "loam/object_store.h"

namespace loam {

// A transport failpoint for tests: what happens to one request.
enum class S3Fault {
  kNone,
  kDropRequest,   // never sent; the client sees a 500
  kLoseResponse,  // sent and applied by the server; the client sees a 500
};

// How an endpoint wants the etag in `If-Match`. AWS documents the quoted
// form; Ceph RGW 16 honours only the unquoted one. kDetect starts quoted and
// switches for good the first time a refused CAS finds the etag unchanged.
enum class IfMatchForm { kDetect, kQuoted, kUnquoted };

struct S3Options {
  std::string endpoint;  // "http://127.0.0.1:7480"; empty: https://s3.<region>.amazonaws.com
  std::string region = "us-east-1";
  std::string bucket;
  std::string prefix;      // keys live under "<prefix>/"; empty: the bucket root
  bool path_style = true;  // "/bucket/key"; false: "bucket.host/key"
  s3::Credentials credentials;
  IfMatchForm if_match = IfMatchForm::kDetect;
  HttpOptions http;
  int max_attempts = 6;  // per request, for retryable failures
  int64_t backoff_base_ms = 20;
  int64_t backoff_cap_ms = 2000;
  // Unconditional puts larger than this go up as multipart uploads of this
  // part size (S3's minimum part is 5 MiB); memory per put is one part.
  uint64_t part_size = 8ull << 20;
  // Tests only: decides the fate of each request ("PUT", full key).
  std::function<S3Fault(std::string_view method, std::string_view full_key)> fault;

  // s3://bucket[/prefix][?endpoint=URL&region=R&addressing=path|virtual&if_match=quoted|unquoted|detect]
  // Unset fields come from AWS_ENDPOINT_URL, AWS_REGION (or AWS_DEFAULT_REGION),
  // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN. Addressing
  // defaults to path-style with an explicit endpoint, virtual-host on AWS.
  static Result<S3Options> FromUri(std::string_view uri);
};

class S3ObjectStore final : public ObjectStore {
 public:
  static Result<std::shared_ptr<S3ObjectStore>> Open(S3Options options);

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  std::string Describe() const override;
  bool CanPresign() const override { return true; }
  Result<std::string> PresignPut(
      std::string_view key, int64_t expires_seconds,
      const std::vector<std::pair<std::string, std::string>>& headers) const override {
    return PresignUrl("PUT", key, expires_seconds, headers);
  }

  // A URL that lets its holder `method` ("GET" or "PUT") `key` without
  // credentials until `expires_seconds` after `now_seconds` (default: now).
  // With `content_md5` (base64), a PUT must send exactly that Content-MD5
  // header, which the server checks against the body: only that object fits.
  Result<std::string> PresignUrl(std::string_view method, std::string_view key,
                                 int64_t expires_seconds, const std::string& content_md5 = "",
                                 std::optional<int64_t> now_seconds = std::nullopt) const;
  // As above with any headers signed (lower-case names), e.g. content-length
  // to bind the size: the request must send exactly these.
  Result<std::string> PresignUrl(std::string_view method, std::string_view key,
                                 int64_t expires_seconds,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::optional<int64_t> now_seconds = std::nullopt) const;

  const S3Options& options() const { return options_; }
  // The If-Match form in use (kDetect until detection has decided).
  IfMatchForm if_match_form() const { return if_match_form_.load(); }

 private:
  struct Call;
  struct Conditional;
  explicit S3ObjectStore(S3Options options);

  std::string FullKey(std::string_view key) const;
  s3::RequestToSign ToSign(const Call& call) const;
  std::string UrlOf(const s3::RequestToSign& request) const;
  // One signed request; retried when `call.idempotent` and the failure is retryable.
  Result<HttpResponse> Execute(const Call& call);
  Result<HttpResponse> ExecuteOnce(const Call& call);
  Status ErrorOf(const HttpResponse& response, const Call& call) const;

  struct Found {
    ObjectMeta meta;
    std::string nonce;
  };
  Result<Found> HeadFull(const std::string& full_key);
  Result<ObjectMeta> PutSingle(const std::string& full_key, const std::string& body);
  Result<ObjectMeta> PutConditional(const std::string& full_key, const std::string& body,
                                    const PutOptions& options);
  Result<ObjectMeta> PutMultipart(const std::string& full_key, std::string buffer,
                                  ByteSource& source);

  const S3Options options_;
  const s3::Signer signer_;
  std::string scheme_;    // "http" or "https"
  std::string hostport_;  // "127.0.0.1:7480"
  HttpClient http_;
  std::atomic<IfMatchForm> if_match_form_;
};

}  // namespace loam
