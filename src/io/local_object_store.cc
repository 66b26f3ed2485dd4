#include "io/local_object_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "common/hash.h"
#include "common/status_macros.h"
#include "io/object_store_util.h"

namespace loam {
namespace {

constexpr size_t kIoChunk = 1 << 20;
constexpr int kLockStripes = 64;
constexpr std::string_view kTempPrefix = ".tmp-";
// A temp file untouched this long was left by a writer that died (a live
// writer's temp is written to, or renamed, within seconds): a List that
// passes it removes it.
constexpr int64_t kStaleTempSeconds = 3600;

Status ErrnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " '" + path + "': " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return Status::NotFound(msg);
    case EEXIST:
      return Status::AlreadyExists(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return Status::PermissionDenied(msg);
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
      return Status::ResourceExhausted(msg);
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
      return Status::InvalidArgument(msg);
    default:
      return Status::Unavailable(msg);
  }
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// An exclusive flock() held for the object's lifetime.
class StripeLock {
 public:
  static Result<std::unique_ptr<StripeLock>> Acquire(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("open lock", path, errno);
    auto lock = std::unique_ptr<StripeLock>(new StripeLock(fd));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) return ErrnoStatus("flock", path, errno);
    }
    return lock;
  }
  ~StripeLock() { ::close(fd_); }  // closing releases the flock

 private:
  explicit StripeLock(int fd) : fd_(fd) {}
  int fd_;
};

// `*sync_failed` (if given) says whether the fsync itself failed, not
// the open before it.
Status FsyncPath(const std::string& path, bool* sync_failed = nullptr) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("open directory", path, errno);
  if (::fsync(fd.get()) != 0) {
    if (sync_failed != nullptr) *sync_failed = true;
    return ErrnoStatus("fsync directory", path, errno);
  }
  return Status::OK();
}

