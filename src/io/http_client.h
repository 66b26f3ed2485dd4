// A small blocking HTTP/1.1 client over libcurl for the S3 backend.
//
// Connections are reused: each pooled curl handle keeps its own connection
// cache, and at most `max_connections` requests are in flight at once (callers
// beyond that wait for a handle). Transport failures (refused, reset,
// timeout) are Unavailable; every HTTP status is a successful response.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "loam/object_store.h"
#include "loam/result.h"

namespace loam {

struct HttpOptions {
  int max_connections = 16;
  int64_t connect_timeout_ms = 5000;
  // A transfer slower than 1 byte/s for this long is abandoned.
  int64_t stall_timeout_ms = 30000;
};

struct HttpRequest {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;  // sent as is; must outlive Send
  // When set, a 2xx response body streams here instead of into `body`.
  ByteSink* sink = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;  // the whole body unless it streamed to a sink
  uint64_t streamed_bytes = 0;
  // Set when the transfer stopped after body bytes reached the sink (the
  // sink refused data, or the connection broke): never retry into that sink.
  Status sink_status;

  // The first header with this lower-case name, or "".
  std::string_view Header(std::string_view name) const;
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<HttpResponse> Send(const HttpRequest& request);

 private:
  void* Acquire();
  void Release(void* handle);

  const HttpOptions options_;
  std::mutex mu_;
  std::condition_variable available_;
  std::vector<void*> idle_ LOAM_GUARDED_BY(mu_);
  int open_ LOAM_GUARDED_BY(mu_) = 0;
};

}  // namespace loam
