#include "io/s3_object_store.h"

#include <chrono>
#include <cstdlib>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "io/object_store_util.h"
#include "io/s3_xml.h"

namespace loam {

// One logical request. `full_key` is the bucket-relative key ("" = the bucket).
struct S3ObjectStore::Call {
  std::string method;
  std::string full_key;
  s3::QueryParams query;
  std::vector<s3::Header> headers;
  std::string_view body;
  ByteSink* sink = nullptr;
  bool idempotent = true;
  std::string what;  // for messages: "get 'dir/obj'"
};

namespace {

constexpr std::string_view kNonceHeader = "x-amz-meta-loam-nonce";

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

bool Retryable(long status) { return status == 429 || status >= 500; }

std::string Unquoted(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

std::string Quoted(std::string_view etag) { return "\"" + Unquoted(etag) + "\""; }

// Fills `out` from `source` until it holds `limit` bytes or the source ends;
// returns true at the end of the source.
Result<bool> Fill(ByteSource& source, uint64_t limit, std::string* out) {
  constexpr size_t kChunk = 1 << 20;
  while (out->size() < limit) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, limit - out->size()));
    const size_t old = out->size();
    out->resize(old + want);
    ASSIGN_OR_RETURN(size_t got, source.Read(out->data() + old, want));
    out->resize(old + got);
    if (got == 0) return true;
  }
  return false;
}

void RetryPause(const S3Options& o, int attempt) {
  Backoff{o.backoff_base_ms * 1000, o.backoff_cap_ms * 1000, 0.5}.Sleep(attempt);
}

ObjectMeta MetaOf(const HttpResponse& r, uint64_t size) {
  ObjectMeta m;
  m.size = size;
  m.etag = Quoted(r.Header("etag"));
  m.mtime_micros = s3::ParseHttpDateMicros(r.Header("last-modified"));
  return m;
}

// A PUT answer has an etag but no Last-Modified: the write time is now.
ObjectMeta WrittenMeta(std::string_view etag, uint64_t size) {
  ObjectMeta m;
  m.size = size;
  m.etag = Quoted(etag);
  m.mtime_micros = NowSeconds() * 1000000;
  return m;
}

uint64_t ContentLength(const HttpResponse& r) {
  return std::strtoull(std::string(r.Header("content-length")).c_str(), nullptr, 10);
}

// Total size from "Content-Range: bytes 0-9/1234".
uint64_t RangeTotal(const HttpResponse& r) {
  const std::string_view cr = r.Header("content-range");
  const size_t slash = cr.rfind('/');
  if (slash == std::string_view::npos) return 0;
  return std::strtoull(std::string(cr.substr(slash + 1)).c_str(), nullptr, 10);
}

}  // namespace

Result<S3Options> S3Options::FromUri(std::string_view uri) {
  constexpr std::string_view kScheme = "s3://";
  if (uri.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument("not an s3:// URI: '" + std::string(uri) + "'");
  }
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view query;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  S3Options o;
  const size_t slash = rest.find('/');
  o.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) o.prefix = std::string(rest.substr(slash + 1));
  while (!o.prefix.empty() && o.prefix.back() == '/') o.prefix.pop_back();
  if (o.bucket.empty())
    return Status::InvalidArgument("s3 URI '" + std::string(uri) + "' has no bucket");
  if (!o.prefix.empty()) RETURN_NOT_OK(ValidateObjectKey(o.prefix));
  o.endpoint = EnvOr("AWS_ENDPOINT_URL", "");
  o.region = EnvOr("AWS_REGION", EnvOr("AWS_DEFAULT_REGION", "us-east-1"));
  o.credentials.access_key_id = EnvOr("AWS_ACCESS_KEY_ID", "");
  o.credentials.secret_access_key = EnvOr("AWS_SECRET_ACCESS_KEY", "");
  o.credentials.session_token = EnvOr("AWS_SESSION_TOKEN", "");
  std::string addressing;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string key(pair.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (key == "endpoint") {
      o.endpoint = value;
    } else if (key == "region") {
      o.region = value;
    } else if (key == "addressing" && (value == "path" || value == "virtual")) {
      addressing = value;
    } else if (key == "if_match" && value == "quoted") {
      o.if_match = IfMatchForm::kQuoted;
    } else if (key == "if_match" && value == "unquoted") {
      o.if_match = IfMatchForm::kUnquoted;
    } else if (key == "if_match" && value == "detect") {
      o.if_match = IfMatchForm::kDetect;
    } else {
      return Status::InvalidArgument("s3 URI '" + std::string(uri) + "': unknown option '" +
                                     std::string(pair) +
                                     "' (endpoint, region, addressing=path|virtual, "
                                     "if_match=quoted|unquoted|detect)");
    }
  }
  o.path_style = addressing.empty() ? !o.endpoint.empty() : addressing == "path";
  return o;
}

