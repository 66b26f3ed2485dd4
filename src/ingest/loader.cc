#include "ingest/loader.h"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "format/page.h"
#include "ingest/input_source.h"

namespace loam::ingest {
namespace {

using json = nlohmann::json;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

WriteMode ToWriteMode(LoadMode m) {
  switch (m) {
    case LoadMode::kAppend:
      return WriteMode::kAppend;
    case LoadMode::kUpsert:
      return WriteMode::kUpsert;
    case LoadMode::kReplace:
      return WriteMode::kReplace;
  }
  return WriteMode::kAppend;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The stable error code of a status that ends a run.
std::string ErrorCode(const Status& s) {
  if (StartsWith(s.message(), "schema_conflict")) return "schema_conflict";
  if (StartsWith(s.message(), "conflict")) return "conflict";
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return "validation_failed";
    case StatusCode::kResourceExhausted:
      return "limit_exceeded";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kFailedPrecondition:
      return "conflict";
    default:
      return "internal";
  }
}

// Deterministic failures end the run; anything else (I/O, a lost lease)
// leaves it resumable.
bool EndsRun(const Status& s) {
  return s.IsInvalidArgument() || s.IsNotFound() || s.IsPermissionDenied() ||
         s.IsFailedPrecondition() || s.code() == StatusCode::kResourceExhausted;
}

std::vector<const Column*> ColumnsOf(const RecordBatch& b, const std::vector<int>& idx) {
  std::vector<const Column*> out;
  for (int i : idx) out.push_back(&b.columns[i]);
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Rows of every file, validated, plus where each upsert key was first seen.
struct Validated {
  std::vector<RecordBatch> batches;
  std::unordered_map<std::string, std::string> key_at;  // upsert: key -> "file row N"
};

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenLocalFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec || !std::filesystem::is_regular_file(p, ec)) {
    return Status::NotFound("input file '" + path + "' does not exist or is not a regular file");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> dir, OpenObjectStore(p.parent_path().string()));
  ASSIGN_OR_RETURN(std::unique_ptr<ObjectByteSource> src,
                   ObjectByteSource::Open(std::move(dir), p.filename().string()));
  return std::unique_ptr<ByteSource>(std::move(src));
}

struct Loader::Active {
  RunRequest request;
  RunRecord record;
  std::string etag;
  bool resumed = false;
  int64_t deadline_micros = 0;
};

Loader::Loader(std::shared_ptr<Workspace> workspace, LoaderOptions options)
    : ws_(std::move(workspace)),
      options_(std::move(options)),
      runs_(ws_->store(), ws_->root()),
      owner_(NewUlidString()) {
  if (!options_.open_input) options_.open_input = OpenLocalFile;
}

Status Loader::Fail(std::string_view point) const {
  return options_.failpoint ? options_.failpoint(point) : Status::OK();
}

Status Loader::Save(Active& run) {
  Status s = runs_.Update(run.record, &run.etag);
  if (s.IsAborted()) {
    return Status::Aborted("run " + run.record.id +
                           " was taken over by another process (its lease expired); this process "
                           "stops working on it");
  }
  if (s.ok() && options_.on_progress) options_.on_progress(run.record);
  return s;
}

Status Loader::Renew(Active& run) {
  run.record.lease_owner = owner_;
  run.record.lease_expires_micros = NowMicros() + options_.lease_micros;
  return Save(run);
}

Result<RunRecord> Loader::Run(const RunRequest& request, bool* reused) {
  if (reused) *reused = false;
  if (request.error_policy == ErrorPolicy::kSkipRows && !options_.skip_rows_enabled) {
    return Status::PermissionDenied(
        "the skipRows error policy is behind a feature flag that is off "
        "(LOAM_FEATURE_SKIP_ROWS); use failRun, or validationOnly to see every problem first");
  }
  if (request.files.empty()) return Status::InvalidArgument("a load needs at least one input file");
  Active run;
  run.request = request;
  const std::string text = request.ToJson();
  if (!request.idempotency_key.empty()) {
    ASSIGN_OR_RETURN(std::optional<std::string> existing, runs_.FindKey(request.idempotency_key));
    if (!existing) {
      const std::string id = NewUlidString();
      Status bound = runs_.BindKey(request.idempotency_key, id);
      if (bound.IsAlreadyExists()) return Run(request, reused);  // lost a race: look again
      RETURN_NOT_OK(bound);
      existing = id;
    }
    Result<RunRecord> rec = runs_.Get(*existing, &run.etag);
    if (rec.ok()) {
      if (rec->request != text) {
        return Status::FailedPrecondition(
            "idempotency key '" + request.idempotency_key + "' already belongs to run " + rec->id +
            " with a different request; use a new key, or repeat that run's exact request");
      }
      if (IsTerminal(rec->state)) {
        if (reused) *reused = true;
        return *rec;
      }
      if (rec->lease_owner != owner_ && rec->lease_expires_micros > NowMicros()) {
        return Status::FailedPrecondition(
            "conflict: run " + rec->id + " is in progress in another process (its lease runs " +
            std::to_string((rec->lease_expires_micros - NowMicros()) / 1000) +
            " ms more); wait, then repeat the command to resume it if that process died");
      }
      run.record = std::move(*rec);
      run.resumed = true;
      RETURN_NOT_OK(Renew(run));  // CAS: exactly one process takes over
    } else if (rec.status().IsNotFound()) {
      run.record.id = *existing;  // bound, but the record was never written
    } else {
      return rec.status();
    }
  } else {
    run.record.id = NewUlidString();
  }
  if (!run.resumed) {
    run.record.request = text;
    run.record.table = request.table;
    run.record.created_micros = NowMicros();
    run.record.lease_owner = owner_;
    run.record.lease_expires_micros = NowMicros() + options_.lease_micros;
    Status created = runs_.Create(run.record, &run.etag);
    if (created.IsAlreadyExists()) return Run(request, reused);  // another process created it
    RETURN_NOT_OK(created);
    if (options_.on_progress) options_.on_progress(run.record);
  }
  return Execute(run);
}

Result<RunRecord> Loader::Execute(Active& run) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  auto finish = [&](RunState state) -> Result<RunRecord> {
    rec.state = state;
    rec.finished_micros = NowMicros();
    rec.lease_expires_micros = 0;
    RETURN_NOT_OK(Save(run));
    return rec;
  };
  auto fail_with = [&](const Status& s, const std::string& file) -> Result<RunRecord> {
    if (!EndsRun(s)) return s;  // resumable: the record stays as it is
    rec.error_code = ErrorCode(s);
    rec.error = s.message();
    if (rec.errors.size() < 10) rec.errors.push_back({file, s.message()});
    return finish(RunState::kFailed);
  };

