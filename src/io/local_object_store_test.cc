// Local-backend specifics beyond the conformance suite: on-disk layout,
// durability across reopen, and cleanup of temp files and directories.
#include "io/local_object_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace loam {
namespace {

namespace fs = std::filesystem;

class LocalObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loam-local-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store_ = LocalObjectStore::Open(dir_.string()).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every regular file under the root except the lock stripes.
  std::vector<std::string> FilesOnDisk() const {
    std::vector<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir_)) {
      std::string rel = fs::relative(e.path(), dir_).string();
      if (e.is_regular_file() && rel.rfind(".loam/", 0) != 0) out.push_back(rel);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
  std::shared_ptr<LocalObjectStore> store_;
};

TEST_F(LocalObjectStoreTest, ObjectsAreFilesAtTheirKeysAndSurviveReopen) {
  ObjectMeta meta = store_->Put("a/b/c.json", "{}").value();
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"a/b/c.json"});
  auto reopened = LocalObjectStore::Open(dir_.string()).value();
  EXPECT_EQ(reopened->Get("a/b/c.json").value(), "{}");
  EXPECT_EQ(reopened->Head("a/b/c.json").value().etag, meta.etag);
}

TEST_F(LocalObjectStoreTest, NoTempFilesRemainAfterSuccessOrFailure) {
  ASSERT_TRUE(store_->Put("k/x", "1").ok());
  ASSERT_TRUE(store_->PutIfAbsent("k/y", "1").ok());
  ASSERT_TRUE(store_->PutIfAbsent("k/y", "2").status().IsAlreadyExists());
  ASSERT_TRUE(store_->PutIfMatch("k/x", "2", "stale").status().IsAborted());
  ASSERT_TRUE(store_->PutIfMatch("k/missing", "2", "stale").status().IsNotFound());
  EXPECT_EQ(FilesOnDisk(), (std::vector<std::string>{"k/x", "k/y"}));
}

TEST_F(LocalObjectStoreTest, StrayTempFilesAreInvisible) {
  // A process killed mid-put leaves "<dir>/.tmp-*"; it is never an object.
  fs::create_directories(dir_ / "t");
  std::ofstream(dir_ / "t" / ".tmp-deadbeef") << "partial";
  ASSERT_TRUE(store_->Put("t/real", "x").ok());
  auto listed = store_->ListAll("").value();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "t/real");
}

// A List removes temp files an hour old (their writer died) and leaves
// younger ones (a writer may still be filling them).
TEST_F(LocalObjectStoreTest, ListRemovesTempFilesLeftByDeadWriters) {
  fs::create_directories(dir_ / "t");
  std::ofstream(dir_ / "t" / ".tmp-dead-1") << "partial";
  std::ofstream(dir_ / "t" / ".tmp-live-2") << "partial";
  const auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(dir_ / "t" / ".tmp-dead-1", two_hours_ago);
  ASSERT_TRUE(store_->Put("t/real", "x").ok());
  EXPECT_EQ(store_->ListAll("t/").value().size(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "t" / ".tmp-dead-1"));
  EXPECT_TRUE(fs::exists(dir_ / "t" / ".tmp-live-2"));
  EXPECT_EQ(store_->Get("t/real").value(), "x");
}

TEST_F(LocalObjectStoreTest, DeleteRemovesEmptyDirectories) {
  ASSERT_TRUE(store_->Put("x/y/z/obj", "1").ok());
  ASSERT_TRUE(store_->Put("x/keep", "1").ok());
  ASSERT_TRUE(store_->Delete("x/y/z/obj").ok());
  EXPECT_FALSE(fs::exists(dir_ / "x" / "y"));
  EXPECT_TRUE(fs::exists(dir_ / "x" / "keep"));
  ASSERT_TRUE(store_->Put("x/y/z/obj", "2").ok());  // directories come back on demand
  EXPECT_EQ(store_->Get("x/y/z/obj").value(), "2");
}

