// The web console's files over real HTTP: every file the page loads is
// served with its type under the console's Content-Security-Policy, without
// a token; nothing else is.

#include <regex>
#include <set>

#include "server/console.h"
#include "server/server_test_util.h"

namespace loam::server {
namespace {

class ConsoleRouteTest : public ServerTest {};

TEST_F(ConsoleRouteTest, ThePageAndEveryModuleItLoadsAreServedUnderThePolicy) {
  HttpResult moved = HttpCall(Port(), "GET", "/console");
  EXPECT_EQ(moved.status, 301);
  EXPECT_EQ(moved.Header("location"), "/console/");

  HttpResult page = HttpCall(Port(), "GET", "/console/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.Header("content-security-policy"), kConsolePolicy);
  EXPECT_NE(kConsolePolicy.find("script-src 'self';"), std::string_view::npos);
  EXPECT_EQ(kConsolePolicy.find("unsafe"), std::string_view::npos);
  EXPECT_EQ(page.Header("x-content-type-options"), "nosniff");
  EXPECT_EQ(page.Header("x-frame-options"), "DENY");
  EXPECT_EQ(page.Header("referrer-policy"), "no-referrer");
  EXPECT_EQ(HttpCall(Port(), "GET", "/console/index.html").body, page.body);
  // No inline script or style: the policy would refuse it.
  EXPECT_FALSE(std::regex_search(page.body, std::regex("<script(?![^>]*\\bsrc=)")));
  EXPECT_EQ(page.body.find("<style"), std::string::npos);
  EXPECT_EQ(page.body.find("style="), std::string::npos);

  // Every module reachable from the page, each served as JavaScript.
  std::set<std::string> seen;
  std::vector<std::string> todo = {"app.js"};
  static const std::regex kImport(R"(from '\./([a-z_]+\.js)')");
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    HttpResult js = HttpCall(Port(), "GET", "/console/" + name);
    ASSERT_EQ(js.status, 200) << name;
    EXPECT_EQ(js.Header("content-type"), "text/javascript; charset=utf-8") << name;
    EXPECT_EQ(js.Header("content-security-policy"), kConsolePolicy) << name;
    EXPECT_EQ(js.body.find("innerHTML"), std::string::npos) << name << ": text only, never markup";
    EXPECT_EQ(js.body.find("eval("), std::string::npos) << name;
    for (std::sregex_iterator it(js.body.begin(), js.body.end(), kImport), end; it != end; ++it)
      todo.push_back((*it)[1]);
  }
  EXPECT_GE(seen.size(), 8u);
  HttpResult css = HttpCall(Port(), "GET", "/console/console.css");
  EXPECT_EQ(css.status, 200);
  EXPECT_EQ(css.Header("content-type"), "text/css; charset=utf-8");
}

TEST_F(ConsoleRouteTest, AFileIsRevalidatedByItsEtag) {
  HttpResult first = HttpCall(Port(), "GET", "/console/app.js");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.Header("cache-control"), "no-cache");
  const std::string etag = first.Header("etag");
  ASSERT_EQ(etag.size(), 22u) << etag;
  HttpResult again = HttpCall(Port(), "GET", "/console/app.js", "", {{"If-None-Match", etag}});
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.body, "");
  EXPECT_NE(HttpCall(Port(), "GET", "/console/api.js").Header("etag"), etag);
  EXPECT_EQ(HttpCall(Port(), "GET", "/console/app.js", "", {{"If-None-Match", "\"x\""}}).status,
            200);
  // A list of tags, weak ones, and "*" (RFC 9110).
  EXPECT_EQ(HttpCall(Port(), "GET", "/console/app.js", "", {{"If-None-Match", "\"x\", W/" + etag}})
                .status,
            304);
  EXPECT_EQ(HttpCall(Port(), "GET", "/console/app.js", "", {{"If-None-Match", "*"}}).status, 304);
}

// The files are answered on the I/O thread (no handler thread, so an
// overloaded server still shows its console), keeping the connection for
// the next request; one with a body closes it (the body is never read).
TEST_F(ConsoleRouteTest, FilesAreAnsweredOnAKeptConnection) {
  namespace beast = boost::beast;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), Port()});
  for (const char* target :
       {"/console/", "/console/app.js", "/console/nope.js", "/console/dom.js"}) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "x");
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    EXPECT_EQ(res.result_int(), std::string(target) == "/console/nope.js" ? 404u : 200u) << target;
    EXPECT_TRUE(res.keep_alive()) << target;
    EXPECT_FALSE(res["Request-Id"].empty()) << target;
  }
  HttpResult with_body = HttpCall(Port(), "GET", "/console/app.js", "x");
  EXPECT_EQ(with_body.status, 200);
  EXPECT_EQ(with_body.Header("connection"), "close");
  HttpResult metrics = HttpCall(Port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("route=\"/console/{file}\""), std::string::npos);
}

TEST_F(ConsoleRouteTest, NothingButTheConsolesFilesIsServed) {
  for (const char* target : {"/console/nope.js", "/console/..", "/console/%2e%2e%2fsecret",
                             "/console/app.js/x", "/console/console_files.cc.in"}) {
    HttpResult r = HttpCall(Port(), "GET", target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.Json()["code"], "not_found") << target;
  }
  EXPECT_EQ(HttpCall(Port(), "POST", "/console/app.js", "{}").status, 405);
  EXPECT_EQ(HttpCall(Port(), "GET", "/console/?token=x").status, 400);
  // The console's files hold no data: the API behind them still wants a token.
  EXPECT_EQ(HttpCall(Port(), "GET", "/v1/tables").status, 401);
}

}  // namespace
}  // namespace loam::server
