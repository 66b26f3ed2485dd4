#include "server/http_framing.h"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace loam::server {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// The comma-separated elements of every `field` header, trimmed.
std::vector<std::string> ListElements(const http::fields& h, http::field field) {
  std::vector<std::string> out;
  for (auto it = h.find(field); it != h.end() && it->name() == field; ++it) {
    std::string_view rest = it->value();
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      while (!one.empty() && (one.front() == ' ' || one.front() == '\t')) one.remove_prefix(1);
      while (!one.empty() && (one.back() == ' ' || one.back() == '\t')) one.remove_suffix(1);
      out.emplace_back(one);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

}  // namespace

std::optional<FramingRefusal> CheckFraming(http::request<http::buffer_body>& h) {
  const auto bad = [](std::string m) {
    return FramingRefusal{http::status::bad_request, Status::InvalidArgument(std::move(m))};
  };
  const size_t hosts = h.count(http::field::host);
  if (h.version() >= 11 && hosts != 1) {
    return bad("an HTTP/1.1 request needs exactly one Host header (it has " +
               std::to_string(hosts) + ")");
  }
  const std::string target(h.target());
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && beast::iequals(target.substr(0, scheme.size()), scheme)) {
      const size_t path = target.find('/', scheme.size());
      h.target(path == std::string::npos ? std::string("/") : target.substr(path));
      break;
    }
  }
  if (h.find(http::field::transfer_encoding) == h.end()) return std::nullopt;
  if (h.version() < 11) return bad("Transfer-Encoding is not allowed in an HTTP/1.0 request");
  if (h.find(http::field::content_length) != h.end()) {
    return bad("a request may not carry both Transfer-Encoding and Content-Length");
  }
  const std::vector<std::string> codings = ListElements(h, http::field::transfer_encoding);
  for (const std::string& c : codings) {
    if (!IsToken(c)) return bad("Transfer-Encoding '" + c + "' is not a transfer coding");
    if (!beast::iequals(c, "chunked")) {
      return FramingRefusal{http::status::not_implemented,
                            Status::Unimplemented("transfer coding '" + c +
                                                  "' is not supported; send the body with "
                                                  "Content-Length or Transfer-Encoding: chunked")};
    }
  }
  if (codings.size() != 1) return bad("Transfer-Encoding must name chunked exactly once");
  return std::nullopt;
}

}  // namespace loam::server