  if (run.resumed) {
    // The previous owner is gone: settle whatever commit it left half done.
    RETURN_NOT_OK(ws_->RecoverRun(rec.id).status());
    if (rec.state == RunState::kCommitting) {
      ASSIGN_OR_RETURN(auto done, ws_->manifest().FindJournalRow(req.branch, RunCommitId(rec.id)));
      if (done) {
        json meta = json::parse(done->metadata, nullptr, false);
        rec.commit_id = meta.value("commit", "");
        rec.manifest_version = meta.value("manifest_version", uint64_t{0});
        ASSIGN_OR_RETURN(Snapshot at, ws_->SnapshotAt(req.branch, rec.manifest_version));
        for (const auto& [name, t] : at.tables) {
          if (t.def.sid == rec.table_sid) rec.table_version = t.head.table_version;
        }
        return finish(RunState::kSucceeded);
      }
    }
  }
  rec.state = RunState::kValidating;
  rec.started_micros = NowMicros();
  rec.counters = {};
  rec.errors.clear();
  RETURN_NOT_OK(Renew(run));

  for (int attempt = 0;; ++attempt) {
    // --- validate: the whole input, typed and checked, before any mutation ---
    ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(req.branch));
    const TableState* t = nullptr;
    for (const auto& [name, state] : snap.tables) {
      if (rec.table_sid != 0 ? state.def.sid == rec.table_sid : name == req.table) t = &state;
    }
    if (t == nullptr) {
      return fail_with(Status::NotFound("table '" + req.table + "' does not exist on branch '" +
                                        (req.branch.empty() ? "main" : req.branch) + "'" +
                                        (rec.table_sid ? " (it was dropped)" : "")),
                       "");
    }
    rec.table_sid = t->def.sid;
    rec.table = t->def.name;
    if (!req.principal.empty()) {
      Status allowed = ws_->Authorize(snap, *t, req.principal, ToWriteMode(req.mode));
      if (!allowed.ok()) return fail_with(allowed, "");
    }
    const Schema& schema = t->def.schema;
    const std::vector<std::string>& keys = req.keys.empty() ? t->def.keys : req.keys;
    std::vector<int> key_idx;
    if (req.mode == LoadMode::kUpsert) {
      if (keys.empty()) {
        return fail_with(
            Status::InvalidArgument("upsert into '" + t->def.name +
                                    "' needs key columns: the table declares none, so pass --key"),
            "");
      }
      for (const std::string& k : keys) {
        const int i = schema.IndexOf(k);
        if (i < 0) {
          return fail_with(Status::InvalidArgument("key column '" + k + "' is not in table '" +
                                                   t->def.name + "'"),
                           "");
        }
        key_idx.push_back(i);
      }
    }
    Status policy_ok = req.policy.CheckAgainst(schema);
    if (!policy_ok.ok()) return fail_with(policy_ok, "");

