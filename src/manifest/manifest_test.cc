#include "manifest/manifest.h"

#include <gtest/gtest.h>

#include <functional>

#include "common/coding.h"
#include "common/hash.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

// A synthetic live head for stable id `sid` (the manifest layer does not
// interpret heads when publishing).
ManifestRow Head(int64_t sid, const std::string& commit) {
  TableHead h;
  h.sid = sid;
  h.inc = sid + 1000;
  h.schema_hash = "h";
  h.head_commit = commit;
  h.table_key = "t" + std::to_string(sid);
  h.location = TableLocation(sid, h.inc);
  h.table_version = 1;
  h.row_count = 0;
  return TableHeadRow(h);
}

TEST(ManifestTest, TheHeadDirectoryFitsTheHeaderWithLongBranchPathsAndEveryPartitionUsed) {
  auto store = testing::NewTestStore();
  auto m = Manifest::Create(store, "ws").value();
  const std::string branch(64, 'b');  // the longest branch name: the longest paths
  ASSERT_TRUE(m->CreateBranch(branch, "", 1).ok());
  // One publish per partition, so every partition lives in a different file.
  for (int64_t sid = 1; sid <= kTableHeadPartitions; ++sid) {
    PublishSpec spec;
    spec.branch = branch;
    spec.build = [&](PublishView& view) -> Result<PublishPlan> {
      PublishPlan plan;
      plan.upserts = {Head(sid, view.commit_id())};
      return plan;
    };
    ASSERT_TRUE(m->Publish(spec).ok()) << "sid " << sid;
  }
  ManifestVersion v = m->Current(branch).value();
  EXPECT_LE(EncodeHeadDirectory(v.dir).size(), kMaxAppSection);
  EXPECT_LT(v.dir.files.size(), kNumPartitions);  // some partitions were carried along
  for (int64_t sid = 1; sid <= kTableHeadPartitions; ++sid) {
    auto head = m->ReadTableHead(v, sid).value();
    ASSERT_TRUE(head.has_value()) << sid;
    EXPECT_EQ(head->table_key, "t" + std::to_string(sid));
  }
}

// A branch's newest version of its own is withdrawn only while nothing forks
// from it or tags it; main's never, and no older one above the fork point.
TEST(ManifestTest, OnlyABranchsNewestVersionThatNothingNamesIsWithdrawn) {
  auto store = testing::NewTestStore();
  auto m = Manifest::Create(store, "ws").value();
  ASSERT_TRUE(m->CreateBranch("b", "", 1).ok());
  auto publish = [&](int64_t sid) {
    PublishSpec spec;
    spec.branch = "b";
    spec.build = [&](PublishView& view) -> Result<PublishPlan> {
      PublishPlan plan;
      plan.upserts = {Head(sid, view.commit_id())};
      return plan;
    };
    return m->Publish(spec);
  };
  ASSERT_TRUE(publish(1).ok());
  const uint64_t v2 = publish(2).value().manifest_version;
  const std::string t2 = m->OwnVersionTxn("b", v2).value().value();
  EXPECT_EQ(m->WithdrawVersion("", 1, t2).code(), StatusCode::kInvalidArgument);
  Status older = m->WithdrawVersion("b", v2 - 1, m->OwnVersionTxn("b", v2 - 1).value().value());
  EXPECT_TRUE(older.IsFailedPrecondition()) << older;
  EXPECT_NE(older.message().find("it is not the newest there (" + std::to_string(v2) + ")"),
            std::string::npos)
      << older;
  ASSERT_TRUE(m->CreateBranch("child", "b", v2).ok());
  Status forked = m->WithdrawVersion("b", v2, t2);
  EXPECT_NE(forked.message().find("branch 'child' forks from it"), std::string::npos) << forked;
  ASSERT_TRUE(m->DeleteBranch("child").ok());
  ASSERT_TRUE(m->OpenDataset("b").value().CreateTag("t", v2).ok());
  Status tagged = m->WithdrawVersion("b", v2, t2);
  EXPECT_NE(tagged.message().find("tag 't' names it"), std::string::npos) << tagged;
  ASSERT_TRUE(m->OpenDataset("").value().DeleteTag("t").ok());
  EXPECT_EQ(m->Current("b").value().version, v2);
  Status another = m->WithdrawVersion("b", v2, "a transaction of another commit");
  EXPECT_NE(another.message().find("it is another commit (transaction " + t2 + ")"),
            std::string::npos)
      << another;
  ASSERT_TRUE(m->WithdrawVersion("b", v2, t2).ok());
  const ManifestVersion now = m->Current("b").value();
  EXPECT_EQ(now.version, v2 - 1);
  EXPECT_TRUE(m->ReadTableHead(now, 1).value().has_value());
  EXPECT_FALSE(m->ReadTableHead(now, 2).value().has_value());
  EXPECT_FALSE(m->OwnVersionTxn("b", v2).value().has_value());
  EXPECT_TRUE(m->OwnVersionTxn("b", v2 - 1).value().has_value());
}

