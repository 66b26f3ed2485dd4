#include "ingest/stager.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/flat_hash_map.h"
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

Hash128Value RowHash(const std::vector<const Column*>& cols, int64_t row, std::string* buf) {
  buf->clear();
  AppendRowKey(cols, row, buf);
  return Hash128(*buf);
}

struct Existing {
  uint64_t content = 0;  // 64 bits of the row's 128-bit hash
  uint32_t rows = 0;
};

// Where a key was first seen in the run.
struct Seen {
  uint32_t file = 0;
  int64_t line = 0;  // where the row starts in its file
};

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One run's input, parsed once or (for upserts) twice.
class Stager {
 public:
  Stager(const RunRequest& req, const TableState& table, const Dataset& data,
         const StagerOptions& options, std::string* failed_file)
      : req_(req),
        schema_(table.def.schema),
        table_(table),
        data_(data),
        options_(options),
        failed_file_(failed_file),
        keys_(req.keys.empty() ? table.def.keys : req.keys) {
    for (const Field& f : schema_.fields) columns_.push_back(f.name);
  }

  Result<StagedInput> Run() {
    const int64_t deadline = SteadyMicros() + req_.time_budget_ms * 1000;
    if (req_.mode == LoadMode::kUpsert) {
      // Pass 1 checks every row and collects the run's keys; the table is
      // then read for those keys only; pass 2 classifies and stages.
      RETURN_NOT_OK(Parse(deadline, [&](const RecordBatch& b, uint32_t file, const Lines& lines) {
        return CollectKeys(b, file, lines);
      }));
      RETURN_NOT_OK(Guard(ReadMatchedRows(), ""));
      if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));  // lease
      out_.counters = {};
      out_.rejected.clear();
    }
    if (options_.stage) writer_ = std::make_unique<FragmentWriter>(data_, 3);
    RETURN_NOT_OK(
        Parse(deadline, [&](RecordBatch& b, uint32_t, const Lines&) { return Stage(b); }));
    RunCounters& c = out_.counters;
    if (req_.mode == LoadMode::kReplace) c.deleted = table_.head.row_count.value_or(0);
    if (writer_) {
      RETURN_NOT_OK(Guard(writer_->Close(), ""));
      out_.staged = writer_->written();
    }
    return std::move(out_);
  }

 private:
  using Lines = std::vector<int64_t>;
  // `lines`: where each row of the batch starts in its file.
  using BatchFn = std::function<Status(RecordBatch& batch, uint32_t file, const Lines& lines)>;

  // Cleans up after a failure: staged files are deleted (best effort; gc
  // removes what is left).
  Status Guard(Status s, const std::string& file) {
    if (s.ok()) return s;
    *failed_file_ = file;
    if (writer_) {
      static_cast<void>(writer_->Close());
      static_cast<void>(data_.DeleteStaged(writer_->written()));
      writer_.reset();
    }
    return s;
  }

  // Every file in order: typed, checked batches to `each`, with limits.
  Status Parse(int64_t deadline, const BatchFn& each) {
    RunCounters& c = out_.counters;
    names_.clear();
    for (size_t fi = 0; fi < req_.files.size(); ++fi) {
      const std::string& file = req_.files[fi];
      const std::string name = std::filesystem::path(file).filename().string();
      names_.push_back(name);
      Result<std::unique_ptr<ByteSource>> raw = options_.open_input(file);
      if (!raw.ok()) return Guard(raw.status(), name);
      RejectFn reject;
      if (req_.error_policy == ErrorPolicy::kSkipRows) {
        reject = [&, name](const Status& error) { return Reject(error, name); };
      }
      Result<std::unique_ptr<RowSource>> rows =
          OpenRowSource(std::move(*raw), req_.format.value_or(GuessInputFormat(file)), schema_,
                        req_.policy, name, req_.limits, std::move(reject));
      if (!rows.ok()) return Guard(rows.status(), name);
      const uint64_t bytes_before = c.bytes_read;
      while (true) {
        Result<std::optional<RecordBatch>> next = (*rows)->Next(options_.batch_rows);
        if (!next.ok()) return Guard(next.status(), name);
        c.bytes_read = bytes_before + (*rows)->bytes_read();
        if (!*next) break;
        RecordBatch& b = **next;
        c.rows_read += b.num_rows();
        if (c.rows_read > req_.max_rows) {
          return Guard(Status::ResourceExhausted(
                           name + ": the run has more than " + std::to_string(req_.max_rows) +
                           " rows (the rows-per-run limit); split the input into several runs "
                           "or raise --max-rows"),
                       name);
        }
        if (SteadyMicros() > deadline) {
          return Guard(
              Status::ResourceExhausted(name + ": parsing took longer than the time budget of " +
                                        std::to_string(req_.time_budget_ms) + " ms (at row " +
                                        std::to_string(c.rows_read) +
                                        " of the run); split the input or raise --time-budget-ms"),
              name);
        }
        RETURN_NOT_OK(Guard(each(b, static_cast<uint32_t>(fi), (*rows)->row_lines()), name));
        if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(c), name));
      }
    }
    return Status::OK();
  }

  // skipRows: counts the row left out, keeps its position and reason.
  Status Reject(const Status& error, const std::string& file) {
    RunCounters& c = out_.counters;
    c.rejected++;
    c.rows_read++;
    if (out_.rejected.size() < 10) out_.rejected.push_back({file, error.message()});
    if (c.rejected > req_.max_rejected_rows) {
      return Status::ResourceExhausted(
          "more than " + std::to_string(req_.max_rejected_rows) +
          " rows were rejected (the rejected-rows limit); the last: " + error.message());
    }
    return Status::OK();
  }

  // Pass 1 of an upsert: keys present and distinct within the run.
  Status CollectKeys(const RecordBatch& b, uint32_t file, const Lines& lines) {
    const auto kc = Columns(b, keys_);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      const int64_t line = lines[static_cast<size_t>(r)];
      for (size_t k = 0; k < kc.size(); ++k) {
        if (kc[k]->IsNull(r)) {
          return Status::InvalidArgument(names_[file] + ": line " + std::to_string(line) +
                                         ": key column '" + keys_[k] +
                                         "' is null; every upsert row needs its key");
        }
      }
      bool fresh = false;
      Seen& at = seen_.FindOrInsert(RowHash(kc, r, &buf_), &fresh);
      if (!fresh) {
        return Status::InvalidArgument("duplicate upsert key: " + names_[at.file] + " line " +
                                       std::to_string(at.line) + " and " + names_[file] + " line " +
                                       std::to_string(line) + " have the same key (" +
                                       JoinNames(keys_) + "); keep one row per key in a run");
      }
      at = Seen{file, line};
    }
    return Status::OK();
  }

  // The table's rows with a key of the run: their content, and how many.
  Status ReadMatchedRows() {
    ScanSpec spec;
    spec.columns = columns_;
    return data_.ScanEach(spec, [&](const RecordBatch& b) {
      const auto kc = Columns(b, keys_), ac = Columns(b, columns_);
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        const Hash128Value key = RowHash(kc, r, &buf_);
        if (seen_.Find(key) == nullptr) continue;
        Existing& e = existing_.FindOrInsert(key);
        e.content = RowHash(ac, r, &buf_).lo;
        e.rows++;
      }
      return Status::OK();
    });
  }

  // Counts the batch's rows and queues those to write: for upserts, rows
  // identical to the table's one row with their key are left out.
  Status Stage(RecordBatch& b) {
    RunCounters& c = out_.counters;
    if (req_.mode == LoadMode::kUpsert) {
      const auto kc = Columns(b, keys_), ac = Columns(b, columns_);
      std::vector<int64_t> keep;
      keep.reserve(b.num_rows());
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        const Existing* e = existing_.Find(RowHash(kc, r, &buf_));
        if (e == nullptr) {
          c.inserted++;
          keep.push_back(r);
        } else if (e->rows == 1 && e->content == RowHash(ac, r, &buf_).lo) {
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
    if (writer_ && b.num_rows() > 0) return writer_->Push(std::move(b));
    return Status::OK();
  }

  const RunRequest& req_;
  const Schema& schema_;
  const TableState& table_;
  const Dataset& data_;
  const StagerOptions& options_;
  std::string* failed_file_;
  const std::vector<std::string> keys_;
  std::vector<std::string> columns_;
  std::vector<std::string> names_;
  FlatHashMap<Seen> seen_;          // upsert: the run's keys
  FlatHashMap<Existing> existing_;  // upsert: the table's rows with those keys
  std::unique_ptr<FragmentWriter> writer_;
  std::string buf_;
  StagedInput out_;
};

}  // namespace

Result<StagedInput> StageInput(const RunRequest& req, const TableState& table, const Dataset& data,
                               const StagerOptions& options, std::string* failed_file) {
  return Stager(req, table, data, options, failed_file).Run();
}

}  // namespace loam::ingest