    Validated v;
    rec.counters = {};
    run.deadline_micros = NowMicros() + req.time_budget_ms * 1000;
    int64_t next_renew = NowMicros() + options_.lease_micros / 3;
    for (const std::string& file : req.files) {
      const std::string name = std::filesystem::path(file).filename().string();
      Result<std::unique_ptr<ByteSource>> raw = options_.open_input(file);
      if (!raw.ok()) return fail_with(raw.status(), name);
      const InputFormat format = req.format.value_or(GuessInputFormat(file));
      Result<std::unique_ptr<RowSource>> rows =
          OpenRowSource(std::move(*raw), format, schema, req.policy, name, req.limits);
      if (!rows.ok()) return fail_with(rows.status(), name);
      uint64_t file_bytes_before = rec.counters.bytes_read;
      while (true) {
        Result<std::optional<RecordBatch>> batch = (*rows)->Next(options_.batch_rows);
        if (!batch.ok()) return fail_with(batch.status(), name);
        rec.counters.bytes_read = file_bytes_before + (*rows)->bytes_read();
        if (!*batch) break;
        rec.counters.rows_read += (*batch)->num_rows();
        if (rec.counters.rows_read > req.max_rows) {
          return fail_with(Status::ResourceExhausted(
                               name + ": the run has more than " + std::to_string(req.max_rows) +
                               " rows (the rows-per-run limit); split the input into several runs "
                               "or raise --max-rows"),
                           name);
        }
        if (NowMicros() > run.deadline_micros) {
          return fail_with(
              Status::ResourceExhausted(name + ": parsing took longer than the time budget of " +
                                        std::to_string(req.time_budget_ms) + " ms (at row " +
                                        std::to_string(rec.counters.rows_read) +
                                        " of the run); split the input or raise --time-budget"),
              name);
        }
        if (!key_idx.empty()) {
          const RecordBatch& b = **batch;
          const std::vector<const Column*> cols = ColumnsOf(b, key_idx);
          const int64_t file_first = (*rows)->rows_read() - b.num_rows();
          for (int64_t r = 0; r < b.num_rows(); ++r) {
            std::string where = name + " row " + std::to_string(file_first + r + 1);
            auto [it, fresh] = v.key_at.emplace(EncodeRowKey(cols, r), where);
            if (!fresh) {
              return fail_with(
                  Status::InvalidArgument("duplicate upsert key: " + it->second + " and " + where +
                                          " have the same key (" + JoinNames(keys) +
                                          "); keep one row per key in a run"),
                  name);
            }
          }
        }
        v.batches.push_back(std::move(**batch));
        if (options_.on_progress) options_.on_progress(rec);
        if (NowMicros() > next_renew) {
          RETURN_NOT_OK(Renew(run));
          next_renew = NowMicros() + options_.lease_micros / 3;
        }
      }
    }
    rec.validated_micros = NowMicros();