S3ObjectStore::S3ObjectStore(S3Options options)
    : options_(std::move(options)),
      signer_{options_.credentials, options_.region},
      http_(options_.http),
      if_match_form_(options_.if_match) {
  std::string endpoint = options_.endpoint.empty()
                             ? "https://s3." + options_.region + ".amazonaws.com"
                             : options_.endpoint;
  const size_t sep = endpoint.find("://");
  scheme_ = sep == std::string::npos ? "https" : endpoint.substr(0, sep);
  hostport_ = sep == std::string::npos ? endpoint : endpoint.substr(sep + 3);
  while (!hostport_.empty() && hostport_.back() == '/') hostport_.pop_back();
  // curl sends no port in Host for the scheme's default, so none may be signed.
  const std::string default_port = scheme_ == "http" ? ":80" : ":443";
  if (hostport_.size() > default_port.size() &&
      hostport_.compare(hostport_.size() - default_port.size(), default_port.size(),
                        default_port) == 0) {
    hostport_.resize(hostport_.size() - default_port.size());
  }
}

Result<std::shared_ptr<S3ObjectStore>> S3ObjectStore::Open(S3Options options) {
  if (options.bucket.empty()) return Status::InvalidArgument("S3 store needs a bucket");
  if (options.credentials.access_key_id.empty() || options.credentials.secret_access_key.empty()) {
    return Status::InvalidArgument(
        "S3 store needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  if (options.part_size < (5ull << 20)) {
    return Status::InvalidArgument("S3 multipart part size must be at least 5 MiB");
  }
  return std::shared_ptr<S3ObjectStore>(new S3ObjectStore(std::move(options)));
}

std::string S3ObjectStore::FullKey(std::string_view key) const {
  return options_.prefix.empty() ? std::string(key) : options_.prefix + "/" + std::string(key);
}

std::string S3ObjectStore::Describe() const {
  return "s3://" + options_.bucket + (options_.prefix.empty() ? "" : "/" + options_.prefix);
}

s3::RequestToSign S3ObjectStore::ToSign(const Call& call) const {
  s3::RequestToSign r;
  r.method = call.method;
  const std::string key = s3::AwsUriEncode(call.full_key, /*encode_slash=*/false);
  if (options_.path_style) {
    r.host = hostport_;
    r.encoded_path = "/" + options_.bucket + (call.full_key.empty() ? "" : "/" + key);
  } else {
    r.host = options_.bucket + "." + hostport_;
    r.encoded_path = "/" + key;
  }
  r.query = call.query;
  r.headers = call.headers;
  return r;
}

std::string S3ObjectStore::UrlOf(const s3::RequestToSign& request) const {
  const std::string q = s3::CanonicalQueryString(request.query);
  return scheme_ + "://" + request.host + request.encoded_path + (q.empty() ? "" : "?" + q);
}

Result<HttpResponse> S3ObjectStore::ExecuteOnce(const Call& call) {
  s3::RequestToSign r = ToSign(call);
  r.payload_sha256 = Sha256Hex(call.body);
  HttpRequest http;
  http.method = call.method;
  http.url = UrlOf(r);
  http.headers = call.headers;
  for (auto& h : signer_.Sign(r, NowSeconds())) http.headers.push_back(std::move(h));
  http.body = call.body;
  http.sink = call.sink;
  const S3Fault fault =
      options_.fault ? options_.fault(call.method, call.full_key) : S3Fault::kNone;
  if (fault == S3Fault::kNone) return http_.Send(http);
  if (fault == S3Fault::kLoseResponse) RETURN_NOT_OK(http_.Send(http).status());
  HttpResponse injected;
  injected.status = 500;
  injected.body = "<Error><Code>InternalError</Code><Message>injected fault</Message></Error>";
  return injected;
}

Result<HttpResponse> S3ObjectStore::Execute(const Call& call) {
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> r = ExecuteOnce(call);
    const bool streamed = r.ok() && r->streamed_bytes > 0;
    const bool retry = call.idempotent && attempt < options_.max_attempts && !streamed &&
                       (r.ok() ? Retryable(r->status) : r.status().IsUnavailable());
    if (!retry) return r;
    RetryPause(options_, attempt);
  }
}