// A version file in a branch's own directory numbered at or below its fork
// point (left there by a writer of an earlier branch of that name) is not
// what version look-ups read, but as the newest file there it is taken for
// the branch's latest version, heads and all. It is withdrawn whether or not
// a version of the branch's own follows it.
TEST(ManifestTest, AVersionFileAtOrBelowTheForkPointIsWithdrawnWhateverFollows) {
  auto store = testing::NewTestStore();
  auto m = Manifest::Create(store, "ws").value();
  auto publish = [&](const std::string& branch, int64_t sid, const std::string& txn) {
    PublishSpec spec;
    spec.branch = branch;
    spec.txn_id = txn;
    spec.build = [&](PublishView& view) -> Result<PublishPlan> {
      PublishPlan plan;
      plan.upserts = {Head(sid, view.commit_id())};
      return plan;
    };
    return m->Publish(spec).value().manifest_version;
  };
  const uint64_t first = publish("", 1, "");
  const uint64_t fork = publish("", 2, "");
  ASSERT_TRUE(m->CreateBranch("b", "", fork).ok());
  // Main's first version, as if an earlier branch 'b' had committed it.
  const std::string stray =
      "ws/__manifest/" + Dataset::BranchDir("b") + "_versions/" + VersionFileName(first);
  const std::string bytes = store->Get("ws/__manifest/_versions/" + VersionFileName(first)).value();
  ASSERT_TRUE(store->PutIfAbsent(stray, bytes).ok());
  const std::string stray_txn = m->OwnVersionTxn("b", first).value().value();
  // What the stray does: b reads it, with its own heads (main's at `first`).
  ManifestVersion read = m->Current("b").value();
  EXPECT_EQ(read.version, first);
  EXPECT_FALSE(m->ReadTableHead(read, 2).value().has_value());
  ASSERT_TRUE(m->WithdrawVersion("b", first, stray_txn).ok());
  read = m->Current("b").value();
  EXPECT_EQ(read.version, fork);
  EXPECT_TRUE(m->ReadTableHead(read, 2).value().has_value());
  // Again, now below a commit of the branch's own.
  const uint64_t own = publish("b", 3, "a transaction of b's");
  EXPECT_EQ(m->OwnVersionTxn("b", own).value(), "a transaction of b's");
  ASSERT_TRUE(store->PutIfAbsent(stray, bytes).ok());
  EXPECT_EQ(m->Current("b").value().version, own);
  ASSERT_TRUE(m->WithdrawVersion("b", first, stray_txn).ok());
  EXPECT_TRUE(store->Get(stray).status().IsNotFound());
  const ManifestVersion now = m->Current("b").value();
  EXPECT_EQ(now.version, own);
  EXPECT_TRUE(m->ReadTableHead(now, 2).value().has_value());
  EXPECT_TRUE(m->ReadTableHead(now, 3).value().has_value());
}

