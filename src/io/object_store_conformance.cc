// The conformance suite. See object_store_conformance.h.
#include "io/object_store_conformance.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "common/hash.h"
#include "common/subprocess_test_util.h"

namespace loam::testing {
namespace {

// Deterministic pseudo-random bytes, produced on demand (never materialised).
class PatternSource final : public ByteSource {
 public:
  PatternSource(uint64_t size, uint64_t seed) : remaining_(size), state_(seed | 1) {}
  Result<size_t> Read(char* dst, size_t n) override {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, remaining_));
    for (size_t i = 0; i < k; ++i) {
      state_ ^= state_ << 13;
      state_ ^= state_ >> 7;
      state_ ^= state_ << 17;
      dst[i] = static_cast<char>(state_);
    }
    remaining_ -= k;
    hasher_.Update(std::string_view(dst, k));
    return k;
  }
  uint64_t digest() const { return hasher_.Digest(); }

 private:
  uint64_t remaining_;
  uint64_t state_;
  Hasher64 hasher_;
};

class HashingSink final : public ByteSink {
 public:
  Status Append(std::string_view data) override {
    hasher_.Update(data);
    bytes_ += data.size();
    return Status::OK();
  }
  uint64_t digest() const { return hasher_.Digest(); }
  uint64_t bytes() const { return bytes_; }

 private:
  Hasher64 hasher_;
  uint64_t bytes_ = 0;
};

// Fails after handing out `good` bytes.
class FailingSource final : public ByteSource {
 public:
  explicit FailingSource(size_t good) : good_(good) {}
  Result<size_t> Read(char* dst, size_t n) override {
    if (good_ == 0) return Status::Unavailable("source broke");
    size_t k = std::min(n, good_);
    std::memset(dst, 'x', k);
    good_ -= k;
    return k;
  }

 private:
  size_t good_;
};

// Peak resident set size tracking for this process (Linux).
int64_t ReadStatusKib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
  }
  return -1;
}
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::vector<std::string> Keys(const std::vector<ObjectInfo>& objects) {
  std::vector<std::string> keys;
  for (const auto& o : objects) keys.push_back(o.key);
  return keys;
}

TEST_P(ObjectStoreConformance, PutGetHeadRoundTrip) {
  auto put = store().Put("dir/obj", "hello");
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->size, 5u);
  EXPECT_FALSE(put->etag.empty());
  EXPECT_EQ(store().Get("dir/obj").value(), "hello");
  ObjectMeta head = store().Head("dir/obj").value();
  EXPECT_EQ(head.size, 5u);
  EXPECT_EQ(head.etag, put->etag);
  ObjectMeta via_get;
  EXPECT_EQ(store().Get("dir/obj", &via_get).value(), "hello");
  EXPECT_EQ(via_get.etag, put->etag);
  EXPECT_EQ(via_get.size, 5u);
}

TEST_P(ObjectStoreConformance, OverwriteReplacesContentAndEtag) {
  ObjectMeta a = store().Put("k", "aaaa").value();
  ObjectMeta b = store().Put("k", "bbbb").value();  // same size, new content
  EXPECT_NE(a.etag, b.etag);
  EXPECT_EQ(store().Get("k").value(), "bbbb");
  EXPECT_EQ(store().Head("k").value().etag, b.etag);
  ObjectMeta c = store().Put("k", "longer content").value();
  EXPECT_NE(c.etag, b.etag);
  EXPECT_EQ(store().Get("k").value(), "longer content");
}

TEST_P(ObjectStoreConformance, MissingObjectIsNotFound) {
  EXPECT_TRUE(store().Get("nope").status().IsNotFound());
  EXPECT_TRUE(store().Head("no/such/key").status().IsNotFound());
  EXPECT_TRUE(store().GetRange("nope", 0, 1).status().IsNotFound());
}

TEST_P(ObjectStoreConformance, EmptyObject) {
  ASSERT_TRUE(store().Put("empty", "").ok());
  EXPECT_EQ(store().Get("empty").value(), "");
  EXPECT_EQ(store().Head("empty").value().size, 0u);
  EXPECT_EQ(store().GetRange("empty", 0, 10).value(), "");
  EXPECT_TRUE(store().GetRange("empty", 1, 1).status().IsInvalidArgument());
  EXPECT_EQ(Keys(store().ListAll("").value()), std::vector<std::string>{"empty"});
}