Status S3ObjectStore::ErrorOf(const HttpResponse& r, const Call& call) const {
  std::string msg = "s3 " + call.what + " in " + Describe() + ": HTTP " + std::to_string(r.status);
  const s3::S3Error error = s3::ParseError(r.body);
  if (!error.code.empty()) msg += " " + error.code;
  if (!error.message.empty()) msg += ": " + error.message;
  if (const std::string_view id = r.Header("x-amz-request-id"); !id.empty()) {
    msg += " (request id " + std::string(id) + ")";
  }
  switch (r.status) {
    case 400:
      return Status::InvalidArgument(msg);
    case 401:
    case 403:
      return Status::PermissionDenied(msg);
    case 404:
      return Status::NotFound(msg);
    case 409:
    case 412:
      return Status::Aborted(msg);
    case 416:
      return Status::InvalidArgument(msg);
    default:
      break;
  }
  if (Retryable(r.status)) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

Result<S3ObjectStore::Found> S3ObjectStore::HeadFull(const std::string& full_key) {
  Call call{"HEAD", full_key};
  call.what = "head '" + full_key + "'";
  ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
  if (r.status == 404) return NoSuchObject(full_key);
  if (r.status != 200) return ErrorOf(r, call);
  return Found{MetaOf(r, ContentLength(r)), std::string(r.Header(kNonceHeader))};
}

Result<ObjectMeta> S3ObjectStore::Head(std::string_view key) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  ASSIGN_OR_RETURN(Found f, HeadFull(FullKey(key)));
  return f.meta;
}

Result<ObjectMeta> S3ObjectStore::Read(std::string_view key, std::optional<ByteRange> range,
                                       ByteSink& sink) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  const std::string full = FullKey(key);
  auto empty_range = [&]() -> Result<ObjectMeta> {
    ASSIGN_OR_RETURN(ObjectMeta meta, Head(key));
    RETURN_NOT_OK(CheckRangeStart(key, range->offset, meta.size));
    return meta;
  };
  if (range && range->length == 0) return empty_range();
  Call call{"GET", full};
  call.sink = &sink;
  call.what = "get '" + std::string(key) + "'";
  if (range) {
    // "bytes=N-" reads to the end; it also avoids overflowing offset + length.
    const bool to_end = range->length > UINT64_MAX - range->offset;
    call.headers.emplace_back(
        "Range", "bytes=" + std::to_string(range->offset) + "-" +
                     (to_end ? std::string() : std::to_string(range->offset + range->length - 1)));
  }
  ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
  RETURN_NOT_OK(r.sink_status);
  if (r.status == 404) return NoSuchObject(key);
  // S3 refuses a range starting at or past the end; at the end it reads nothing.
  if (r.status == 416 && range) return empty_range();
  if (r.status == 206) return MetaOf(r, RangeTotal(r));
  if (r.status == 200) return MetaOf(r, r.streamed_bytes);
  return ErrorOf(r, call);
}

