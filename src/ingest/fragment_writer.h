// Writes record batches as staged fragment files on a thread of its own;
// at most `depth` batches wait, so parsing and writing overlap with bounded
// memory. Used by the stager. A run that stays one small batch is staged in
// memory instead (Dataset::WriteFragment's allow_inline): its commit embeds
// it in the version file, so a small run writes no fragment object. (A small
// first batch is held until a second comes, one batch more than `depth`.)
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "dataset/dataset.h"

namespace loam::ingest {

class FragmentWriter {
 public:
  // `schema`: the fragments' schema when it is not the dataset's (additive).
  FragmentWriter(const Dataset& data, size_t depth, const Schema* schema);
  ~FragmentWriter();

  // Queues a batch; the writer's error, if it has failed.
  Status Push(RecordBatch batch) LOAM_EXCLUDES(mu_);
  // Waits for every queued batch to be written.
  Status Close() LOAM_EXCLUDES(mu_);
  // Fragments written so far (all of them after Close).
  std::vector<Fragment> written() LOAM_EXCLUDES(mu_);

 private:
  void Loop() LOAM_EXCLUDES(mu_);
  // Writes one batch; false (the error kept) when that failed.
  bool Write(const RecordBatch& batch, bool allow_inline) LOAM_EXCLUDES(mu_);

  const Dataset& data_;
  const size_t depth_;
  const Schema* schema_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<RecordBatch> queue_ LOAM_GUARDED_BY(mu_);
  std::vector<Fragment> written_ LOAM_GUARDED_BY(mu_);
  Status error_ LOAM_GUARDED_BY(mu_);
  bool closed_ LOAM_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace loam::ingest
