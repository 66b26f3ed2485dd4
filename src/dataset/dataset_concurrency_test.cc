// Concurrent merge-inserts from threads and processes: afterwards every key
// has exactly one live row, and each key holds the value of the last
// acknowledged upsert that wrote it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "common/subprocess_test_util.h"
#include "dataset/dataset_test_util.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

struct Ack {
  uint64_t version;
  std::string tag;
  std::vector<int64_t> ids;
};

// One writer's work: `ops` upserts of 4 random keys out of `key_space`.
std::vector<Ack> UpsertLoop(const Dataset& start, int writer, int ops, int key_space,
                            std::vector<std::string>* errors) {
  std::mt19937 rng(1000 + writer);
  std::vector<Ack> acks;
  for (int i = 0; i < ops; ++i) {
    std::set<int64_t> ids;
    while (ids.size() < 4) ids.insert(static_cast<int64_t>(rng() % key_space));
    const std::string tag = "w" + std::to_string(writer) + "-" + std::to_string(i);
    std::vector<int64_t> id_list(ids.begin(), ids.end());
    auto r = start.MergeInsert({"id"}, {People(id_list, tag)});
    if (!r.ok()) {
      errors->push_back(r.status().ToString());
      continue;
    }
    acks.push_back({r->version(), tag, id_list});
  }
  return acks;
}

// Checks one row per key and last-acknowledged-writer-wins per key.
void CheckAgainstAcks(const Dataset& ds, const std::vector<Ack>& acks) {
  std::map<int64_t, std::pair<uint64_t, std::string>> expected;  // id -> (version, tag)
  std::set<uint64_t> versions;
  for (const Ack& a : acks) {
    EXPECT_TRUE(versions.insert(a.version).second) << "two acks for version " << a.version;
    for (int64_t id : a.ids) {
      auto& e = expected[id];
      if (a.version > e.first) e = {a.version, a.tag};
    }
  }
  const auto contents = Contents(ds);  // fails on a duplicate live row
  EXPECT_EQ(contents.size(), expected.size());
  for (const auto& [id, e] : expected) {
    EXPECT_EQ(contents.at(id), "name-" + std::to_string(id) + "-" + e.second) << "id " << id;
  }
}

TEST(DatasetConcurrencyTest, EightThreadsOfOverlappingUpserts) {
  auto store = testing::NewTestStore();
  DatasetOptions options;
  options.max_commit_attempts = 200;
  Dataset ds = Dataset::Create(store, "t", PeopleSchema(), options).value();
  std::vector<std::vector<Ack>> acks(8);
  std::vector<std::vector<std::string>> errors(8);
  std::vector<std::thread> threads;
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&, w] { acks[w] = UpsertLoop(ds, w, 15, 40, &errors[w]); });
  }
  for (auto& t : threads) t.join();
  std::vector<Ack> all;
  for (int w = 0; w < 8; ++w) {
    EXPECT_TRUE(errors[w].empty()) << errors[w].front();
    all.insert(all.end(), acks[w].begin(), acks[w].end());
  }
  Dataset latest = ds.Latest().value();
  EXPECT_EQ(latest.version(), 1 + all.size());
  CheckAgainstAcks(latest, all);
}

TEST(DatasetConcurrencyTest, FourProcessesOfOverlappingUpsertsOnLocalDisk) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("loam-dsproc-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    auto store = LocalObjectStore::Open(dir.string()).value();
    ASSERT_TRUE(Dataset::Create(store, "t", PeopleSchema()).ok());
  }
  std::vector<int> codes;
  auto outputs = testing::RunInProcesses(4, [&](int p, int out) {
    auto store = LocalObjectStore::Open(dir.string()).value();
    DatasetOptions options;
    options.max_commit_attempts = 200;
    Dataset ds = Dataset::Open(store, "t", {}, options).value();
    std::vector<std::string> errors;
    for (const Ack& a : UpsertLoop(ds, p, 10, 30, &errors)) {
      std::string line = "ack " + std::to_string(a.version) + " " + a.tag;
      for (int64_t id : a.ids) line += " " + std::to_string(id);
      testing::WriteLine(out, line);
    }
    for (const std::string& e : errors) testing::WriteLine(out, "error " + e);
  }, &codes);
  EXPECT_EQ(codes, std::vector<int>(4, 0));
  std::vector<Ack> all;
  for (const std::string& text : outputs) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      std::string word;
      in >> word;
      ASSERT_EQ(word, "ack") << line;
      Ack a;
      in >> a.version >> a.tag;
      int64_t id;
      while (in >> id) a.ids.push_back(id);
      all.push_back(std::move(a));
    }
  }
  EXPECT_EQ(all.size(), 40u);
  auto store = LocalObjectStore::Open(dir.string()).value();
  CheckAgainstAcks(Dataset::Open(store, "t").value(), all);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loam