TEST_P(ObjectStoreConformance, BinaryContentWithEveryByteValue) {
  std::string data;
  for (int rep = 0; rep < 3; ++rep) {
    for (int b = 0; b < 256; ++b) data.push_back(static_cast<char>(b));
  }
  ASSERT_TRUE(store().Put("bin", data).ok());
  EXPECT_EQ(store().Get("bin").value(), data);
}

TEST_P(ObjectStoreConformance, RangeReadsIncludingPastTheEnd) {
  ASSERT_TRUE(store().Put("r", "0123456789").ok());
  EXPECT_EQ(store().GetRange("r", 0, 3).value(), "012");
  EXPECT_EQ(store().GetRange("r", 4, 2).value(), "45");
  EXPECT_EQ(store().GetRange("r", 7, 100).value(), "789");  // clamped at the end
  EXPECT_EQ(store().GetRange("r", 3, 0).value(), "");
  EXPECT_EQ(store().GetRange("r", 10, 5).value(), "");  // starts exactly at the end
  Result<std::string> beyond = store().GetRange("r", 11, 1);
  EXPECT_TRUE(beyond.status().IsInvalidArgument()) << beyond.status();
  EXPECT_NE(beyond.status().message().find("beyond the end"), std::string::npos);
}

TEST_P(ObjectStoreConformance, ListIsSortedBytewiseAndPaginates) {
  std::vector<std::string> keys = {"list/c",      "list/a",   "list/b/y/z", "list/a.b",
                                   "list/ba",     "list/b/x", "list/a0",    "list/B",
                                   "list/b-dash", "other/q",  "lis",        "list/b/y0"};
  for (const auto& k : keys) ASSERT_TRUE(store().Put(k, k).ok()) << k;
  std::vector<std::string> expected;
  for (const auto& k : keys) {
    if (k.rfind("list/", 0) == 0) expected.push_back(k);
  }
  std::sort(expected.begin(), expected.end());

  ListPage all = store().List("list/", "", 0).value();
  EXPECT_EQ(Keys(all.objects), expected);
  EXPECT_FALSE(all.truncated);
  for (const auto& o : all.objects) EXPECT_EQ(o.meta.size, o.key.size());

  // Pages of 3 visit every key exactly once, in order.
  std::vector<std::string> paged;
  std::string after;
  int pages = 0;
  while (true) {
    ListPage page = store().List("list/", after, 3).value();
    ++pages;
    ASSERT_LE(page.objects.size(), 3u);
    for (const auto& o : page.objects) paged.push_back(o.key);
    if (!page.truncated) break;
    ASSERT_FALSE(page.objects.empty());
    after = page.objects.back().key;
  }
  EXPECT_EQ(paged, expected);
  EXPECT_EQ(pages, static_cast<int>((expected.size() + 2) / 3));

  // A prefix that ends mid-segment matches across directories and files.
  EXPECT_EQ(
      Keys(store().List("list/b", "", 0).value().objects),
      (std::vector<std::string>{"list/b-dash", "list/b/x", "list/b/y/z", "list/b/y0", "list/ba"}));
  // start_after inside a nested directory resumes correctly.
  EXPECT_EQ(Keys(store().List("list/", "list/b/x", 0).value().objects),
            (std::vector<std::string>{"list/b/y/z", "list/b/y0", "list/ba", "list/c"}));
  // start_after before the prefix is the same as none.
  EXPECT_EQ(Keys(store().List("list/", "a", 0).value().objects), expected);
  // limit 1 finds the first key.
  ListPage first = store().List("list/", "", 1).value();
  EXPECT_EQ(Keys(first.objects), std::vector<std::string>{expected.front()});
  EXPECT_TRUE(first.truncated);
  // No match.
  ListPage none = store().List("nothing/", "", 0).value();
  EXPECT_TRUE(none.objects.empty());
  EXPECT_FALSE(none.truncated);
  // The empty prefix lists everything.
  EXPECT_EQ(store().ListAll("").value().size(), keys.size());
}

TEST_P(ObjectStoreConformance, ListAllFollowsPaginationPastDefaultLimit) {
  for (int i = 0; i < 1100; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "many/%05d", i);
    ASSERT_TRUE(store().Put(key, "").ok());
  }
  ListPage first = store().List("many/", "", 0).value();
  EXPECT_EQ(first.objects.size(), 1000u);
  EXPECT_TRUE(first.truncated);
  auto all = store().ListAll("many/").value();
  ASSERT_EQ(all.size(), 1100u);
  EXPECT_EQ(all.front().key, "many/00000");
  EXPECT_EQ(all.back().key, "many/01099");
}

