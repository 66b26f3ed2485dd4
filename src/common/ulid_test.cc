#include "common/ulid.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

namespace loam {
namespace {

TEST(UlidTest, TextRoundTripAndTimestamp) {
  ManualClock clock(1'700'000'000'123'000);  // micros
  UlidGenerator gen(&clock, /*seed=*/42);
  Ulid u = gen.Next().value();
  EXPECT_EQ(u.millis(), 1'700'000'000'123u);
  std::string text = u.ToString();
  ASSERT_EQ(text.size(), 26u);
  Ulid back = Ulid::Parse(text).value();
  EXPECT_EQ(back, u);
  // Lowercase is accepted.
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  EXPECT_EQ(Ulid::Parse(lower).value(), u);
}

TEST(UlidTest, KnownEncoding) {
  std::array<uint8_t, 10> zero{};
  EXPECT_EQ(Ulid::FromParts(0, zero).ToString(), "00000000000000000000000000");
  std::array<uint8_t, 10> ones;
  ones.fill(0xff);
  EXPECT_EQ(Ulid::FromParts((1ull << 48) - 1, ones).ToString(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  EXPECT_EQ(Ulid::FromParts(1, zero).ToString(), "0000000001" + std::string(16, '0'));
}

TEST(UlidTest, ParseRejectsMalformed) {
  EXPECT_TRUE(Ulid::Parse("short").status().IsInvalidArgument());
  EXPECT_TRUE(Ulid::Parse("0000000000000000000000000U").status().IsInvalidArgument());
  EXPECT_TRUE(Ulid::Parse("80000000000000000000000000").status().IsInvalidArgument());
}

TEST(UlidTest, MonotonicWithinOneMillisecondAndWhenClockStepsBack) {
  ManualClock clock(5'000'000);
  UlidGenerator gen(&clock, 1);
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(gen.Next().value().ToString());
  clock.SetMicros(4'000'000);  // clock goes backwards
  for (int i = 0; i < 10; ++i) ids.push_back(gen.Next().value().ToString());
  clock.SetMicros(6'000'000);
  ids.push_back(gen.Next().value().ToString());
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]) << i;
}

TEST(UlidTest, SeededGeneratorIsDeterministic) {
  ManualClock clock(1000);
  UlidGenerator a(&clock, 7), b(&clock, 7), c(&clock, 8);
  Ulid ua = a.Next().value();
  EXPECT_EQ(ua, b.Next().value());
  EXPECT_NE(ua, c.Next().value());
}

TEST(UlidTest, UniqueAcrossThreads) {
  UlidGenerator gen;
  std::vector<std::vector<std::string>> per(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) per[t].push_back(gen.Next().value().ToString());
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> all;
  for (auto& v : per) {
    for (size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1], v[i]);
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(all.size(), 20000u);
}

TEST(UlidTest, ForkedChildNeverRepeatsItsParentsIds) {
  UlidGenerator gen;
  (void)gen.Next().value();  // the parent has a sequence in progress
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string id = gen.Next().value().ToString();
    (void)!::write(fds[1], id.data(), id.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  const std::string parent_id = gen.Next().value().ToString();
  char buf[26];
  ASSERT_EQ(::read(fds[0], buf, 26), 26);
  ::waitpid(pid, nullptr, 0);
  EXPECT_NE(std::string(buf, 26), parent_id);
}

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock c(10);
  EXPECT_EQ(c.NowMicros(), 10);
  c.AdvanceMicros(5'000);
  EXPECT_EQ(c.NowMicros(), 5'010);
  EXPECT_EQ(c.NowMillis(), 5);
  EXPECT_GT(Clock::System()->NowMicros(), 1'600'000'000'000'000);
}

}  // namespace
}  // namespace loam
