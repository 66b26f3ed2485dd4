// RFC 9112 framing checks the HTTP parser does not make: what a server
// must refuse (smuggling through Transfer-Encoding, a missing Host) and
// what it must accept (absolute-form targets).
#pragma once

#include <boost/beast/http.hpp>
#include <optional>

#include "loam/status.h"

namespace loam::server {

struct FramingRefusal {
  boost::beast::http::status status;
  Status why;
};

// RFC 9112 framing the parser lets through but a server must refuse: the
// refusal's status and reason, or nullopt. Also rewrites an absolute-form
// target ("http://host/path") to its path, which a server must accept.
std::optional<FramingRefusal> CheckFraming(
    boost::beast::http::request<boost::beast::http::buffer_body>& request);

}  // namespace loam::server
