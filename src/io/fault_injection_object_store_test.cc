#include "io/fault_injection_object_store.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "io/memory_object_store.h"

namespace loam {
namespace {

class FaultInjectionTest : public ::testing::Test {
 protected:
  std::shared_ptr<MemoryObjectStore> base_ = std::make_shared<MemoryObjectStore>();
  FaultInjectionObjectStore store_{base_, /*seed=*/1};
};

TEST_F(FaultInjectionTest, FailsExactlyTheNthMatchingCall) {
  store_.AddRule(FaultRule::FailNth("third-put", MaskOf({ObjectOp::kPut}), 3,
                                    Status::Unavailable("disk on fire"), "data/"));
  EXPECT_TRUE(store_.Put("data/1", "a").ok());
  EXPECT_TRUE(store_.Put("other/1", "a").ok());         // key does not match
  EXPECT_TRUE(store_.PutIfAbsent("data/x", "a").ok());  // op does not match
  EXPECT_TRUE(store_.Put("data/2", "a").ok());
  Status s = store_.Put("data/3", "a").status();
  EXPECT_TRUE(s.IsUnavailable());
  EXPECT_EQ(s.message(), "disk on fire");
  EXPECT_NE(s.context().find("third-put"), std::string::npos);
  EXPECT_TRUE(base_->Get("data/3").status().IsNotFound());  // the failed call did nothing
  EXPECT_TRUE(store_.Put("data/4", "a").ok());              // spent after one firing
  EXPECT_EQ(store_.Fired("third-put"), 1u);
  EXPECT_EQ(store_.Matched("third-put"), 4u);
}

TEST_F(FaultInjectionTest, CrashBeforeDropsTheCallAndEveryLaterWrite) {
  ASSERT_TRUE(store_.Put("k", "v0").ok());
  store_.AddRule(FaultRule::CrashAt("die", WriteOpMask(), 2, FaultAction::kCrashBefore));
  EXPECT_TRUE(store_.Put("a", "1").ok());
  EXPECT_TRUE(store_.Put("b", "2").status().IsUnavailable());
  EXPECT_TRUE(store_.crashed());
  EXPECT_TRUE(store_.Put("c", "3").status().IsUnavailable());
  EXPECT_TRUE(store_.Delete("k").IsUnavailable());
  EXPECT_TRUE(store_.PutIfAbsent("d", "4").status().IsUnavailable());
  EXPECT_EQ(store_.Get("k").value(), "v0");  // reads still work
  auto left = base_->ListAll("").value();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].key, "a");
  EXPECT_EQ(left[1].key, "k");
}

TEST_F(FaultInjectionTest, CrashAfterAppliesTheCallButReportsFailure) {
  store_.AddRule(FaultRule::CrashAt("die-after", WriteOpMask(), 1, FaultAction::kCrashAfter));
  EXPECT_TRUE(store_.PutIfAbsent("commit", "x").status().IsUnavailable());
  EXPECT_EQ(base_->Get("commit").value(), "x");  // it landed; the caller cannot know
  EXPECT_TRUE(store_.Put("later", "y").status().IsUnavailable());
  EXPECT_TRUE(base_->Get("later").status().IsNotFound());
}

TEST_F(FaultInjectionTest, LoseReplyAppliesTheCallRunsAfterThenReportsFailureAndLivesOn) {
  std::string seen_by_after;
  store_.AddRule(FaultRule::LoseReplyAt(
      "lost", MaskOf({ObjectOp::kPutIfAbsent}), 1, Status::Unavailable("reply lost"),
      [&] { seen_by_after = base_->Get("commit").value_or("absent"); }));
  Status s = store_.PutIfAbsent("commit", "x").status();
  EXPECT_TRUE(s.IsUnavailable());
  EXPECT_EQ(s.message(), "reply lost");
  EXPECT_EQ(seen_by_after, "x");  // `after` ran once the call had landed
  EXPECT_EQ(base_->Get("commit").value(), "x");
  EXPECT_FALSE(store_.crashed());
  EXPECT_TRUE(store_.Put("later", "y").ok());
  EXPECT_EQ(store_.Fired("lost"), 1u);
}