std::string ParentDir(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string HexEtag(const struct stat& st) {
  char buf[64];
  const unsigned long long ns =
      static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  std::snprintf(buf, sizeof(buf), "%llx-%llx-%llx", static_cast<unsigned long long>(st.st_ino), ns,
                static_cast<unsigned long long>(st.st_size));
  return buf;
}

// Saturated outside 1678..2262, where int64 nanoseconds end.
int64_t NanosOf(const struct timespec& t) {
  int64_t ns = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(t.tv_sec), int64_t{1'000'000'000}, &ns) ||
      __builtin_add_overflow(ns, static_cast<int64_t>(t.tv_nsec), &ns)) {
    return t.tv_sec < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  return ns;
}

// Modification times this process stamps: strictly increasing, at least
// `floor_ns`, so no two objects it writes share one whatever the clock does.
int64_t NextStampNanos(int64_t floor_ns) {
  static std::atomic<int64_t> last{0};
  int64_t prev = last.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max(floor_ns, prev + 1);
  } while (!last.compare_exchange_weak(prev, next, std::memory_order_relaxed));
  return next;
}

ObjectMeta MetaOf(const struct stat& st) {
  ObjectMeta m;
  m.size = static_cast<uint64_t>(st.st_size);
  m.etag = HexEtag(st);
  m.mtime_micros = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000;
  return m;
}

// Stamps the file at `path` (open as `fd`) with `stamp_ns` and returns its
// metadata. A file system that keeps a coarser time than asked for would
// let two contents share an etag: refused.
Result<ObjectMeta> Stamp(int fd, const std::string& path, int64_t stamp_ns, bool durable) {
  struct timespec t[2];
  t[0] = {static_cast<time_t>(stamp_ns / 1'000'000'000),
          static_cast<long>(stamp_ns % 1'000'000'000)};
  t[1] = t[0];
  if (::futimens(fd, t) != 0) return ErrnoStatus("futimens", path, errno);
  if (durable && ::fsync(fd) != 0) return ErrnoStatus("fsync", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus("fstat", path, errno);
  if (NanosOf(st.st_mtim) != stamp_ns) {
    return Status::FailedPrecondition(
        "the file system under '" + ParentDir(path) +
        "' keeps modification times coarser than nanoseconds; Loam's conditional writes need "
        "them exact (ext4 with 256-byte inodes, xfs, btrfs and tmpfs keep them)");
  }
  return MetaOf(st);
}

// A replacement is stamped later than the object it replaces (`replaced`),
// so a key never shows one of its earlier etags again, though inode numbers
// are reused and sizes repeat. Updates `stamp_ns` and `meta` if it restamps.
Status StampLaterThan(const struct stat& replaced, const std::string& tmp, bool durable,
                      int64_t* stamp_ns, ObjectMeta* meta) {
  const int64_t replaced_ns = NanosOf(replaced.st_mtim);
  if (*stamp_ns > replaced_ns) return Status::OK();
  if (replaced_ns == std::numeric_limits<int64_t>::max()) {
    return Status::FailedPrecondition("'" + tmp + "' replaces a file dated past 2262");
  }
  Fd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("open", tmp, errno);
  *stamp_ns = NextStampNanos(replaced_ns + 1);
  ASSIGN_OR_RETURN(*meta, Stamp(fd.get(), tmp, *stamp_ns, durable));
  return Status::OK();
}

// Unique among live processes: the pid is read per call, so a forked child
// never reuses its parent's names even though it inherits the counter.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%x-%llx", static_cast<unsigned>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path, errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<LocalObjectStore>> LocalObjectStore::Open(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty()) return Status::InvalidArgument("empty local store root");
  if (root.front() != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return ErrnoStatus("getcwd", root, errno);
    root = std::string(cwd) + "/" + root;
  }
  // mkdir -p root
  for (size_t pos = 1; pos <= root.size(); ++pos) {
    if (pos != root.size() && root[pos] != '/') continue;
    std::string dir = root.substr(0, pos);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("create directory", dir, errno);
    }
  }
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) return ErrnoStatus("stat", root, errno);
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("'" + root + "' is not a directory");
  const std::string locks = root + "/.loam/locks";
  for (const std::string& d : {root + "/.loam", locks}) {
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("create directory", d, errno);
    }
  }
  return std::shared_ptr<LocalObjectStore>(new LocalObjectStore(std::move(root)));
}

std::string LocalObjectStore::LockPathFor(std::string_view key) const {
  return root_ + "/.loam/locks/" + std::to_string(Hash64(key) % kLockStripes);
}

// Every directory on the path must be durable before an object in it is
// acknowledged: a directory made by us is fsynced into its parent; one that
// already existed may have been made by a writer that crashed before its
// fsync, so it is fsynced too the first time this store sees it. A parent
// already known durable costs nothing (a concurrent delete that removes it
// shows as ENOENT later, and the caller calls ForgetParentDirs and retries).
Status LocalObjectStore::MakeParentDirs(std::string_view key) const {
  {
    std::lock_guard<std::mutex> lock(durable_mu_);
    if (durable_dirs_.count(ParentDir(PathOf(key)))) return Status::OK();
  }
  for (size_t pos = key.find('/'); pos != std::string_view::npos; pos = key.find('/', pos + 1)) {
    const std::string dir = PathOf(key.substr(0, pos));
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno != EEXIST) return ErrnoStatus("create directory", dir, errno);
      struct stat st;
      if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
        return Status::InvalidArgument("key '" + std::string(key) + "' needs '" +
                                       std::string(key.substr(0, pos)) +
                                       "' as a directory, but it is an object");
      }
      std::lock_guard<std::mutex> lock(durable_mu_);
      if (durable_dirs_.count(dir)) continue;
    }
    bool sync_failed = false;
    Status synced = FsyncPath(ParentDir(dir), &sync_failed);
    if (sync_failed) Poison(synced);
    RETURN_NOT_OK(synced);
    std::lock_guard<std::mutex> lock(durable_mu_);
    durable_dirs_.insert(dir);
  }
  return Status::OK();
}

// Drops `key`'s directories from the durable set: one of them was removed.
void LocalObjectStore::ForgetParentDirs(std::string_view key) const {
  std::lock_guard<std::mutex> lock(durable_mu_);
  for (size_t pos = key.find('/'); pos != std::string_view::npos; pos = key.find('/', pos + 1)) {
    durable_dirs_.erase(PathOf(key.substr(0, pos)));
  }
}

// Opens `key` for reading; NotFound unless it is a regular file.
Result<int> LocalObjectStore::OpenForRead(std::string_view key, struct stat* st) const {
  RETURN_NOT_OK(ValidateObjectKey(key));
  RETURN_NOT_OK(Healthy());
  const std::string path = PathOf(key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NoSuchObject(key);
    return ErrnoStatus("open", path, errno);
  }
  if (::fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus("fstat", path, err);
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(fd);
    return NoSuchObject(key);
  }
  return fd;
}

