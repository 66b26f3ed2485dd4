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
// Etag: "<inode>-<mtime ns>-<size>" in hex. Every write creates a new inode and
// stamps it with the current CLOCK_REALTIME nanoseconds, so a replaced object
// never shows an earlier etag again (an inode number is only reused after its
// file is deleted, and by then the clock has moved on). This needs a
// filesystem with nanosecond timestamps (ext4 with 256-byte inodes, xfs,
// btrfs, tmpfs) and a clock that does not step back: on coarser timestamps an
// ABA of inode number, second and size within one CAS window is conceivable.
//
// Limitation of a real directory tree: a key cannot also be a "directory" of
// other keys ("a" and "a/b" cannot coexist); Loam's layouts never do that.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

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

  // Test only: runs between a write's rename or link and its directory sync,
  // with the object's directory (what another process's delete could remove).
  void SetBeforeDirectorySyncForTesting(std::function<void(const std::string& dir)> hook) {
    before_dir_sync_ = std::move(hook);
  }

 private:
  explicit LocalObjectStore(std::string root) : root_(std::move(root)) {}

  std::string PathOf(std::string_view key) const { return root_ + "/" + std::string(key); }
  std::string LockPathFor(std::string_view key) const;
  Result<int> OpenForRead(std::string_view key, struct stat* st) const;
  // Creates the directories of `key`'s parent path, fsyncing each new entry.
  Status MakeParentDirs(std::string_view key) const;
  void ForgetParentDirs(std::string_view key) const;
  Result<int> CreateTempFile(std::string_view key, std::string* tmp) const;
  Result<ObjectMeta> FillTempFile(int fd, const std::string& tmp, ByteSource& source,
                                  bool durable) const;
  void RemoveEmptyParents(std::string_view key) const;
  // Makes the entries of `dir` durable. A concurrent delete may have emptied
  // and removed it meanwhile: then that removal is made durable in the
  // nearest directory still there.
  Status SyncNearestDirectory(std::string dir) const;
  Status Unlink(std::string_view key, bool durable);
  static void RemoveIfStale(const std::string& path);
  Status ListDir(const std::string& dir_key, std::string_view prefix, std::string_view start_after,
                 size_t want, ListPage* page) const;

  std::string root_;  // absolute, no trailing '/'
  std::function<void(const std::string&)> before_dir_sync_;
  mutable std::mutex durable_mu_;
  // Directories this store has made durable (fsynced into their parent).
  mutable std::unordered_set<std::string> durable_dirs_ LOAM_GUARDED_BY(durable_mu_);
};

}  // namespace loam