Result<ObjectMeta> S3ObjectStore::Write(std::string_view key, ByteSource& source,
                                        const PutOptions& options) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  const std::string full = FullKey(key);
  std::string body;
  if (options.condition != PutCondition::kNone) {
    // A commit object: always one PUT, never multipart.
    RETURN_NOT_OK(Fill(source, UINT64_MAX, &body).status());
    return PutConditional(full, body, options);
  }
  body.reserve(options_.part_size + 1);  // one allocation: memory stays one part
  ASSIGN_OR_RETURN(bool ended, Fill(source, options_.part_size + 1, &body));
  if (ended) return PutSingle(full, body);
  return PutMultipart(full, std::move(body), source);
}

Result<ObjectMeta> S3ObjectStore::PutSingle(const std::string& full_key, const std::string& body) {
  Call call{"PUT", full_key};
  call.body = body;
  call.what = "put '" + full_key + "'";
  ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
  if (r.status != 200) return ErrorOf(r, call);
  return WrittenMeta(r.Header("etag"), body.size());
}

// Outcome-unknown handling: see the header comment.
Result<ObjectMeta> S3ObjectStore::PutConditional(const std::string& full_key,
                                                 const std::string& body,
                                                 const PutOptions& options) {
  const bool if_absent = options.condition == PutCondition::kIfAbsent;
  const std::string nonce = NewUlidString();
  bool maybe_landed = false;  // an earlier attempt's outcome is unknown
  auto exists = [&] {
    return Status::AlreadyExists("s3 put-if-absent '" + full_key + "' in " + Describe() +
                                 ": the object already exists");
  };
  for (int attempt = 1;; ++attempt) {
    Call call{"PUT", full_key};
    call.body = body;
    call.idempotent = false;
    call.what = std::string(if_absent ? "put-if-absent '" : "put-if-match '") + full_key + "'";
    call.headers.emplace_back(std::string(kNonceHeader), nonce);
    const IfMatchForm form = if_match_form_.load();
    if (if_absent) {
      call.headers.emplace_back("If-None-Match", "*");
    } else {
      call.headers.emplace_back("If-Match", form == IfMatchForm::kUnquoted
                                                ? Unquoted(options.if_match_etag)
                                                : Quoted(options.if_match_etag));
    }
    Result<HttpResponse> r = ExecuteOnce(call);
    if (r.ok() && r->status == 200) {
      return WrittenMeta(r->Header("etag"), body.size());
    }
    // 409 (ConditionalRequestConflict: a conflicting operation in flight) is
    // retryable on AWS and proves nothing about the object: resolve it by reading.
    const bool unknown =
        r.ok() ? Retryable(r->status) || r->status == 409 : r.status().IsUnavailable();
    const bool lost = r.ok() && r->status == 412;
    if (!unknown && !lost && !(r.ok() && r->status == 404))
      return r.ok() ? ErrorOf(*r, call) : r.status();
    if (r.ok() && r->status == 404 && !if_absent) return NoSuchObject(full_key);
    maybe_landed = maybe_landed || unknown;
    if (lost && if_absent && !maybe_landed) return exists();
    // Read the object back: did our write land, and is retrying still right?
    Result<Found> now = HeadFull(full_key);
    if (!now.ok() && !now.status().IsNotFound()) return now.status();
    if (now.ok() && maybe_landed && now->nonce == nonce) return now->meta;
    if (!now.ok() && !if_absent) return NoSuchObject(full_key);
    // Someone else's object. Loam never overwrites put-if-absent keys, so
    // even after an unknown outcome a foreign object means we lost.
    if (now.ok() && if_absent) return exists();
    const bool unchanged =
        !if_absent && Unquoted(now->meta.etag) == Unquoted(options.if_match_etag);
    if (!if_absent && !unchanged) {
      // After an unknown outcome this is still taken as lost. Ceph RGW answers
      // some lost CAS races with 500 instead of 412, so anything else would
      // fail ordinary contention. The residual case, our write landing and being
      // replaced by another CAS before this HEAD, reports a win as a loss; the
      // caller retries on the newer state, which never loses another's update.
      return Status::Aborted("s3 put-if-match '" + full_key + "' in " + Describe() +
                             ": the object changed (etag " + now->meta.etag + ", expected " +
                             options.if_match_etag + ")");
    }
    if (lost && !if_absent) {
      if (form != IfMatchForm::kDetect) return ErrorOf(*r, call);  // an ABA race: lost
      // Refused although the etag matches: this endpoint ignores the quoted
      // form (Ceph RGW). Use the unquoted form from now on.
      if_match_form_.store(IfMatchForm::kUnquoted);
      continue;
    }
    // Our write did not land and the precondition still holds: try again.
    if (attempt >= options_.max_attempts) {
      return r.ok() ? ErrorOf(*r, call) : r.status();
    }
    RetryPause(options_, attempt);
  }
}