Result<ObjectMeta> LocalObjectStore::Read(std::string_view key, std::optional<ByteRange> range,
                                          ByteSink& sink) {
  struct stat st;
  ASSIGN_OR_RETURN(int raw_fd, OpenForRead(key, &st));
  Fd fd(raw_fd);
  const std::string path = PathOf(key);
  ObjectMeta meta = MetaOf(st);
  uint64_t offset = 0, remaining = meta.size;
  if (range) {
    RETURN_NOT_OK(CheckRangeStart(key, range->offset, meta.size));
    offset = range->offset;
    remaining = std::min(range->length, meta.size - offset);
  }
  const size_t buf_size = std::min<uint64_t>(std::max<uint64_t>(remaining, 1), kIoChunk);
  std::unique_ptr<char[]> buf(new char[buf_size]);
  while (remaining > 0) {
    ssize_t n = ::pread(fd.get(), buf.get(), std::min<uint64_t>(remaining, buf_size),
                        static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path, errno);
    }
    if (n == 0) return Status::Unavailable("unexpected end of file '" + path + "'");
    RETURN_NOT_OK(sink.Append(std::string_view(buf.get(), static_cast<size_t>(n))));
    offset += static_cast<uint64_t>(n);
    remaining -= static_cast<uint64_t>(n);
  }
  return meta;
}

Result<std::string> LocalObjectStore::GetRange(std::string_view key, uint64_t offset,
                                               uint64_t length) {
  struct stat st;
  ASSIGN_OR_RETURN(int raw_fd, OpenForRead(key, &st));
  Fd fd(raw_fd);
  const std::string path = PathOf(key);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  RETURN_NOT_OK(CheckRangeStart(key, offset, size));
  std::string out(std::min(length, size - offset), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path, errno);
    }
    if (n == 0) return Status::Unavailable("unexpected end of file '" + path + "'");
    done += static_cast<size_t>(n);
  }
  return out;
}

Result<ObjectMeta> LocalObjectStore::Head(std::string_view key) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  RETURN_NOT_OK(Healthy());
  const std::string path = PathOf(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return Status::NotFound("no object '" + std::string(key) + "'");
    return ErrnoStatus("stat", path, errno);
  }
  if (!S_ISREG(st.st_mode)) return Status::NotFound("no object '" + std::string(key) + "'");
  return MetaOf(st);
}

// Creates an empty temp file next to `key`'s final path. Retries when a
// concurrent delete removed the directory between mkdir and open (ENOENT), or
// when the name is taken (EEXIST); no byte of any source is consumed yet.
Result<int> LocalObjectStore::CreateTempFile(std::string_view key, std::string* tmp) const {
  const std::string dir = ParentDir(PathOf(key));
  for (int attempt = 0;; ++attempt) {
    // A concurrent delete may remove an empty directory we just made: retry.
    Status made = MakeParentDirs(key);
    if (made.IsNotFound() && attempt < 16) continue;
    RETURN_NOT_OK(made);
    *tmp = dir + "/" + std::string(kTempPrefix) + TempSuffix();
    int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if ((errno != ENOENT && errno != EEXIST) || attempt >= 16) {
      return ErrnoStatus("create", *tmp, errno);
    }
    if (errno == ENOENT) ForgetParentDirs(key);
  }
}

// Streams `source` into the open temp file, stamps its mtime (see the etag
// note in the header), fsyncs it and returns its metadata.
Result<ObjectMeta> LocalObjectStore::FillTempFile(int fd, const std::string& tmp,
                                                  ByteSource& source, bool durable,
                                                  int64_t* stamp_ns) const {
  // Sized to the object when known: small objects (most commits) skip
  // allocating and clearing a whole chunk.
  const uint64_t hint = source.SizeHint().value_or(kIoChunk);
  const size_t buf_size = std::clamp<uint64_t>(hint + 1, 4096, kIoChunk);
  std::unique_ptr<char[]> buf(new char[buf_size]);  // not cleared: Read fills it
  while (true) {
    Result<size_t> n = source.Read(buf.get(), buf_size);
    if (!n.ok()) return n.status().WithContext("reading put source");
    if (*n == 0) break;
    RETURN_NOT_OK(WriteAll(fd, buf.get(), *n, tmp));
  }
  *stamp_ns = NextStampNanos(NowNanos());
  return Stamp(fd, tmp, *stamp_ns, durable);
}