TEST_F(FaultInjectionTest, ProbabilisticFaultsReplayWithTheSameSeed) {
  auto pattern = [](uint64_t seed) {
    auto base = std::make_shared<MemoryObjectStore>();
    FaultInjectionObjectStore store(base, seed);
    FaultRule flaky;
    flaky.name = "flaky";
    flaky.ops = MaskOf({ObjectOp::kGet});
    flaky.times = FaultRule::kForever;
    flaky.probability = 0.3;
    store.AddRule(flaky);
    EXPECT_TRUE(store.Put("k", "v").ok());
    std::string bits;
    for (int i = 0; i < 200; ++i) bits += store.Get("k").ok() ? '1' : '0';
    return bits;
  };
  std::string a = pattern(42);
  EXPECT_EQ(a, pattern(42));
  EXPECT_NE(a, pattern(43));
  const auto failures = std::count(a.begin(), a.end(), '0');
  EXPECT_GT(failures, 20);  // about 60 expected
  EXPECT_LT(failures, 110);
}

TEST_F(FaultInjectionTest, LatencyIsAddedToMatchingOperations) {
  store_.SetLatency(MaskOf({ObjectOp::kHead}), std::chrono::microseconds(20000),
                    std::chrono::microseconds(0));
  ASSERT_TRUE(store_.Put("k", "v").ok());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(store_.Head("k").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

TEST_F(FaultInjectionTest, HookRunsBeforeTheNthMatchingCallWhichThenProceeds) {
  std::vector<std::string> seen;
  store_.AddRule(FaultRule::HookAt("interleave", MaskOf({ObjectOp::kPutIfAbsent}), 2, [&] {
    seen.push_back(base_->Get("a").value());  // the first put already landed
    ASSERT_TRUE(base_->Put("other", "x").ok());
  }));
  ASSERT_TRUE(store_.PutIfAbsent("a", "1").ok());
  EXPECT_TRUE(seen.empty());
  ASSERT_TRUE(store_.PutIfAbsent("b", "2").ok());
  EXPECT_EQ(seen, std::vector<std::string>{"1"});
  EXPECT_EQ(base_->Get("b").value(), "2");
  EXPECT_EQ(base_->Get("other").value(), "x");
  ASSERT_TRUE(store_.PutIfAbsent("c", "3").ok());
  EXPECT_EQ(seen.size(), 1u);
}

// A power loss undoes only unsynced writes that no durable write of the key
// followed, each key in one of the ways a machine may lose it; over many
// seeds every way happens, and nothing durable is ever touched.
TEST(PowerLossTest, UnsyncedWritesVanishComeBackOrAreCutAndDurableOnesStay) {
  const auto unsynced = [](ObjectStore& store, std::string_view key, std::string_view data) {
    PutOptions relaxed;
    relaxed.durable = false;
    StringSource source(data);
    return store.Write(key, source, relaxed).status();
  };
  std::map<std::string, std::set<std::string>> seen;  // key -> outcomes
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    auto base = std::make_shared<MemoryObjectStore>();
    FaultInjectionObjectStore store(base, seed);
    ASSERT_TRUE(store.Put("durable", "d1").ok());
    ASSERT_TRUE(store.Put("over", "old").ok());
    ASSERT_TRUE(store.Put("gone", "was here").ok());
    store.TrackUnsyncedWrites();
    ASSERT_TRUE(unsynced(store, "new", "brand new").ok());
    ASSERT_TRUE(unsynced(store, "over", "first").ok());
    ASSERT_TRUE(unsynced(store, "over", "second!").ok());
    ASSERT_TRUE(store.DeleteRelaxed("gone").ok());
    ASSERT_TRUE(unsynced(store, "durable", "unsynced").ok());
    ASSERT_TRUE(store.Put("durable", "d2").ok());  // the durable write covers the key
    ASSERT_TRUE(store.PutIfAbsent("acked", "a").ok());
    const int lost = store.LosePower().value();
    EXPECT_TRUE(store.crashed());
    EXPECT_TRUE(store.Put("after", "x").status().IsUnavailable());
    EXPECT_EQ(base->Get("durable").value(), "d2");
    EXPECT_EQ(base->Get("acked").value(), "a");
    const auto outcome = [&](const std::string& key) {
      Result<std::string> v = base->Get(key);
      return v.ok() ? "=" + *v : std::string("absent");
    };
    const std::string n = outcome("new"), o = outcome("over"), g = outcome("gone");
    EXPECT_TRUE(n == "absent" ||
                (n.size() > 1 && std::string("brand new").rfind(n.substr(1), 0) == 0) || n == "=")
        << n;
    EXPECT_TRUE(o == "=old" || (o.size() >= 1 && std::string("second!").rfind(o.substr(1), 0) == 0))
        << o;
    EXPECT_TRUE(g == "absent" || g == "=was here") << g;
    EXPECT_EQ(lost, (n != "=brand new") + (o != "=second!") + (g != "absent"));
    seen["new"].insert(n == "absent" || n == "=" || n == "=brand new" ? n : "cut");
    seen["over"].insert(o == "=old" || o == "=" || o == "=second!" ? o : "cut");
    seen["gone"].insert(g);
  }
  EXPECT_EQ(seen["new"], (std::set<std::string>{"absent", "=", "=brand new", "cut"}));
  EXPECT_EQ(seen["over"], (std::set<std::string>{"=old", "=", "=second!", "cut"}));
  EXPECT_EQ(seen["gone"], (std::set<std::string>{"absent", "=was here"}));
}

// An earlier process's unsynced writes are lost with a later process's
// power loss once handed over (the page cache is the machine's), counted
// apart; a durable write by the later process covers its key; a list that
// is not SaveUnsynced()'s is refused.
TEST(PowerLossTest, UnsyncedWritesOfAnEarlierProcessAreLostWithALaterOne) {
  PutOptions relaxed;
  relaxed.durable = false;
  std::set<std::string> gone_outcomes;
  int earlier_changed = 0;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    auto base = std::make_shared<MemoryObjectStore>();
    ASSERT_TRUE(base->Put("gone", "was here").ok());
    std::string saved;
    {
      FaultInjectionObjectStore first(base, seed);
      first.TrackUnsyncedWrites();
      ASSERT_TRUE(first.DeleteRelaxed("gone").ok());
      StringSource hint("7");
      ASSERT_TRUE(first.Write("covered", hint, relaxed).ok());
      saved = first.SaveUnsynced();
    }
    FaultInjectionObjectStore later(base, seed);
    ASSERT_TRUE(later.AdoptUnsynced(saved).ok());
    ASSERT_TRUE(later.Put("covered", "durable now").ok());
    StringSource mine("mine");
    ASSERT_TRUE(later.Write("own", mine, relaxed).ok());
    int from_earlier = -1;
    const int lost = later.LosePower(&from_earlier).value();
    EXPECT_EQ(base->Get("covered").value(), "durable now");
    const bool came_back = base->Get("gone").ok();
    if (came_back) {
      EXPECT_EQ(base->Get("gone").value(), "was here");
    }
    const bool own_kept = base->Get("own").ok() && base->Get("own").value() == "mine";
    EXPECT_EQ(from_earlier, came_back ? 1 : 0);
    EXPECT_EQ(lost, from_earlier + (own_kept ? 0 : 1));
    gone_outcomes.insert(came_back ? "back" : "deleted");
    earlier_changed += from_earlier;
  }
  EXPECT_EQ(gone_outcomes, (std::set<std::string>{"back", "deleted"}));
  EXPECT_GT(earlier_changed, 0);

  FaultInjectionObjectStore store(std::make_shared<MemoryObjectStore>());
  Status bad = store.AdoptUnsynced("not a list");
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
  std::string cut =
      FaultInjectionObjectStore(std::make_shared<MemoryObjectStore>()).SaveUnsynced() +
      std::string({'\x05', '\0', '\0', '\0', 'a', 'b'});  // a key of 5 bytes, 2 there
  bad = store.AdoptUnsynced(cut);
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
  EXPECT_NE(bad.message().find("truncated"), std::string::npos) << bad.ToString();
}

TEST_F(FaultInjectionTest, ClearRulesRestoresNormalService) {
  FaultRule always;
  always.name = "always";
  always.times = FaultRule::kForever;
  store_.AddRule(always);
  EXPECT_FALSE(store_.Put("k", "v").ok());
  store_.ClearRules();
  EXPECT_TRUE(store_.Put("k", "v").ok());
}

}  // namespace
}  // namespace loam