TEST_P(ObjectStoreConformance, UnicodeKeys) {
  const std::vector<std::string> keys = {"uni/héllo/世界.json", "uni/emoji/🙂", "uni/ascii",
                                         "uni/Ωmega", "uni/a b+c%41&d=e?f"};
  for (const auto& k : keys) ASSERT_TRUE(store().Put(k, "v:" + k).ok()) << k;
  for (const auto& k : keys) EXPECT_EQ(store().Get(k).value(), "v:" + k);
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(Keys(store().ListAll("uni/").value()), sorted);
  EXPECT_EQ(Keys(store().ListAll("uni/héllo/").value()),
            std::vector<std::string>{"uni/héllo/世界.json"});
}

TEST_P(ObjectStoreConformance, InvalidKeysAreRejectedByEveryOperation) {
  const std::vector<std::string> bad = {"",
                                        "/abs",
                                        "a//b",
                                        "trailing/",
                                        "../up",
                                        "a/./b",
                                        "a/../b",
                                        ".hidden",
                                        "a/.tmp-x",
                                        "ctl\x01key",
                                        "tab\tkey",
                                        "bad\xff",
                                        "bad\xc0\xaf",
                                        std::string(1025, 'k'),
                                        "a/" + std::string(256, 's')};
  for (const auto& k : bad) {
    SCOPED_TRACE("key: " + k.substr(0, 40));
    EXPECT_TRUE(store().Get(k).status().IsInvalidArgument());
    EXPECT_TRUE(store().GetRange(k, 0, 1).status().IsInvalidArgument());
    EXPECT_TRUE(store().Head(k).status().IsInvalidArgument());
    EXPECT_TRUE(store().Put(k, "x").status().IsInvalidArgument());
    EXPECT_TRUE(store().PutIfAbsent(k, "x").status().IsInvalidArgument());
    EXPECT_TRUE(store().PutIfMatch(k, "x", "etag").status().IsInvalidArgument());
    EXPECT_TRUE(store().Delete(k).IsInvalidArgument());
  }
  EXPECT_TRUE(store().List("/abs", "", 0).status().IsInvalidArgument());
  EXPECT_TRUE(store().List("a//", "", 0).status().IsInvalidArgument());
  EXPECT_TRUE(store().List("../", "", 0).status().IsInvalidArgument());
  // Nothing was written by any of the attempts.
  EXPECT_TRUE(store().ListAll("").value().empty());
  Status s = store().Put("a//b", "x").status();
  EXPECT_NE(s.message().find("a//b"), std::string::npos) << s;
}

TEST_P(ObjectStoreConformance, DeleteIsIdempotent) {
  EXPECT_TRUE(store().Delete("never/existed").ok());
  ASSERT_TRUE(store().Put("d/x", "1").ok());
  ASSERT_TRUE(store().Put("d/y", "2").ok());
  EXPECT_TRUE(store().Delete("d/x").ok());
  EXPECT_TRUE(store().Delete("d/x").ok());
  EXPECT_TRUE(store().Get("d/x").status().IsNotFound());
  EXPECT_EQ(Keys(store().ListAll("d/").value()), std::vector<std::string>{"d/y"});
  EXPECT_TRUE(store().Delete("d/y").ok());
  EXPECT_TRUE(store().ListAll("").value().empty());
  // The key can be written again after deletion, even put-if-absent.
  EXPECT_TRUE(store().PutIfAbsent("d/x", "again").ok());
  EXPECT_EQ(store().Get("d/x").value(), "again");
}

TEST_P(ObjectStoreConformance, PutIfAbsent) {
  auto first = store().PutIfAbsent("once", "first");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = store().PutIfAbsent("once", "second");
  EXPECT_TRUE(second.status().IsAlreadyExists()) << second.status();
  EXPECT_EQ(store().Get("once").value(), "first");
  EXPECT_EQ(store().Head("once").value().etag, first->etag);
}

TEST_P(ObjectStoreConformance, NonDurablePutsAreVisibleAndConditional) {
  StringSource a("hint");
  PutOptions relaxed{PutCondition::kIfAbsent, {}, /*durable=*/false};
  ASSERT_TRUE(store().Write("hint", a, relaxed).ok());
  EXPECT_EQ(store().Get("hint").value(), "hint");
  StringSource b("again");
  EXPECT_TRUE(store().Write("hint", b, relaxed).status().IsAlreadyExists());
  EXPECT_TRUE(store().DeleteRelaxed("hint").ok());
  EXPECT_TRUE(store().Get("hint").status().IsNotFound());
  EXPECT_TRUE(store().DeleteRelaxed("hint").ok());  // idempotent, like Delete
  EXPECT_TRUE(store().List("hint", "", 10).value().objects.empty());
}