int64_t LocalObjectStore::NowNanos() const {
  if (clock_ != nullptr) return clock_->NowMicros() * 1000;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return NanosOf(now);
}

Result<ObjectMeta> LocalObjectStore::Write(std::string_view key, ByteSource& source,
                                           const PutOptions& options) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  RETURN_NOT_OK(Healthy());
  const std::string path = PathOf(key);
  const std::string dir = ParentDir(path);
  std::string tmp;
  int64_t stamp_ns = 0;
  ASSIGN_OR_RETURN(int raw_fd, CreateTempFile(key, &tmp));
  Result<ObjectMeta> filled = [&] {
    Fd fd(raw_fd);
    return FillTempFile(fd.get(), tmp, source, options.durable, &stamp_ns);
  }();
  if (!filled.ok()) {
    ::unlink(tmp.c_str());
    return filled.status();
  }
  ObjectMeta meta = *filled;
  auto discard = [&](Status s) {
    ::unlink(tmp.c_str());
    return s;
  };
  if (options.condition == PutCondition::kIfAbsent) {
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      if (err == EEXIST) {
        return discard(Status::AlreadyExists("object '" + std::string(key) + "' already exists"));
      }
      return discard(ErrnoStatus("link", path, err));
    }
    ::unlink(tmp.c_str());
  } else {
    ASSIGN_OR_RETURN(auto lock, StripeLock::Acquire(LockPathFor(key)));
    struct stat st;
    const bool exists = ::stat(path.c_str(), &st) == 0;
    if (!exists && errno != ENOENT) return discard(ErrnoStatus("stat", path, errno));
    if (options.condition == PutCondition::kIfMatch) {
      if (!exists) {
        return discard(Status::NotFound("put-if-match: no object '" + std::string(key) + "'"));
      }
      if (HexEtag(st) != options.if_match_etag) {
        return discard(Status::Aborted("put-if-match: etag of '" + std::string(key) +
                                       "' is no longer '" + options.if_match_etag + "'"));
      }
    }
    if (exists) {
      Status later = StampLaterThan(st, tmp, options.durable, &stamp_ns, &meta);
      if (!later.ok()) return discard(later);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      return discard(ErrnoStatus("rename", path, errno));
  }
  // The object may be deleted, and its directory removed, before this sync:
  // the write happened, and the delete after it.
  if (options.durable) RETURN_NOT_OK(SyncNearestDirectory(dir));
  return meta;
}

Status LocalObjectStore::Delete(std::string_view key) { return Unlink(key, /*durable=*/true); }

Status LocalObjectStore::DeleteRelaxed(std::string_view key) {
  return Unlink(key, /*durable=*/false);
}

Status LocalObjectStore::Unlink(std::string_view key, bool durable) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  RETURN_NOT_OK(Healthy());
  const std::string path = PathOf(key);
  {
    ASSIGN_OR_RETURN(auto lock, StripeLock::Acquire(LockPathFor(key)));
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return Status::OK();
      return ErrnoStatus("unlink", path, errno);
    }
  }
  // A relaxed delete also keeps the directory: the next object there would
  // otherwise pay for making it durable again.
  if (!durable) return Status::OK();
  // Another delete may have emptied and removed the directory meanwhile:
  // then its removal takes the entry with it.
  RETURN_NOT_OK(SyncNearestDirectory(ParentDir(path)));
  RemoveEmptyParents(key);
  return Status::OK();
}

Status LocalObjectStore::SyncNearestDirectory(std::string dir) const {
  bool sync_failed = false;
  Status synced = before_dir_sync_ ? before_dir_sync_(dir) : Status::OK();
  if (!synced.ok()) sync_failed = true;  // the hook stands for a failed fsync
  if (synced.ok()) synced = FsyncPath(dir, &sync_failed);
  while (synced.IsNotFound() && dir.size() > root_.size()) {
    dir = ParentDir(dir);
    synced = FsyncPath(dir, &sync_failed);
  }
  if (sync_failed) Poison(synced);
  return synced;
}

void LocalObjectStore::Poison(const Status& cause) const {
  std::lock_guard<std::mutex> lock(durable_mu_);
  if (poisoned_.load(std::memory_order_relaxed)) return;
  // Unavailable: the outcome of what was under way is unknown, not refused.
  poison_ = Status::Unavailable(
      "the local store at '" + root_ + "' stopped after a directory sync failed (" +
      cause.ToString() +
      "): what it wrote or deleted since may not be on disk; check the disk, then open the "
      "workspace again");
  poisoned_.store(true, std::memory_order_release);
}

