// The "corrupt workspace" suite: every stored object of a small branched
// workspace is damaged in turn (bytes flipped, cut short, emptied, swapped
// with a sibling of its kind), then the workspace is opened and every
// branch's tables, log and heads are read. Checksummed files (version,
// fragment, index and deletion files) must give the undamaged answer (the
// bytes were not needed) or data_loss, never another answer; every object
// must leave no crash, no hang (ctest's timeout) and no allocation larger
// than the workspace could need.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <sstream>

#include "engine/workspace_test_util.h"

// The largest single allocation since the last reset: a decoder that trusts
// a forged size asks for gigabytes here. A sanitizer owns the allocator, so
// there its malloc hook watches; elsewhere a replaced operator new does.
namespace {
std::atomic<size_t> largest_allocation{0};
void NoteAllocation(size_t n) {
  size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (n > seen && !largest_allocation.compare_exchange_weak(seen, n)) {
  }
}
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOAM_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOAM_SANITIZER_ALLOCATOR 1
#endif
#endif

#ifdef LOAM_SANITIZER_ALLOCATOR
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
// Both hooks must be given, or none is installed.
[[maybe_unused]] const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(
    [](const volatile void*, size_t n) { NoteAllocation(n); }, [](const volatile void*) {});
}  // namespace
#else
// (GCC sees the malloc inside the replaced operator new and warns of a
// mismatch that is not one.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t n) {
  NoteAllocation(n);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#endif

namespace loam::testing {
namespace {

// Everything a reader of the workspace sees, as text: each branch's tables
// with their rows, its log, and whether its heads verify.
Result<std::string> ReadEverything(const std::shared_ptr<ObjectStore>& store) {
  ASSIGN_OR_RETURN(std::shared_ptr<WorkspaceEngine> ws,
                   WorkspaceEngine::Open(store, "ws", TestOptions()));
  std::ostringstream out;
  for (const std::string& branch : BranchedHistoryBranches()) {
    ASSIGN_OR_RETURN(Snapshot snap, ws->Current(branch));
    out << "branch '" << branch << "' v" << snap.manifest_version << "\n";
    for (const auto& [name, table] : snap.tables) {
      ASSIGN_OR_RETURN(Dataset ds, ws->OpenTable(snap, name));
      ASSIGN_OR_RETURN(RecordBatch rows, ds.ReadAll());
      out << " " << name << " sid " << table.def.sid << " rows " << rows.num_rows() << ":";
      for (int64_t r = 0; r < rows.num_rows(); ++r) {
        out << " " << std::get<int64_t>(rows.columns[0].GetValue(r));
      }
      out << "\n";
    }
    ASSIGN_OR_RETURN(std::vector<GraphCommitInfo> log, ws->Log(branch));
    out << " log " << log.size() << "\n";
    ASSIGN_OR_RETURN(HeadsReport heads, ws->VerifyHeads(branch));
    out << " heads " << heads.problems.size() << "\n";
  }
  return out.str();
}

bool Checksummed(const std::string& key) {
  for (const char* ext : {".lver", ".lfrag", ".lidx", ".ldel"}) {
    if (key.size() > 5 && key.ends_with(ext)) return true;
  }
  return false;
}

// The objects of one kind: same directory and extension (a swap partner).
std::string KindOf(const std::string& key) {
  const size_t slash = key.rfind('/');
  const size_t dot = key.rfind('.');
  return key.substr(0, slash == std::string::npos ? 0 : slash) + "|" +
         (dot == std::string::npos || (slash != std::string::npos && dot < slash)
              ? std::string()
              : key.substr(dot));
}

struct Damage {
  std::string name;
  std::function<std::string(const std::string& bytes)> apply;
};

std::vector<Damage> Damages() {
  auto flip = [](double where) {
    return [where](const std::string& b) {
      if (b.empty()) return b;
      std::string out = b;
      const size_t at = std::min(b.size() - 1, static_cast<size_t>(where * b.size()));
      out[at] = static_cast<char>(out[at] ^ 0x24);
      return out;
    };
  };
  return {
      {"flip at 9",
       [](const std::string& b) {
         std::string out = b;
         if (out.size() > 9) out[9] = static_cast<char>(out[9] ^ 0x81);
         return out;
       }},
      {"flip in the middle", flip(0.5)},
      {"flip near the end", flip(0.97)},
      {"cut in half", [](const std::string& b) { return b.substr(0, b.size() / 2); }},
      {"emptied", [](const std::string&) { return std::string(); }},
  };
}

std::shared_ptr<MemoryObjectStore> CopyOf(const std::map<std::string, std::string>& objects) {
  auto store = std::make_shared<MemoryObjectStore>();
  for (const auto& [key, bytes] : objects) EXPECT_TRUE(store->Put(key, bytes).ok()) << key;
  return store;
}

class CorruptWorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_shared<MemoryObjectStore>();
    std::shared_ptr<WorkspaceEngine> ws = WorkspaceEngine::Init(store, "ws", TestOptions()).value();
    ASSERT_TRUE(BuildBranchedHistory(*ws).ok());
    WriteRequest upsert = Append("orders", {2, 7});  // deletes a row of a fragment
    upsert.mode = WriteMode::kUpsert;
    ASSERT_TRUE(ws->Write(upsert).ok());
    for (const ObjectInfo& o : store->ListAll("").value()) {
      objects_[o.key] = store->Get(o.key).value();
    }
    baseline_ = ReadEverything(CopyOf(objects_)).value();
  }