TEST_P(ObjectStoreConformance, PutIfMatch) {
  EXPECT_TRUE(store().PutIfMatch("cas", "x", "whatever").status().IsNotFound());
  ObjectMeta v1 = store().Put("cas", "v1").value();
  auto wrong = store().PutIfMatch("cas", "v2", v1.etag + "0");
  EXPECT_TRUE(wrong.status().IsAborted()) << wrong.status();
  EXPECT_EQ(store().Get("cas").value(), "v1");
  auto v2 = store().PutIfMatch("cas", "v2", v1.etag);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_NE(v2->etag, v1.etag);
  EXPECT_EQ(store().Get("cas").value(), "v2");
  // The old etag is stale now.
  EXPECT_TRUE(store().PutIfMatch("cas", "v3", v1.etag).status().IsAborted());
  EXPECT_EQ(store().Get("cas").value(), "v2");
  EXPECT_TRUE(store().PutIfMatch("cas", "v3", v2->etag).ok());
  EXPECT_EQ(store().Get("cas").value(), "v3");
}

TEST_P(ObjectStoreConformance, FailedSourceLeavesNoObject) {
  FailingSource source(3 << 20);
  auto r = store().Write("partial/obj", source, PutOptions{});
  EXPECT_TRUE(r.status().IsUnavailable()) << r.status();
  EXPECT_TRUE(store().Get("partial/obj").status().IsNotFound());
  EXPECT_TRUE(store().ListAll("").value().empty());
  FailingSource again(10);
  EXPECT_FALSE(store().Write("partial/obj", again, {PutCondition::kIfAbsent, {}}).ok());
  EXPECT_TRUE(store().PutIfAbsent("partial/obj", "whole").ok());
}

TEST_P(ObjectStoreConformance, StreamedPutAndGetOf64MiBUseBoundedMemory) {
  constexpr uint64_t kSize = 64ull << 20;
  ResetPeakRss();
  const int64_t baseline_kib = ReadStatusKib("VmRSS:");
  PatternSource source(kSize, 12345);
  auto put = store().Write("big/object", source, PutOptions{});
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->size, kSize);
  EXPECT_EQ(store().Head("big/object").value().size, kSize);
  HashingSink sink;
  auto got = store().Read("big/object", std::nullopt, sink);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(sink.bytes(), kSize);
  EXPECT_EQ(sink.digest(), source.digest());
  HashingSink tail;
  ASSERT_TRUE(store().Read("big/object", ByteRange{kSize - 100, 1000}, tail).ok());
  EXPECT_EQ(tail.bytes(), 100u);

  const int64_t peak_growth_mib = (ReadStatusKib("VmHWM:") - baseline_kib) / 1024;
  // The object itself lives in memory for in-process backends; streaming
  // must not add more than a small buffer on top either way.
  int64_t allowed_mib = backend_->holds_objects_in_process() ? 3 * 64 + 16 : 16;
#ifdef LOAM_SANITIZER_BUILD
  allowed_mib *= 4;  // shadow memory of the touched object bytes
#endif
  EXPECT_LE(peak_growth_mib, allowed_mib) << "peak RSS grew by " << peak_growth_mib << " MiB";
  std::printf("[ figures ] %s: 64 MiB streamed put+get, peak RSS growth %lld MiB\n",
              GetParam().name.c_str(), static_cast<long long>(peak_growth_mib));
}