Status LocalObjectStore::Healthy() const {
  if (!poisoned_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard<std::mutex> lock(durable_mu_);
  return poison_;
}

// Best effort: rmdir fails harmlessly on a non-empty directory, and a writer
// whose directory vanishes recreates it (see Write).
void LocalObjectStore::RemoveEmptyParents(std::string_view key) const {
  for (size_t pos = key.rfind('/'); pos != std::string_view::npos && pos > 0;
       pos = key.rfind('/', pos - 1)) {
    const std::string dir = PathOf(key.substr(0, pos));
    if (::rmdir(dir.c_str()) != 0) return;
    std::lock_guard<std::mutex> lock(durable_mu_);
    durable_dirs_.erase(dir);
  }
}

Result<ListPage> LocalObjectStore::List(std::string_view prefix, std::string_view start_after,
                                        size_t limit) {
  RETURN_NOT_OK(ValidateListPrefix(prefix));
  RETURN_NOT_OK(Healthy());
  if (limit == 0) limit = 1000;
  ListPage page;
  const size_t slash = prefix.rfind('/');
  const std::string dir_key =
      slash == std::string_view::npos ? std::string() : std::string(prefix.substr(0, slash + 1));
  RETURN_NOT_OK(ListDir(dir_key, prefix, start_after, limit + 1, &page));
  if (page.objects.size() > limit) {
    page.objects.resize(limit);
    page.truncated = true;
  }
  return page;
}

// Removes the temp file at `path` if it is older than kStaleTempSeconds
// (best effort: another List may remove it first).
void LocalObjectStore::RemoveIfStale(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;
  if (st.st_mtime + kStaleTempSeconds < ::time(nullptr)) ::unlink(path.c_str());
}

// Appends keys under directory `dir_key` ("" or "a/b/") matching `prefix` and
// sorting after `start_after`, in key order, until `want` are collected.
Status LocalObjectStore::ListDir(const std::string& dir_key, std::string_view prefix,
                                 std::string_view start_after, size_t want, ListPage* page) const {
  const std::string dir_path =
      dir_key.empty() ? root_ : PathOf(dir_key.substr(0, dir_key.size() - 1));
  DIR* d = ::opendir(dir_path.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::OK();
    return ErrnoStatus("opendir", dir_path, errno);
  }
  struct Entry {
    std::string sort_key;  // full key, plus '/' for directories
    bool is_dir;
  };
  std::vector<Entry> entries;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {  // ".", "..", temp files, .loam
      if (std::string_view(e->d_name).starts_with(kTempPrefix)) {
        RemoveIfStale(dir_path + "/" + e->d_name);
      }
      continue;
    }
    std::string key = dir_key + e->d_name;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      if (::stat(PathOf(key).c_str(), &st) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
    }
    if (is_dir) key += '/';
    // Keep entries whose subtree can hold keys under `prefix`.
    const bool overlaps =
        std::string_view(key).starts_with(prefix) || (is_dir && prefix.starts_with(key));
    if (!overlaps) continue;
    // Skip entries whose whole subtree sorts at or before `start_after`.
    if (is_dir) {
      if (start_after >= key && !start_after.starts_with(key)) continue;
    } else if (key <= start_after) {
      continue;
    }
    entries.push_back({std::move(key), is_dir});
  }
  ::closedir(d);
  // Order only as many entries as the page can use (a LIST with limit 1 in
  // a directory of 10,000 versions sorts one), the rest only if needed.
  auto by_key = [](const Entry& a, const Entry& b) { return a.sort_key < b.sort_key; };
  size_t sorted = std::min(entries.size(), want);
  std::partial_sort(entries.begin(), entries.begin() + sorted, entries.end(), by_key);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (page->objects.size() >= want) break;
    if (i == sorted) {
      std::sort(entries.begin() + sorted, entries.end(), by_key);
      sorted = entries.size();
    }
    const Entry& e = entries[i];
    if (e.is_dir) {
      RETURN_NOT_OK(ListDir(e.sort_key, prefix, start_after, want, page));
      continue;
    }
    struct stat st;
    if (::stat(PathOf(e.sort_key).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    page->objects.push_back({e.sort_key, MetaOf(st)});
  }
  return Status::OK();
}

}  // namespace loam