// A commit's journal rows about a table carry its id and agree with its head:
// a row without an id, or naming another version, incarnation or state than
// the head it comes with, is refused and nothing is published.
TEST(ManifestTest, JournalRowsPairWithTheirHeadsOrThePublishIsRefused) {
  auto store = testing::NewTestStore();
  auto m = Manifest::Create(store, "ws").value();
  auto version_row = [](const ManifestRow& head_row) {
    const TableHead h = ParseTableHead(head_row).value();
    ManifestRow r;
    r.object_id = TableVersionId(h.sid, h.inc, h.table_version);
    r.object_type = std::string(object_type::kTableVersion);
    r.table_key = h.table_key;
    r.stable_table_id = h.sid;
    r.incarnation_id = h.inc;
    r.table_version = h.table_version;
    return r;
  };
  auto publish = [&](std::function<void(ManifestRow & head, ManifestRow & row)> spoil) {
    PublishSpec spec;
    spec.build = [&](PublishView& view) -> Result<PublishPlan> {
      PublishPlan plan;
      ManifestRow head = Head(7, view.commit_id());
      ManifestRow row = version_row(head);
      spoil(head, row);
      plan.upserts = {head};
      plan.journal = {row};
      return plan;
    };
    return m->Publish(spec).status();
  };
  const uint64_t before = m->Current("").value().version;
  const std::vector<std::pair<std::string, std::function<void(ManifestRow&, ManifestRow&)>>>
      spoiled = {
          {"without its stable id",
           [](ManifestRow&, ManifestRow& r) { r.stable_table_id.reset(); }},
          {"no head row", [](ManifestRow& h, ManifestRow&) { h = Head(8, "c"); }},
          {"names incarnation", [](ManifestRow&, ManifestRow& r) { ++*r.incarnation_id; }},
          {"disagrees with its head", [](ManifestRow&, ManifestRow& r) { ++*r.table_version; }},
          {"disagrees with its head",
           [](ManifestRow&, ManifestRow& r) {
             r.object_type = std::string(object_type::kTableTombstone);
           }},
      };
  for (const auto& [message, spoil] : spoiled) {
    Status st = publish(spoil);
    EXPECT_TRUE(st.IsInvalidArgument()) << message << ": " << st;
    EXPECT_NE(st.message().find(message), std::string::npos) << st;
  }
  EXPECT_EQ(m->Current("").value().version, before);
  EXPECT_TRUE(publish([](ManifestRow&, ManifestRow&) {}).ok());
  EXPECT_EQ(m->Current("").value().version, before + 1);
}

TEST(ManifestTest, AForeignManifestFormatIsRefusedWithAnUpgradeMessage) {
  HeadDirectory d;
  std::string bytes = EncodeHeadDirectory(d);
  EXPECT_TRUE(DecodeHeadDirectory(bytes).ok());
  bytes[4] = static_cast<char>(kManifestFormatVersion + 1);  // the checksum no longer matches
  Status st = DecodeHeadDirectory(bytes).status();
  EXPECT_TRUE(st.IsDataLoss()) << st;
  // With a valid checksum, a newer format asks for an upgrade.
  std::string body = bytes.substr(0, bytes.size() - 8);
  std::string resealed = body;
  PutFixed64(&resealed, Hash64(body));
  st = DecodeHeadDirectory(resealed).status();
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_NE(st.message().find("upgrade"), std::string::npos) << st;
  EXPECT_TRUE(DecodeHeadDirectory("LMH4....").status().IsDataLoss());
}

// A stamped workspace's header says a format that a Loam from before the
// stamp refuses (it reads 5 to kLastFormatBeforeStamp); this one still reads
// every earlier format, and rewrites only the header of a format-7 directory.
TEST(ManifestTest, TheHeaderNamesAFormatThatLoamsBeforeTheStampRefuse) {
  const std::string bytes = EncodeHeadDirectory(HeadDirectory{});
  EXPECT_EQ(DecodeFixed(bytes.data() + 4, 4), 9u);
  EXPECT_GT(kManifestFormatVersion, kLastFormatBeforeStamp);
  for (uint32_t format = kOldestManifestFormat; format <= kManifestFormatVersion; ++format) {
    HeadDirectory d;
    if (format < kFirstHashedFormat) d.slots.resize(kPartitionsBeforeFormat7);
    std::string header;
    PutFixed32(&header, format);
    std::string sealed = EncodeHeadDirectory(d);
    sealed.replace(4, 4, header);
    sealed.resize(sealed.size() - 8);
    PutFixed64(&sealed, Hash64(sealed));
    Result<HeadDirectory> back = DecodeHeadDirectory(sealed);
    ASSERT_TRUE(back.ok()) << format << ": " << back.status();
    EXPECT_EQ(back->format, format);
  }
}