  // Reads the workspace with `key` holding `bytes` and checks the outcome.
  void Expect(const std::string& key, const std::string& bytes, const std::string& damage) {
    std::map<std::string, std::string> damaged = objects_;
    damaged[key] = bytes;
    largest_allocation = 0;
    Result<std::string> read = ReadEverything(CopyOf(damaged));
    EXPECT_LT(largest_allocation.load(), size_t{64} << 20) << key << ", " << damage;
    largest_seen_ = std::max(largest_seen_, largest_allocation.load());
    ++cases_;
    if (read.ok() && *read == baseline_) return;
    ++noticed_;
    if (!read.ok()) {
      EXPECT_TRUE(read.status().IsDataLoss()) << key << ", " << damage << ": " << read.status();
      return;
    }
    // JSON refs and control objects carry no checksum: a damaged one may
    // read as another valid document (listed, not failed); a checksummed
    // file never may.
    std::cout << "read differently: " << key << ", " << damage << "\n";
    EXPECT_FALSE(Checksummed(key)) << key << ", " << damage << ": read another answer:\n"
                                   << *read << "instead of\n"
                                   << baseline_;
  }

  std::map<std::string, std::string> objects_;
  std::string baseline_;
  int cases_ = 0;
  int noticed_ = 0;
  size_t largest_seen_ = 0;
};

TEST_F(CorruptWorkspaceTest, EveryDamagedObjectIsDataLossOrUnread) {
  std::map<std::string, int> kinds;
  for (const auto& [key, bytes] : objects_) ++kinds[KindOf(key).substr(KindOf(key).find('|'))];
  for (const char* ext : {"|.lver", "|.lfrag", "|.json"}) EXPECT_GT(kinds[ext], 0) << ext;
  for (const auto& [key, bytes] : objects_) {
    for (const Damage& d : Damages()) Expect(key, d.apply(bytes), d.name);
  }
  std::cout << cases_ << " damaged workspaces read, " << noticed_ << " noticed the damage\n";
  EXPECT_GT(noticed_, cases_ / 4);
  EXPECT_GT(largest_seen_, size_t{1024}) << "the allocation watch saw nothing";
}

// A file in place of another of its kind (a writer that put bytes under the
// wrong name) is never read as the file it replaced.
TEST_F(CorruptWorkspaceTest, AnObjectSwappedWithOneOfItsKindIsDataLossOrUnread) {
  std::map<std::string, std::vector<std::string>> by_kind;
  for (const auto& [key, bytes] : objects_) by_kind[KindOf(key)].push_back(key);
  int swaps = 0;
  for (const auto& [kind, keys] : by_kind) {
    for (size_t i = 0; i + 1 < keys.size(); ++i) {
      if (objects_[keys[i]] == objects_[keys[i + 1]]) continue;
      Expect(keys[i], objects_[keys[i + 1]], "swapped with " + keys[i + 1]);
      ++swaps;
    }
  }
  EXPECT_GT(swaps, 10);
}

}  // namespace
}  // namespace loam::testing
