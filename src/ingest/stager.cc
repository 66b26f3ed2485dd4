#include "ingest/stager.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/hash.h"
#include "common/status_macros.h"
#include "common/thread_annotations.h"
#include "format/page.h"

namespace loam::ingest {
namespace {

// Writes batches as fragment files on its own thread; at most `depth`
// batches wait, so parsing and writing overlap with bounded memory.
class FragmentWriter {
 public:
  FragmentWriter(const Dataset& data, size_t depth) : data_(data), depth_(depth) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~FragmentWriter() { static_cast<void>(Close()); }

  // Queues a batch; the writer's error, if it has failed.
  Status Push(RecordBatch batch) LOAM_EXCLUDES(mu_) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < depth_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(batch));
    ready_.notify_one();
    return Status::OK();
  }

  // Waits for every queued batch to be written.
  Status Close() LOAM_EXCLUDES(mu_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      ready_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  // Fragments written so far (all of them after Close).
  std::vector<Fragment> written() LOAM_EXCLUDES(mu_) {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  void Loop() LOAM_EXCLUDES(mu_) {
    while (true) {
      RecordBatch batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty() || !error_.ok()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        space_.notify_one();
      }
      Result<Fragment> f = data_.WriteFragment(batch);
      std::lock_guard<std::mutex> lock(mu_);
      if (!f.ok()) {
        error_ = f.status();
        space_.notify_all();
        return;
      }
      written_.push_back(std::move(*f));
    }
  }

  const Dataset& data_;
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<RecordBatch> queue_ LOAM_GUARDED_BY(mu_);
  std::vector<Fragment> written_ LOAM_GUARDED_BY(mu_);
  Status error_ LOAM_GUARDED_BY(mu_);
  bool closed_ LOAM_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

std::vector<const Column*> Columns(const RecordBatch& b, const std::vector<std::string>& names) {
  std::vector<const Column*> out;
  for (const std::string& n : names) out.push_back(&b.columns[b.schema.IndexOf(n)]);
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct Existing {
  Hash128Value content;
  int rows = 0;
};
using KeyMap = std::unordered_map<Hash128Value, Existing, Hash128ValueHasher>;

// For upserts: every live row's key, with its content and how many rows hold it.
Result<KeyMap> ReadExistingKeys(const Dataset& data, const std::vector<std::string>& keys,
                                const std::vector<std::string>& columns) {
  KeyMap out;
  out.reserve(data.CountRows());
  ScanSpec spec;
  spec.columns = columns;
  RETURN_NOT_OK(data.ScanEach(spec, [&](const RecordBatch& b) {
    const auto kc = Columns(b, keys), ac = Columns(b, columns);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      Existing& e = out[Hash128(EncodeRowKey(kc, r))];
      e.content = Hash128(EncodeRowKey(ac, r));
      e.rows++;
    }
    return Status::OK();
  }));
  return out;
}

}  // namespace

Result<StagedInput> StageInput(const RunRequest& req, const TableState& table, const Dataset& data,
                               const StagerOptions& options, std::string* failed_file) {
  const Schema& schema = table.def.schema;
  const std::vector<std::string>& keys = req.keys.empty() ? table.def.keys : req.keys;
  const bool upsert = req.mode == LoadMode::kUpsert;
  std::vector<std::string> columns;
  for (const Field& f : schema.fields) columns.push_back(f.name);
  KeyMap existing;
  if (upsert) {
    ASSIGN_OR_RETURN(existing, ReadExistingKeys(data, keys, columns));
  }
  // Upsert keys seen in this run: where first (file index, row in file).
  struct Seen {
    uint32_t file;
    int64_t row;
  };
  std::unordered_map<Hash128Value, Seen, Hash128ValueHasher> seen;

  StagedInput out;
  RunCounters& c = out.counters;
  std::unique_ptr<FragmentWriter> writer;
  if (options.stage) writer = std::make_unique<FragmentWriter>(data, 3);
  const int64_t deadline = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count() +
                           req.time_budget_ms * 1000;
  std::vector<std::string> names;
  auto fail = [&](Status s, const std::string& file) -> Status {
    *failed_file = file;
    if (writer) {
      static_cast<void>(writer->Close());
      static_cast<void>(data.DeleteStaged(writer->written()));  // best effort: gc removes the rest
    }
    return s;
  };
  auto validate = [&]() -> Status {
    for (size_t fi = 0; fi < req.files.size(); ++fi) {
      const std::string& file = req.files[fi];
      const std::string name = std::filesystem::path(file).filename().string();
      names.push_back(name);
      Result<std::unique_ptr<ByteSource>> raw = options.open_input(file);
      if (!raw.ok()) return fail(raw.status(), name);
      Result<std::unique_ptr<RowSource>> rows =
          OpenRowSource(std::move(*raw), req.format.value_or(GuessInputFormat(file)), schema,
                        req.policy, name, req.limits);
      if (!rows.ok()) return fail(rows.status(), name);
      const uint64_t bytes_before = c.bytes_read;
      while (true) {
        Result<std::optional<RecordBatch>> next = (*rows)->Next(options.batch_rows);
        if (!next.ok()) return fail(next.status(), name);
        c.bytes_read = bytes_before + (*rows)->bytes_read();
        if (!*next) break;
        RecordBatch& b = **next;
        c.rows_read += b.num_rows();
        if (c.rows_read > req.max_rows) {
          return fail(Status::ResourceExhausted(
                          name + ": the run has more than " + std::to_string(req.max_rows) +
                          " rows (the rows-per-run limit); split the input into several runs "
                          "or raise --max-rows"),
                      name);
        }
        const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
        if (now > deadline) {
          return fail(
              Status::ResourceExhausted(name + ": parsing took longer than the time budget of " +
                                        std::to_string(req.time_budget_ms) + " ms (at row " +
                                        std::to_string(c.rows_read) +
                                        " of the run); split the input or raise --time-budget-ms"),
              name);
        }
        if (upsert) {
          const int64_t first = (*rows)->rows_read() - b.num_rows();  // rows of this file before b
          const auto kc = Columns(b, keys), ac = Columns(b, columns);
          std::vector<int64_t> keep;
          keep.reserve(b.num_rows());
          for (int64_t r = 0; r < b.num_rows(); ++r) {
            for (size_t k = 0; k < kc.size(); ++k) {
              if (kc[k]->IsNull(r)) {
                return fail(Status::InvalidArgument(name + " row " + std::to_string(first + r + 1) +
                                                    ": key column '" + keys[k] +
                                                    "' is null; every upsert row needs its key"),
                            name);
              }
            }
            const Hash128Value key = Hash128(EncodeRowKey(kc, r));
            auto [at, fresh] = seen.emplace(key, Seen{static_cast<uint32_t>(fi), first + r + 1});
            if (!fresh) {
              return fail(Status::InvalidArgument(
                              "duplicate upsert key: " + names[at->second.file] + " row " +
                              std::to_string(at->second.row) + " and " + name + " row " +
                              std::to_string(first + r + 1) + " have the same key (" +
                              JoinNames(keys) + "); keep one row per key in a run"),
                          name);
            }
            auto it = existing.find(key);
            if (it == existing.end()) {
              c.inserted++;
              keep.push_back(r);
            } else if (it->second.rows == 1 && it->second.content == Hash128(EncodeRowKey(ac, r))) {
              c.unchanged++;  // the same row is there: nothing to write
            } else {
              c.updated++;
              keep.push_back(r);
            }
          }
          if (keep.size() != static_cast<size_t>(b.num_rows())) {
            RecordBatch kept(b.schema);
            for (size_t col = 0; col < b.columns.size(); ++col) {
              kept.columns[col].AppendRows(b.columns[col], keep);
            }
            b = std::move(kept);
          }
        } else {
          c.inserted += b.num_rows();
        }
        if (writer && b.num_rows() > 0) {
          Status pushed = writer->Push(std::move(b));
          if (!pushed.ok()) return fail(pushed, name);
        }
        if (options.on_batch) {
          Status go_on = options.on_batch(c);
          if (!go_on.ok()) return fail(go_on, name);
        }
      }
    }
    return Status::OK();
  };
  RETURN_NOT_OK(validate());
  if (req.mode == LoadMode::kReplace) c.deleted = table.head.row_count.value_or(0);
  if (writer) {
    Status closed = writer->Close();
    if (!closed.ok()) return fail(closed, "");
    out.staged = writer->written();
  }
  return out;
}

}  // namespace loam::ingest