Result<ObjectMeta> S3ObjectStore::PutMultipart(const std::string& full_key, std::string buffer,
                                               ByteSource& source) {
  Call create{"POST", full_key, {{"uploads", ""}}};
  create.what = "create multipart upload '" + full_key + "'";
  ASSIGN_OR_RETURN(HttpResponse created, Execute(create));
  if (created.status != 200) return ErrorOf(created, create);
  ASSIGN_OR_RETURN(const std::string upload_id, s3::ParseUploadId(created.body, create.what));

  auto upload = [&]() -> Result<ObjectMeta> {
    std::string manifest = "<CompleteMultipartUpload>";
    uint64_t total = 0;
    bool ended = false;
    // `buffer` holds up to one part plus one byte, so that the end of the
    // source is known before the part that might be the last goes up.
    for (int number = 1;; ++number) {
      std::string rest;
      if (buffer.size() > options_.part_size) {
        rest = buffer.substr(options_.part_size);
        buffer.resize(options_.part_size);
      }
      if (buffer.empty()) break;
      Call put{"PUT", full_key, {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}}};
      put.body = buffer;
      put.what = "upload part " + std::to_string(number) + " of '" + full_key + "'";
      ASSIGN_OR_RETURN(HttpResponse r, Execute(put));
      if (r.status != 200) return ErrorOf(r, put);
      manifest += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" +
                  s3::XmlEscape(r.Header("etag")) + "</ETag></Part>";
      total += buffer.size();
      buffer.assign(rest);
      if (!ended) {
        ASSIGN_OR_RETURN(ended, Fill(source, options_.part_size + 1, &buffer));
      }
    }
    manifest += "</CompleteMultipartUpload>";
    Call complete{"POST", full_key, {{"uploadId", upload_id}}};
    complete.body = manifest;
    complete.what = "complete multipart upload '" + full_key + "'";
    // Not retried: a retry after a lost answer finds the upload gone
    // (NoSuchUpload) although the object was written.
    complete.idempotent = false;
    Result<HttpResponse> answered = Execute(complete);
    if (!answered.ok() || Retryable(answered->status)) {
      return Status::Unavailable("s3 " + complete.what + " in " + Describe() +
                                 ": outcome unknown (the server failed); the object may or may "
                                 "not have been replaced, write it again");
    }
    HttpResponse done = std::move(*answered);
    if (done.status != 200) return ErrorOf(done, complete);
    ASSIGN_OR_RETURN(const std::string etag, s3::ParseCompletedEtag(done.body, complete.what));
    return WrittenMeta(etag, total);
  };
  Result<ObjectMeta> result = upload();
  if (!result.ok()) {
    Call abort{"DELETE", full_key, {{"uploadId", upload_id}}};
    abort.what = "abort multipart upload '" + full_key + "'";
    // A bucket lifecycle rule reaps what a failed abort leaves.
    Result<HttpResponse> aborted = Execute(abort);
    NoteCleanupFailure(abort.what, !aborted.ok()                ? aborted.status()
                                   : aborted->status / 100 == 2 ? Status::OK()
                                                                : ErrorOf(*aborted, abort));
  }
  return result;
}