TEST_P(ObjectStoreConformance, ReadersNeverSeePartialObjects) {
  constexpr size_t kSize = 1 << 20;
  ASSERT_TRUE(store().Put("atomic/obj", std::string(kSize, 'a')).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto got = store().Get("atomic/obj");
        if (!got.ok() || got->size() != kSize ||
            std::count(got->begin(), got->end(), (*got)[0]) != static_cast<long>(kSize)) {
          bad.fetch_add(1);
        }
        reads.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(
        store().Put("atomic/obj", std::string(kSize, static_cast<char>('b' + i % 20))).ok());
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
}

TEST_P(ObjectStoreConformance, ThreadsRacingPutIfAbsentHaveOneWinnerPerRound) {
  constexpr int kThreads = 16, kRounds = 40;
  std::vector<std::vector<int>> wins(kRounds);
  std::mutex mu;
  std::atomic<int> unexpected{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        sync.arrive_and_wait();  // line the racers up for this round
        auto res = store().PutIfAbsent("race/" + std::to_string(r), "winner-" + std::to_string(t));
        if (res.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          wins[r].push_back(t);
        } else if (!res.status().IsAlreadyExists()) {
          unexpected.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(unexpected.load(), 0);
  for (int r = 0; r < kRounds; ++r) {
    ASSERT_EQ(wins[r].size(), 1u) << "round " << r;
    EXPECT_EQ(store().Get("race/" + std::to_string(r)).value(),
              "winner-" + std::to_string(wins[r][0]));
  }
}

// Increments the decimal counter at `key` with get + put-if-match, retrying
// lost races. Any error other than a lost race is returned.
Status CasIncrement(ObjectStore& store, const std::string& key, int* retries) {
  while (true) {
    ObjectMeta meta;
    auto cur = store.Get(key, &meta);
    if (!cur.ok()) return cur.status();
    auto put = store.PutIfMatch(key, std::to_string(std::stoll(*cur) + 1), meta.etag);
    if (put.ok()) return Status::OK();
    if (!put.status().IsAborted()) return put.status();
    ++*retries;
  }
}

TEST_P(ObjectStoreConformance, CasIncrementsFromSixteenThreadsLoseNoUpdate) {
  // Sanitized runs make fewer increments per thread (LOAM_CAS_INCREMENTS).
  const char* increments_env = std::getenv("LOAM_CAS_INCREMENTS");
  constexpr int kThreads = 16;
  const int kIncrements = increments_env ? std::max(1, std::atoi(increments_env)) : 25;
  ASSERT_TRUE(store().Put("counter", "0").ok());
  std::atomic<int> failures{0}, retries{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      int my_retries = 0;
      for (int i = 0; i < kIncrements; ++i) {
        Status s = CasIncrement(store(), "counter", &my_retries);
        if (!s.ok()) {
          ADD_FAILURE() << s;
          failures.fetch_add(1);
        }
      }
      retries.fetch_add(my_retries);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store().Get("counter").value(), std::to_string(kThreads * kIncrements));
  std::printf("[ figures ] %s: %d CAS increments, %d lost races retried\n", GetParam().name.c_str(),
              kThreads * kIncrements, retries.load());
}

TEST_P(ObjectStoreCrossProcessConformance, ProcessesRacingPutIfAbsentHaveOneWinnerPerRound) {
  ASSERT_TRUE(backend_->shared_across_processes());
  constexpr int kProcesses = 8, kRounds = 100;
  std::vector<int> codes;
  auto results = RunInProcesses(
      kProcesses,
      [&](int p, int out) {
        auto client = backend_->OpenAnotherClient();
        for (int r = 0; r < kRounds; ++r) {
          auto res =
              client->PutIfAbsent("prace/" + std::to_string(r), "winner-" + std::to_string(p));
          if (res.ok()) {
            WriteLine(out, "win " + std::to_string(r));
          } else if (!res.status().IsAlreadyExists()) {
            WriteLine(out, "error " + res.status().ToString());
          }
        }
      },
      &codes);
  EXPECT_EQ(codes, std::vector<int>(kProcesses, 0));
  std::map<int, std::vector<int>> wins;
  for (int p = 0; p < kProcesses; ++p) {
    std::istringstream in(results[p]);
    std::string word, arg;
    while (in >> word >> arg) {
      ASSERT_EQ(word, "win") << results[p];
      wins[std::stoi(arg)].push_back(p);
    }
  }
  for (int r = 0; r < kRounds; ++r) {
    ASSERT_EQ(wins[r].size(), 1u) << "round " << r;
    EXPECT_EQ(store().Get("prace/" + std::to_string(r)).value(),
              "winner-" + std::to_string(wins[r][0]));
  }
}

TEST_P(ObjectStoreCrossProcessConformance, CasIncrementsFromEightProcessesLoseNoUpdate) {
  ASSERT_TRUE(backend_->shared_across_processes());
  constexpr int kProcesses = 8, kIncrements = 25;
  ASSERT_TRUE(store().Put("pcounter", "0").ok());
  std::vector<int> codes;
  auto results = RunInProcesses(
      kProcesses,
      [&](int, int out) {
        auto client = backend_->OpenAnotherClient();
        int retries = 0;
        for (int i = 0; i < kIncrements; ++i) {
          Status s = CasIncrement(*client, "pcounter", &retries);
          if (!s.ok()) WriteLine(out, s.ToString());
        }
      },
      &codes);
  EXPECT_EQ(codes, std::vector<int>(kProcesses, 0));
  for (const auto& r : results) EXPECT_EQ(r, "");
  EXPECT_EQ(store().Get("pcounter").value(), std::to_string(kProcesses * kIncrements));
}

}  // namespace
}  // namespace loam::testing
