// Api routes: run submission (uploads named in JSON, or data inline),
// listing, status, cancel and revert.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/rfc3339.h"
#include "common/status_macros.h"
#include "server/api.h"

namespace loam::server {

using nlohmann::json;

Response Api::SubmitRun(Call& c) {
  Result<std::string> key = OneHeader(c.header, "Idempotency-Key");
  if (!key.ok()) return Problem(key.status());
  const std::string media = MediaType(c.header);
  Result<service::Submission> sub = Status::OK();
  if (media == "text/csv" || media == "application/x-ndjson") {
    service::InlineLoad load;
    load.content_type = media;
    load.data = c.body;
    load.source_id = std::string(c.header["Loam-Source-Id"]);
    const std::string_view reload = c.header["Loam-Reload"];
    if (!reload.empty() && reload != "true" && reload != "false") {
      return Problem(Status::InvalidArgument("Loam-Reload is true or false"));
    }
    load.reload = reload == "true";
    sub = svc_->SubmitInline(c.ctx, c.params["id"], *key, load);
  } else if (media.empty() || media == "application/json") {
    sub = svc_->SubmitRun(c.ctx, c.params["id"], *key, c.body);
  } else {
    return Problem(Status::InvalidArgument(
        "a submission is application/json (uploads) or text/csv / application/x-ndjson (inline "
        "data), not '" +
        media + "'"));
  }
  return Submitted(c, sub);
}

Response Api::Submitted(Call& c, const Result<service::Submission>& sub) {
  if (!sub.ok()) return Problem(sub.status());
  c.run_id = sub->run.id;
  Response r = JsonResponse(202, RunJson(sub->run));
  r.set(http::field::location, "/v1/runs/" + sub->run.id);
  if (sub->replayed) r.set("Idempotency-Replayed", "true");
  return r;
}

Response Api::SubmitDelete(Call& c) {
  Result<std::string> key = OneHeader(c.header, "Idempotency-Key");
  if (!key.ok()) return Problem(key.status());
  const std::string media = MediaType(c.header);
  if (!media.empty() && media != "application/json") {
    return Problem(Status::InvalidArgument("a delete is application/json, not '" + media + "'"));
  }
  return Submitted(c, svc_->SubmitDelete(c.ctx, c.params["name"], *key, c.body));
}

Response Api::ListRuns(Call& c) {
  service::RunFilter f;
  for (const auto& [name, value] : c.target.query) {
    if (name == "pipeline") {
      f.pipeline_id = value;
    } else if (name == "state") {
      f.state = value;  // the service refuses an unknown state
    } else if (name == "table") {
      f.table = value;
    } else if (name == "idempotencyKey") {
      f.idempotency_key = value;
    } else if (name == "since" || name == "until") {
      Result<int64_t> micros = ParseRfc3339Micros(value);
      if (!micros.ok()) {
        return Problem(Status::InvalidArgument(name + ": " + micros.status().message()));
      }
      // To the millisecond, as run ids carry creation times, rounded outwards
      // (since down, until up) so no run of the bound's millisecond is lost.
      const int64_t at = std::max<int64_t>(0, *micros);
      (name == "since" ? f.since_ms : f.until_ms) = name == "since" ? at / 1000 : (at + 999) / 1000;
    } else if (name == "order") {
      if (value != "newest" && value != "oldest") {
        return Problem(Status::InvalidArgument("order must be 'newest' or 'oldest'"));
      }
      f.newest_first = value == "newest";
    } else if (name == "cursor") {
      f.cursor = value;
    } else if (name == "limit") {
      Result<int64_t> limit = ParseQueryInt(name, value, 1, 1000);
      if (!limit.ok()) return Problem(limit.status());
      f.limit = static_cast<int>(*limit);
    }
  }
  Result<service::RunPage> page = svc_->ListRuns(c.ctx, f);
  if (!page.ok()) return Problem(page.status());
  json runs = json::array();
  for (const RunInfo& r : page->runs) runs.push_back(RunJson(r));
  json out = {{"runs", runs}};
  out["nextCursor"] = page->next_cursor.empty() ? json() : json(page->next_cursor);
  return JsonResponse(200, out);
}

// Every error the run kept, one JSON object per line, in input order.
Response Api::GetRunErrors(Call& c) {
  c.run_id = c.params["id"];
  Result<std::vector<RunInfo::Error>> errors = svc_->RunErrors(c.ctx, c.run_id);
  if (!errors.ok()) return Problem(errors.status());
  Response r{http::status::ok, 11};
  r.set(http::field::content_type, "application/x-ndjson");
  std::string body;
  for (const RunInfo::Error& e : *errors) {
    body += service::RunErrorJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    body += '\n';
  }
  r.body() = std::move(body);
  return r;
}

Response Api::GetRun(Call& c) {
  c.run_id = c.params["id"];
  int64_t wait = 0;
  if (auto it = c.target.query.find("wait"); it != c.target.query.end()) {
    Result<int64_t> seconds = ParseQueryInt("wait", it->second, 0, options_.max_run_wait_seconds);
    if (!seconds.ok()) return Problem(seconds.status());
    wait = *seconds;
  }
  Result<service::RunStatus> run = svc_->GetRun(c.ctx, c.run_id);
  if (!run.ok()) return Problem(run.status());
  std::shared_ptr<LaterAnswer> later;
  if (wait > 0 && !run->run.terminal && c.out != nullptr) later = c.out->Defer();
  if (later == nullptr) return JsonResponse(200, RunJson(run->run, run->queue_position));
  // Parked: no thread waits; the waiters' thread answers (docs/server.md).
  c.parked = true;
  AnswerFacts facts{std::string(c.header.method_string()),
                    std::string(c.route),
                    c.request_id,
                    c.ctx.principal,
                    c.run_id,
                    {},
                    c.start};
  waiters_.Park(
      c.run_id, c.ctx.principal, std::chrono::steady_clock::now() + std::chrono::seconds(wait),
      [svc = svc_, ctx = c.ctx, id = c.run_id] { return svc->GetRun(ctx, id); },
      [this, later, facts](const Result<service::RunStatus>& now) {
        later->Send(Seal(facts, now.ok() ? JsonResponse(200, RunJson(now->run, now->queue_position))
                                         : Problem(now.status())));
      });
  return Response();
}

Response Api::CancelRun(Call& c) {
  c.run_id = c.params["id"];
  Result<RunInfo> run = svc_->CancelRun(c.ctx, c.params["id"]);
  if (!run.ok()) return Problem(run.status());
  if (!run->terminal) return JsonResponse(202, RunJson(*run));  // its worker ends it
  waiters_.Changed(run->id);
  return JsonResponse(200, RunJson(*run));
}

Response Api::RevertRun(Call& c) {
  c.run_id = c.params["id"];
  Result<WriteResult> w = svc_->RevertRun(c.ctx, c.params["id"]);
  if (!w.ok()) return Problem(w.status());
  return JsonResponse(200, {{"revertedRun", c.params["id"]},
                            {"commitId", w->commit_id},
                            {"manifestVersion", w->manifest_version},
                            {"tableVersion", w->table_version}});
}

}  // namespace loam::server