Result<ListPage> S3ObjectStore::List(std::string_view prefix, std::string_view start_after,
                                     size_t limit) {
  RETURN_NOT_OK(ValidateListPrefix(prefix));
  const std::string base = options_.prefix.empty() ? "" : options_.prefix + "/";
  const size_t max_keys = limit == 0 ? 1000 : std::min<size_t>(limit, 1000);
  std::string after = start_after.empty() ? "" : base + std::string(start_after);
  ListPage page;
  // Keys that are not valid object keys (written by other tools) are skipped;
  // a page of nothing but those must not look like the end, so list on.
  do {
    Call call{"GET", ""};
    call.query = {{"list-type", "2"},
                  {"prefix", base + std::string(prefix)},
                  {"max-keys", std::to_string(max_keys)},
                  {"encoding-type", "url"}};
    if (!after.empty()) call.query.emplace_back("start-after", after);
    call.what = "list '" + std::string(prefix) + "'";
    ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
    if (r.status != 200) return ErrorOf(r, call);
    ASSIGN_OR_RETURN(s3::ListObjectsResult listed, s3::ParseListObjects(r.body, call.what));
    for (s3::ListedObject& entry : listed.objects) {
      std::string key = std::move(entry.key);
      after = key;
      if (key.compare(0, base.size(), base) != 0) continue;
      key.erase(0, base.size());
      if (!ValidateObjectKey(key).ok()) continue;
      ObjectInfo info;
      info.key = std::move(key);
      info.meta.size = entry.size;
      info.meta.etag = Quoted(entry.etag);
      info.meta.mtime_micros = entry.mtime_micros;
      page.objects.push_back(std::move(info));
    }
    page.truncated = listed.truncated;
    if (listed.objects.empty()) break;  // nothing to continue after
  } while (page.objects.empty() && page.truncated);
  return page;
}

Status S3ObjectStore::Delete(std::string_view key) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  Call call{"DELETE", FullKey(key)};
  call.what = "delete '" + std::string(key) + "'";
  ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
  if (r.status == 204 || r.status == 200 || r.status == 404) return Status::OK();
  return ErrorOf(r, call);
}

Result<std::string> S3ObjectStore::PresignUrl(std::string_view method, std::string_view key,
                                              int64_t expires_seconds,
                                              const std::string& content_md5,
                                              std::optional<int64_t> now_seconds) const {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!content_md5.empty()) headers.emplace_back("content-md5", content_md5);
  return PresignUrl(method, key, expires_seconds, headers, now_seconds);
}

Result<std::string> S3ObjectStore::PresignUrl(
    std::string_view method, std::string_view key, int64_t expires_seconds,
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::optional<int64_t> now_seconds) const {
  RETURN_NOT_OK(ValidateObjectKey(key));
  if (method != "GET" && method != "PUT") {
    return Status::InvalidArgument("presigned URLs are for GET or PUT, not " + std::string(method));
  }
  if (expires_seconds < 1 || expires_seconds > 7 * 24 * 3600) {
    return Status::InvalidArgument("a presigned URL expires after 1 s to 7 days");
  }
  Call call{std::string(method), FullKey(key)};
  for (const auto& h : headers) call.headers.push_back(h);
  s3::RequestToSign r = ToSign(call);
  for (const auto& [name, value] : headers) {
    if (name == "x-amz-content-sha256") r.payload_sha256 = value;  // the body must hash to it
  }
  const std::string query =
      signer_.PresignQuery(r, now_seconds.value_or(NowSeconds()), expires_seconds);
  return scheme_ + "://" + r.host + r.encoded_path + "?" + query;
}

}  // namespace loam