    // --- plan: what the run does to the table as it is now ---
    const int64_t base_version = t->head.table_version;
    const int64_t existing_rows = t->head.row_count.value_or(0);
    rec.counters.inserted = rec.counters.updated = rec.counters.unchanged = rec.counters.deleted =
        0;
    std::vector<RecordBatch> to_write;
    if (req.mode == LoadMode::kUpsert) {
      // Existing rows with a key of the input: one row of the same content =
      // unchanged (several rows with the key collapse into one: an update).
      std::unordered_map<std::string, std::pair<std::string, int>> current;  // key -> content, rows
      ASSIGN_OR_RETURN(Dataset table, ws_->OpenTable(snap, t->def.name));
      ASSIGN_OR_RETURN(std::vector<RecordBatch> existing, table.Scan({}));
      std::vector<int> all(schema.fields.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      for (const RecordBatch& b : existing) {
        std::vector<int> kx, ax;
        for (const std::string& k : keys) kx.push_back(b.schema.IndexOf(k));
        for (const Field& f : schema.fields) ax.push_back(b.schema.IndexOf(f.name));
        const auto kc = ColumnsOf(b, kx), ac = ColumnsOf(b, ax);
        for (int64_t r = 0; r < b.num_rows(); ++r) {
          std::string k = EncodeRowKey(kc, r);
          if (!v.key_at.count(k)) continue;
          auto& [content, count] = current[std::move(k)];
          content = EncodeRowKey(ac, r);
          ++count;
        }
      }
      for (const RecordBatch& b : v.batches) {
        const auto kc = ColumnsOf(b, key_idx), ac = ColumnsOf(b, all);
        std::vector<int64_t> keep;
        for (int64_t r = 0; r < b.num_rows(); ++r) {
          auto it = current.find(EncodeRowKey(kc, r));
          if (it == current.end()) {
            rec.counters.inserted++;
            keep.push_back(r);
          } else if (it->second.second == 1 && it->second.first == EncodeRowKey(ac, r)) {
            rec.counters.unchanged++;
          } else {
            rec.counters.updated++;
            keep.push_back(r);
          }
        }
        if (keep.size() == static_cast<size_t>(b.num_rows())) {
          to_write.push_back(b);
        } else if (!keep.empty()) {
          RecordBatch kept(b.schema);
          for (size_t c = 0; c < b.columns.size(); ++c)
            kept.columns[c].AppendRows(b.columns[c], keep);
          to_write.push_back(std::move(kept));
        }
      }
    } else {
      rec.counters.inserted = rec.counters.rows_read;
      if (req.mode == LoadMode::kReplace) rec.counters.deleted = existing_rows;
      to_write = std::move(v.batches);
    }
    RETURN_NOT_OK(Fail(failpoint::kRunAfterValidate));
    if (req.error_policy == ErrorPolicy::kValidationOnly) {
      rec.validation_only = true;
      return finish(RunState::kSucceeded);
    }

    // --- commit: one atomic write, recorded as run_commit:<id> ---
    rec.state = RunState::kCommitting;
    RETURN_NOT_OK(Renew(run));
    RETURN_NOT_OK(Fail(failpoint::kRunBeforeCommit));
    if (req.mode == LoadMode::kUpsert && to_write.empty()) {
      rec.table_version = base_version;
      return finish(RunState::kSucceeded);  // every row unchanged: nothing to commit
    }
    WriteRequest w;
    w.table = t->def.name;
    w.table_sid = t->def.sid;
    w.branch = req.branch;
    w.mode = ToWriteMode(req.mode);
    w.rows = std::move(to_write);
    w.keys = keys;
    if (req.mode != LoadMode::kAppend) w.expected_version = base_version;  // the plan's base
    w.expected_schema_version = t->def.schema_version;
    w.run_id = rec.id;
    w.principal = req.principal;
    Result<WriteResult> written = ws_->Write(w);
    if (written.ok()) {
      rec.manifest_version = written->manifest_version;
      rec.commit_id = written->commit_id;
      rec.table_version = written->table_version;
      return finish(RunState::kSucceeded);
    }
    const Status& s = written.status();
    if (s.IsAlreadyExists()) {
      // Committed by an earlier attempt of this run whose answer was lost.
      rec.state = RunState::kCommitting;
      run.resumed = true;
      return Execute(run);
    }
    if (ErrorCode(s) == "conflict" && attempt < 4 && !StartsWith(s.message(), "schema_conflict")) {
      rec.state = RunState::kValidating;  // the table moved: plan again against it
      RETURN_NOT_OK(Renew(run));
      continue;
    }
    return fail_with(s, "");
  }
}

}  // namespace loam::ingest