// A journal floor taken before a run exists bounds where its commit can be:
// the look-ups read only fragments from the floor up, and still find a
// commit another writer made after it, in the tail or folded into the
// index's level 0 at once. What was committed before the floor is not read
// at all: no index page, no fragment.
TEST(ManifestTest, AJournalFloorReadsOnlyWhatCameAfterIt) {
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded);
    auto store = testing::NewTestStore();
    ManifestOptions o;
    o.index_tail_fragments = 2;
    o.journal_level0_entries = 8;
    auto m = Manifest::Create(store, "ws", o).value();
    auto publish = [&](Manifest& by, const std::string& run, uint64_t floor) {
      PublishSpec spec;
      spec.runs = {{run, "{}", floor}};
      spec.build = [&](PublishView&) -> Result<PublishPlan> { return PublishPlan{}; };
      return by.Publish(spec).status();
    };
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(publish(*m, "old-" + std::to_string(i), 0).ok());
    ASSERT_TRUE(m->Reconcile("").ok());          // every old commit under the index's levels
    m = Manifest::Open(store, "ws", o).value();  // a process whose snapshot has them so
    const uint64_t floor = m->JournalFloor("").value();
    EXPECT_EQ(m->JournalFloor("dev").value(), 0u);  // a branch may be recreated
    auto other = Manifest::Open(store, "ws", o).value();
    ASSERT_TRUE(publish(*other, "taken", 0).ok());
    if (folded) {
      ASSERT_TRUE(other->Reconcile("").ok());
    }
    EXPECT_EQ(other->JournalIndexTail("").value(), folded ? 0 : 1);
    JournalLookupStats old;
    EXPECT_FALSE(m->RunCommitted("", "old-3", &old, floor).value());
    EXPECT_EQ(old.index_pages_read, 0);
    EXPECT_EQ(old.fragments_scanned, 0);
    EXPECT_TRUE(m->RunCommitted("", "old-3").value());  // without a floor: all of it
    Status again = publish(*m, "taken", floor);
    EXPECT_TRUE(again.Is(ErrorCode::kRunAlreadyCommitted)) << again;
    EXPECT_TRUE(m->RunCommitted("", "taken", nullptr, floor).value());
  }
}

// The heads marker is parsed strictly: what a fork inherits must be whole.
TEST(HeadsMarkerTest, RoundTripsAndRefusesAnythingOff) {
  HeadsMarker m;
  m.workspace_format = 5;
  m.heads_format = kManifestFormatVersion;
  m.source_version = 9;
  m.head_count = 3;
  m.baseline_digest = std::string(32, 'a');
  m.head_digest = std::string(32, 'b');
  m.migration = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
  ManifestRow row = HeadsMarkerRow(m);
  EXPECT_EQ(row.object_id, "heads_marker:00000005");
  row.metadata = WithCommit(row.metadata, m.migration, 10);  // as published
  Result<HeadsMarker> back = ParseHeadsMarker(row);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->produced_version, 10u);
  EXPECT_EQ(back->head_digest, m.head_digest);
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"\"head_count\":3", "\"head_count\":\"3\""},
      {"\"heads_format\":" + std::to_string(kManifestFormatVersion), "\"heads_format\":4"},
      {"\"source_version\":9", "\"source_version\":10"},
      {std::string(32, 'a'), std::string(31, 'a')},
      {"\"migration\":\"", "\"token\":\""}};
  for (const auto& [from, to] : broken) {
    ManifestRow bad = row;
    const size_t at = bad.metadata.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.metadata.replace(at, from.size(), to);
    Result<HeadsMarker> parsed = ParseHeadsMarker(bad);
    EXPECT_TRUE(parsed.status().IsDataLoss()) << to;
    EXPECT_NE(parsed.status().message().find("heads marker 'heads_marker:00000005' is malformed"),
              std::string::npos)
        << parsed.status();
  }
  ManifestRow wrong_id = row;
  wrong_id.object_id = "heads_marker:00000006";
  EXPECT_TRUE(ParseHeadsMarker(wrong_id).status().IsDataLoss());
}

}  // namespace
}  // namespace loam