// Deletes that empty one directory together: whichever removes the
// directory, every other delete still succeeds (its entry went with it).
TEST_F(LocalObjectStoreTest, ConcurrentDeletesThatEmptyADirectoryAllSucceed) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 20; ++round) {
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(store_->Put("q/r/" + std::to_string(t), "1").ok());
    }
    std::vector<Status> deleted(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { deleted[t] = store_->Delete("q/r/" + std::to_string(t)); });
    }
    for (std::thread& th : threads) th.join();
    for (const Status& s : deleted) ASSERT_TRUE(s.ok()) << "round " << round << ": " << s;
    EXPECT_FALSE(fs::exists(dir_ / "q" / "r"));
  }
}

// A durable write whose object is deleted, and its directory removed (by
// another process's delete that emptied it), before the write syncs that
// directory still succeeds: the write happened, then the delete. (A cleanup
// entry enqueued and processed at once failed its enqueue with "open
// directory: No such file or directory".)
TEST_F(LocalObjectStoreTest, AWriteWhoseDirectoryADeleteRemovesBeforeItsSyncSucceeds) {
  store_->SetBeforeDirectorySyncForTesting([](const std::string& dir) {
    fs::remove_all(dir);
    return Status::OK();
  });
  Status absent = store_->PutIfAbsent("c/d/first", "1").status();
  EXPECT_TRUE(absent.ok()) << absent;
  Status put = store_->Put("c/d/second", "2").status();
  EXPECT_TRUE(put.ok()) << put;
  store_->SetBeforeDirectorySyncForTesting(nullptr);
  EXPECT_FALSE(fs::exists(dir_ / "c" / "d"));
  EXPECT_TRUE(store_->PutIfAbsent("c/d/third", "3").ok());  // made again
  EXPECT_EQ(store_->Get("c/d/third").value(), "3");
}

// Etags stay unforgeable with a clock that does not move (or steps back):
// a replacement, or an object deleted and made again, of the same size,
// very likely on a reused inode, never shows an etag a stale reader holds,
// so that reader's compare-and-swap fails.
TEST_F(LocalObjectStoreTest, AFrozenClockNeverLetsAStaleEtagMatch) {
  ManualClock frozen(1'800'000'000LL * 1'000'000);
  store_->SetClockForTesting(&frozen);
  const std::string e1 = store_->Put("counter", R"({"next":1})").value().etag;
  std::vector<std::string> seen{e1};
  std::string last = e1;
  for (int i = 2; i <= 6; ++i) {  // back and forth between two contents
    const std::string next = R"({"next":)" + std::to_string(i % 2 + 1) + "}";
    last = store_->PutIfMatch("counter", next, last).value().etag;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), last), 0) << "etag " << last << " again";
    seen.push_back(last);
  }
  Status stale = store_->PutIfMatch("counter", R"({"next":9})", e1).status();
  EXPECT_TRUE(stale.IsAborted()) << stale;
  // Deleted and made again with the same bytes.
  ASSERT_TRUE(store_->Delete("counter").ok());
  const std::string again = store_->PutIfAbsent("counter", R"({"next":1})").value().etag;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), again), 0) << "etag " << again << " again";
  for (const std::string& old : seen) {
    EXPECT_TRUE(store_->PutIfMatch("counter", R"({"next":9})", old).status().IsAborted()) << old;
  }
  EXPECT_EQ(store_->Get("counter").value(), R"({"next":1})");
  // An object dated ahead of the clock (written by a process whose clock
  // ran ahead, or set by hand): its replacement is stamped later still.
  fs::last_write_time(dir_ / "counter",
                      fs::last_write_time(dir_ / "counter") + std::chrono::hours(24));
  const ObjectMeta ahead = store_->Head("counter").value();
  const ObjectMeta replaced = store_->PutIfMatch("counter", R"({"next":2})", ahead.etag).value();
  EXPECT_GE(replaced.mtime_micros, ahead.mtime_micros);  // 1 ns later: the same microsecond
  EXPECT_NE(replaced.etag, ahead.etag);
  EXPECT_TRUE(store_->PutIfMatch("counter", "x", ahead.etag).status().IsAborted());
  store_->SetClockForTesting(nullptr);
}

