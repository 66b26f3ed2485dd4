// LocalObjectStore: objects as files under a root directory.
//
// Durability and atomicity (a reader never sees a partial object):
//   - every write goes to a temp file "<dir>/.tmp-<id>" that is fsynced first;
//   - put:            rename(temp, final), under the key's lock stripe;
//   - put-if-absent:  link(temp, final); EEXIST means the race was lost;
//   - put-if-match:   under the key's lock stripe, compare the etag, rename;
//   - then the parent directory is fsynced.
// A temp file left by a killed writer is never an object; a List that walks
// its directory removes it once it is an hour old.
// So a name that survives a crash always has its whole content, even on a
// file system without a journal: the content is durable before the name
// exists. (An O_TMPFILE + linkat put was tried: it names the file before
// its inode is durable, and a concurrent fsync of the same directory can
// then persist a name whose inode is not.)
// Lock stripes are flock()ed files in "<root>/.loam/locks/", so conditional
// writes are atomic across threads and processes sharing the root.
//
// Etag: "<inode>-<mtime ns>-<size>" in hex. Every write creates a new inode
// (whose number may be one a deleted file had) and stamps it with the
// current CLOCK_REALTIME nanoseconds, raised so that (a) the times one
// process stamps strictly increase and (b) a replacement's time is later
// than the object's it replaces (read under the key's lock). So a key never
// shows one of its earlier etags again, even with a clock that stands still
// or steps back; an object deleted and made again by another process at the
// very nanosecond of an earlier one, on its inode, with its size, is what is
// left. A file system that keeps coarser times than asked for (seen on every
// write) is refused with FailedPrecondition.
//
// Limitation of a real directory tree: a key cannot also be a "directory" of
// other keys ("a" and "a/b" cannot coexist); Loam's layouts never do that.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "loam/object_store.h"

namespace loam {

class LocalObjectStore final : public ObjectStore {
 public:
  // Creates `root` (and parents) if missing.
  static Result<std::shared_ptr<LocalObjectStore>> Open(std::string root);

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  Status DeleteRelaxed(std::string_view key) override;
  std::string Describe() const override { return "file://" + root_; }
  // Listing reads the directory, then sorts its names.
  bool ListReadsWholeDirectory() const override { return true; }

  const std::string& root() const { return root_; }

  // Test only: runs before each directory sync of a write or delete, with
  // the directory (what another process's delete could remove); an error it
  // returns is taken as the sync's.
  void SetBeforeDirectorySyncForTesting(std::function<Status(const std::string& dir)> hook) {
    before_dir_sync_ = std::move(hook);
  }
  // Test only: the clock that stamps objects' modification times (the
  // etag's), instead of CLOCK_REALTIME. Not owned.
  void SetClockForTesting(const Clock* clock) { clock_ = clock; }

 private:
  explicit LocalObjectStore(std::string root) : root_(std::move(root)) {}

  std::string PathOf(std::string_view key) const { return root_ + "/" + std::string(key); }
  std::string LockPathFor(std::string_view key) const;
  Result<int> OpenForRead(std::string_view key, struct stat* st) const;
  // Creates the directories of `key`'s parent path, fsyncing each new entry.
  Status MakeParentDirs(std::string_view key) const;
  void ForgetParentDirs(std::string_view key) const;
  Result<int> CreateTempFile(std::string_view key, std::string* tmp) const;
  // Stamps it with a time from NowNanos() (`stamp_ns`, see the etag note).
  Result<ObjectMeta> FillTempFile(int fd, const std::string& tmp, ByteSource& source, bool durable,
                                  int64_t* stamp_ns) const;
  int64_t NowNanos() const;
  void RemoveEmptyParents(std::string_view key) const;
  // Makes the entries of `dir` durable. A concurrent delete may have emptied
  // and removed it meanwhile: then that removal is made durable in the
  // nearest directory still there.
  Status SyncNearestDirectory(std::string dir) const;
  // After a directory fsync failed, the entries it covered (a version just
  // linked, a delete) may be in the page cache but not on disk, and the
  // kernel may drop the failure: a later sync can succeed without them. So
  // the store fails every call from then on, and nothing reads back as
  // committed what may not survive a crash (a commit with an unclear outcome
  // reads its version back). Reopen once the disk is checked.
  void Poison(const Status& cause) const;
  Status Healthy() const;
  Status Unlink(std::string_view key, bool durable);
  static void RemoveIfStale(const std::string& path);
  Status ListDir(const std::string& dir_key, std::string_view prefix, std::string_view start_after,
                 size_t want, ListPage* page) const;

  std::string root_;  // absolute, no trailing '/'
  std::function<Status(const std::string&)> before_dir_sync_;
  // Set by the first failed directory sync; every call fails with it from
  // then on (see Poison).
  mutable std::atomic<bool> poisoned_{false};
  mutable Status poison_ LOAM_GUARDED_BY(durable_mu_);
  const Clock* clock_ = nullptr;  // null: CLOCK_REALTIME
  mutable std::mutex durable_mu_;
  // Directories this store has made durable (fsynced into their parent).
  mutable std::unordered_set<std::string> durable_dirs_ LOAM_GUARDED_BY(durable_mu_);
};

}  // namespace loam
