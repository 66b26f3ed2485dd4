// POST /v1/sql: one read-only statement over the tables at one state, its
// answer as JSON Lines (docs/sql.md, "Over HTTP").
#include <limits>

#include "common/json_parse.h"
#include "common/strict_json.h"
#include "server/api.h"
#include "sql/sql.h"

namespace loam::server {
namespace {

using json = nlohmann::json;

// The answer's lines: the columns, one JSON array per row, and a last line
// that says the answer is whole (and whether `limit` cut it).
class JsonLinesSink : public sql::SqlSink {
 public:
  explicit JsonLinesSink(std::function<Status(std::string&)> flush) : flush_(std::move(flush)) {}
  std::string& pending() { return pending_; }

  Status Begin(const std::vector<sql::SqlColumn>& columns) override {
    json cols = json::array();
    for (const sql::SqlColumn& c : columns) cols.push_back({{"name", c.name}, {"type", c.type}});
    pending_ += json{{"columns", cols}}.dump(-1, ' ', false, json::error_handler_t::replace);
    pending_ += '\n';
    return flush_(pending_);
  }
  Status Row(const std::vector<sql::SqlValue>& row) override {
    pending_ += '[';
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) pending_ += ',';
      sql::AppendJsonValue(row[i], &pending_);
    }
    pending_ += "]\n";
    return flush_(pending_);
  }
  Status End(int64_t rows, bool truncated) override {
    pending_ += json{{"end", {{"rows", rows}, {"truncated", truncated}}}}.dump() + "\n";
    return Status::OK();
  }

 private:
  std::function<Status(std::string&)> flush_;
  std::string pending_;
};

struct SqlRequest {
  std::string query;
  sql::SqlOptions options;
};

Result<SqlRequest> ParseSqlRequest(const std::string& body, const SqlLimits& limits) {
  ASSIGN_OR_RETURN(json j, ParseJsonObject(body, "sql request"));
  StrictObject o(j, "sql request");
  SqlRequest r;
  int64_t version = -1;
  int64_t limit = limits.max_rows;
  RETURN_NOT_OK(o.String("query", &r.query, /*required=*/true));
  RETURN_NOT_OK(o.String("branch", &r.options.at.branch));
  RETURN_NOT_OK(o.Int("version", &version, 0, std::numeric_limits<int64_t>::max()));
  RETURN_NOT_OK(o.Int("limit", &limit, 0, limits.max_rows));
  RETURN_NOT_OK(o.Finish());
  if (version >= 0) r.options.at.version = static_cast<uint64_t>(version);
  r.options.max_rows = limit;
  r.options.single_statement = true;
  r.options.time_budget_millis = limits.time_budget_millis;
  r.options.max_value_bytes = limits.max_value_bytes;
  return r;
}

}  // namespace

Response Api::RunSql(Call& c) {
  if (options_.workspace == nullptr) {
    return Problem(Status::Unimplemented("this server was started without SQL"));
  }
  Result<SqlRequest> req = ParseSqlRequest(c.body, options_.sql);
  if (!req.ok()) return Problem(req.status());
  req->options.principal = c.ctx.principal;
  // A statement holds a handler thread while it runs: one principal runs
  // as many at once as it may read streamed answers (429 beyond).
  StreamSlot slot(this, c.ctx.principal);
  if (Status s = slot.Take(); !s.ok()) return Problem(s);
  // As GET .../rows: whole up to rows_chunk, else streamed in chunks; an
  // error after the first chunk cuts the body short (no "end" line).
  Response head{http::status::ok, 11};
  head.set(http::field::content_type, "application/x-ndjson");
  head.set("Request-Id", c.request_id);
  const auto flush = [&](std::string& pending) -> Status {
    if (pending.size() < options_.rows_chunk) return Status::OK();
    if (!c.out->begun()) RETURN_NOT_OK(c.out->Begin(head));
    Status s = c.out->Write(pending);
    pending.clear();
    return s;
  };
  JsonLinesSink sink(flush);
  Status s = sql::RunSql(*options_.workspace, req->query, req->options, sink);
  if (!c.out->begun()) {
    if (!s.ok()) return Problem(s);
    head.body() = std::move(sink.pending());
    return head;
  }
  if (s.ok()) s = c.out->Write(sink.pending());
  if (s.ok()) s = c.out->End();
  if (!s.ok()) c.cut_short = ErrorCodeName(s.error_code());
  return head;
}

}  // namespace loam::server