// A directory sync that fails after the link: the write fails, and every
// call after it, so nothing reads back as written what may not be on disk.
// A store opened again (once the disk is checked) works.
TEST_F(LocalObjectStoreTest, AFailedDirectorySyncStopsTheStore) {
  ASSERT_TRUE(store_->Put("v/1", "one").ok());
  store_->SetBeforeDirectorySyncForTesting([](const std::string&) {
    return Status::Internal("injected: fsync directory: Input/output error");
  });
  EXPECT_FALSE(store_->PutIfAbsent("v/2", "two").ok());
  store_->SetBeforeDirectorySyncForTesting(nullptr);
  EXPECT_TRUE(fs::exists(dir_ / "v" / "2"));  // linked, perhaps only in the page cache
  Result<std::string> back = store_->Get("v/2");
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(back.status().IsUnavailable()) << back.status();  // an unknown outcome
  EXPECT_NE(back.status().message().find("stopped after a directory sync failed"),
            std::string::npos)
      << back.status();
  EXPECT_NE(back.status().message().find("Input/output error"), std::string::npos);
  EXPECT_FALSE(store_->Get("v/1").ok());
  EXPECT_FALSE(store_->Head("v/1").ok());
  EXPECT_FALSE(store_->Put("v/3", "three").ok());
  EXPECT_FALSE(store_->ListAll("v/").ok());
  EXPECT_FALSE(store_->Delete("v/1").ok());
  EXPECT_FALSE(fs::exists(dir_ / "v" / "3"));
  auto reopened = LocalObjectStore::Open(dir_.string()).value();
  EXPECT_EQ(reopened->Get("v/1").value(), "one");
}

// The store remembers which directories it made durable; one removed behind
// its back (another process's delete, or by hand) is made again, for both
// kinds of put.
TEST_F(LocalObjectStoreTest, DirectoriesRemovedBehindTheStoreAreMadeAgain) {
  ASSERT_TRUE(store_->PutIfAbsent("d/e/first", "1").ok());
  ASSERT_TRUE(store_->Put("d/e/second", "1").ok());
  fs::remove_all(dir_ / "d");
  ASSERT_TRUE(store_->PutIfAbsent("d/e/third", "3").ok());
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"d/e/third"});
  fs::remove_all(dir_ / "d");
  ASSERT_TRUE(store_->Put("d/e/fourth", "4").ok());
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"d/e/fourth"});
  EXPECT_EQ(store_->Get("d/e/fourth").value(), "4");
}

TEST_F(LocalObjectStoreTest, KeyUsedAsDirectoryOfAnotherKeyIsAClearError) {
  ASSERT_TRUE(store_->Put("a", "file").ok());
  Status s = store_->Put("a/b", "x").status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("'a' as a directory"), std::string::npos) << s;
  EXPECT_EQ(store_->Get("a").value(), "file");
}

TEST_F(LocalObjectStoreTest, OpenRejectsAFile) {
  std::ofstream(dir_.string() + "-file") << "x";
  Status s = LocalObjectStore::Open(dir_.string() + "-file").status();
  EXPECT_TRUE(s.IsInvalidArgument() || s.IsNotFound()) << s;
  fs::remove(dir_.string() + "-file");
}

TEST_F(LocalObjectStoreTest, RelativeRootIsMadeAbsolute) {
  fs::path old = fs::current_path();
  fs::current_path(dir_);
  auto rel = LocalObjectStore::Open("sub/root").value();
  fs::current_path(old);
  EXPECT_EQ(rel->root(), (dir_ / "sub" / "root").string());
}

}  // namespace
}  // namespace loam
