#include "io/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/status_macros.h"

namespace loam {
namespace {

struct Transfer {
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
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
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

// libcurl's process-wide state, set up once before the first handle.
Status InitCurl() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc == CURLE_OK) return Status::OK();
  return Status::FailedPrecondition(std::string("curl_global_init failed: ") +
                                    curl_easy_strerror(rc));
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
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  available_.wait(lock, [&] { return !idle_.empty() || open_ < options_.max_connections; });
  if (!idle_.empty()) {
    void* h = idle_.back();
    idle_.pop_back();
    return h;
  }
  CURL* handle = curl_easy_init();
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
  RETURN_NOT_OK(InitCurl());
  CURL* curl = static_cast<CURL*>(Acquire());
  if (curl == nullptr) return Status::ResourceExhausted("curl_easy_init failed");
  curl_easy_reset(curl);  // keeps the connection cache
  HttpResponse response;
  Transfer transfer{curl, request.sink, &response};
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(options_.stall_timeout_ms / 1000)));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (request.method == "PUT" || request.method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  // No form content type and no "Expect: 100-continue" round trip.
  headers = curl_slist_append(headers, "Content-Type:");
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  Release(curl);
  if (!response.sink_status.ok()) return response;
  if (rc != CURLE_OK) {
    Status broken = Status::Unavailable(request.method + " " + request.url + ": " +
                                        (error[0] ? error : curl_easy_strerror(rc)));
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
