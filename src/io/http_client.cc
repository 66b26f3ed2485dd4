#include "io/http_client.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/status_macros.h"
#include "io/curl_api.h"

namespace loam {
namespace {

struct Transfer {
  const CurlApi* api;
  CURL* curl;
  ByteSink* sink;
  HttpResponse* response;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a new status line (after 100 Continue)
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  t->response->headers.emplace_back(std::move(name), std::string(value));
  return line.size();
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long status = 0;
  t->api->easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->sink != nullptr && status >= 200 && status < 300) {
    Status s = t->sink->Append(std::string_view(data, len));
    if (!s.ok()) {
      t->response->sink_status = std::move(s);
      return 0;  // aborts the transfer
    }
    t->response->streamed_bytes += len;
    return len;
  }
  t->response->body.append(data, len);
  return len;
}

}  // namespace

std::string_view HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

HttpClient::HttpClient(HttpOptions options) : options_(options) {}

HttpClient::~HttpClient() {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.empty()) return;
  const CurlApi* api = *LoadCurl();  // loaded: handles exist
  for (void* h : idle_) api->easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::Acquire(const CurlApi& api) {
  std::unique_lock<std::mutex> lock(mu_);
  available_.wait(lock, [&] { return !idle_.empty() || open_ < options_.max_connections; });
  if (!idle_.empty()) {
    void* h = idle_.back();
    idle_.pop_back();
    return h;
  }
  CURL* handle = api.easy_init();
  if (handle != nullptr) ++open_;
  return handle;
}

void HttpClient::Release(void* handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(handle);
  }
  available_.notify_one();
}

Result<HttpResponse> HttpClient::Send(const HttpRequest& request) {
  ASSIGN_OR_RETURN(const CurlApi* api, LoadCurl());
  CURL* curl = static_cast<CURL*>(Acquire(*api));
  if (curl == nullptr) return Status::ResourceExhausted("curl_easy_init failed");
  api->easy_reset(curl);  // keeps the connection cache
  HttpResponse response;
  Transfer transfer{api, curl, request.sink, &response};
  char error[CURL_ERROR_SIZE] = {0};
  api->easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  api->easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  api->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  api->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(options_.stall_timeout_ms / 1000)));
  api->easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  api->easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  api->easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  api->easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (request.method == "HEAD") {
    api->easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "GET") {
    api->easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    api->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (request.method == "PUT" || request.method == "POST") {
      api->easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
      api->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = api->slist_append(headers, (name + ": " + value).c_str());
  }
  // No form content type and no "Expect: 100-continue" round trip.
  headers = api->slist_append(headers, "Content-Type:");
  headers = api->slist_append(headers, "Expect:");
  api->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = api->easy_perform(curl);
  api->slist_free_all(headers);
  api->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  api->easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  Release(curl);
  if (!response.sink_status.ok()) return response;
  if (rc != CURLE_OK) {
    Status broken = Status::Unavailable(request.method + " " + request.url + ": " +
                                        (error[0] ? error : api->easy_strerror(rc)));
    // Part of the body already reached the sink: the caller must not retry
    // into the same sink, so the failure travels with the response.
    if (response.streamed_bytes > 0) {
      response.sink_status = std::move(broken);
      return response;
    }
    return broken;
  }
  return response;
}

}  // namespace loam
