#include "dataset/dataset.h"

#include <gtest/gtest.h>

#include <set>

#include "dataset/dataset_test_util.h"
#include "dataset/refs.h"
#include "format/page.h"
#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

TEST_F(DatasetTest, CreateAppendScanAndReopen) {
  EXPECT_EQ(ds_.version(), 1u);
  EXPECT_EQ(ds_.CountRows(), 0u);
  auto v2 = ds_.Append({People({1, 2, 3})});
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version(), 2u);
  auto v3 = v2->Append({People({4}), People({5, 6})});
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->CountRows(), 6u);
  Dataset reopened = Reopen();
  EXPECT_EQ(reopened.version(), 3u);
  EXPECT_EQ(Contents(reopened).size(), 6u);
  EXPECT_EQ(Contents(reopened)[5], "name-5-v1");
  // The old snapshot still reads its own version.
  EXPECT_EQ(Contents(*v2).size(), 3u);
  EXPECT_TRUE(Dataset::Create(store_, "tables/people", PeopleSchema()).status().IsAlreadyExists());
  EXPECT_TRUE(Dataset::Open(store_, "tables/none").status().IsNotFound());
}

// id -> "_rowaddr" of every live row.
std::map<int64_t, uint64_t> Addresses(const Dataset& ds) {
  ScanSpec spec;
  spec.columns = {"id"};
  spec.with_row_address = true;
  RecordBatch all = ds.ReadAll(spec).value();
  std::map<int64_t, uint64_t> out;
  for (int64_t r = 0; r < all.num_rows(); ++r) {
    out[all.columns[0].GetInt64(r)] = static_cast<uint64_t>(all.columns[1].GetInt64(r));
  }
  return out;
}

TEST_F(DatasetTest, MergeInsertStagedFollowsAPlanOnlyOnItsBasis) {
  Dataset ds = ds_.Append({People({1, 2, 3})}).value().Append({People({4})}).value();
  // A plan (deliberately wrong: it replaces id 3, not id 2) made on `ds`.
  const Column id9 = People({9}).columns[0];
  MergePlan plan;
  plan.basis = ds.state().fragments;
  plan.replaced = {Addresses(ds).at(3)};
  plan.inserted_keys = {EncodeRowKey({&id9}, 0)};
  plan.updated = 1;
  // The fragments moved on (another append): the plan is not followed; the
  // merge is planned from the staged rows, correctly.
  Dataset moved = ds.Append({People({5})}).value();
  const Fragment staged = moved.WriteFragment(People({2, 9}, "v2")).value();
  MergeStats stats;
  Dataset replanned = moved.MergeInsertStaged({"id"}, {staged}, &stats, {}, &plan).value();
  std::map<int64_t, std::string> rows = Contents(replanned);
  EXPECT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows.at(2), "name-2-v2");
  EXPECT_EQ(rows.at(3), "name-3-v1");
  EXPECT_EQ(rows.at(9), "name-9-v2");
  EXPECT_EQ(stats.updated, 1);
  EXPECT_EQ(stats.inserted, 1);
  // On its basis the plan is followed as given (so id 3 goes, and id 2 now
  // has two rows): the commit did not plan again.
  plan.basis = replanned.state().fragments;
  plan.replaced = {Addresses(replanned).at(3)};
  const Fragment next = replanned.WriteFragment(People({2, 9}, "v3")).value();
  Dataset followed = replanned.MergeInsertStaged({"id"}, {next}, &stats, {}, &plan).value();
  EXPECT_EQ(followed.CountRows(), 7u);  // 1, 2 (v2 and v3), 4, 5, 9 (v2 and v3)
  EXPECT_EQ(followed.ReadAll().value().num_rows(), 7);
}

TEST_F(DatasetTest, TakeEachReadsLiveRowsAtAddressesAndScansCanBeSplit) {
  Dataset ds = ds_.Append({People({1, 2, 3})}).value().Append({People({4, 5})}).value();
  const std::map<int64_t, uint64_t> at = Addresses(ds);
  ds = ds.Delete({Predicate::Eq("id", int64_t{2})}).value();
  std::vector<int64_t> ids;
  ScanSpec spec;
  spec.columns = {"name", "id"};
  ASSERT_TRUE(ds.TakeEach({at.at(1), at.at(2), at.at(5)}, spec, [&](const RecordBatch& b) {
                  EXPECT_EQ(b.schema.fields[0].name, "name");
                  for (int64_t r = 0; r < b.num_rows(); ++r) {
                    ids.push_back(b.columns[1].GetInt64(r));
                  }
                  return Status::OK();
                }).ok());
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 5}));  // id 2 is deleted
  auto nothing = [](const RecordBatch&) { return Status::OK(); };
  EXPECT_TRUE(ds.TakeEach({at.at(5), at.at(1)}, spec, nothing).IsInvalidArgument());
  EXPECT_TRUE(ds.TakeEach({uint64_t{77} << 32}, spec, nothing).IsInvalidArgument());
  EXPECT_TRUE(ds.TakeEach({at.at(1) + 3}, spec, nothing).IsInvalidArgument());
  ScanSpec limited = spec;
  limited.limit = 1;
  EXPECT_TRUE(ds.TakeEach({at.at(1)}, limited, nothing).IsInvalidArgument());
  // Scans restricted to a range of fragments see only those.
  ScanSpec second = spec;
  second.fragment_range = std::pair<size_t, size_t>{1, 9};
  EXPECT_EQ(ds.ReadAll(second).value().num_rows(), 2);
  second.fragment_range = std::pair<size_t, size_t>{0, 1};
  int64_t rows = 0;
  ASSERT_TRUE(ds.ScanEach(second, [&](const RecordBatch& b) {
                  rows += b.num_rows();
                  return Status::OK();
                }).ok());
  EXPECT_EQ(rows, 2);  // 1 and 3
}

TEST_F(DatasetTest, StagedFragmentsCommitLaterOrAreDeleted) {
  Dataset ds = ds_.Append({People({1, 2, 3})}).value();
  const Fragment a = ds.WriteFragment(People({3, 4}, "v2")).value();
  const Fragment b = ds.WriteFragment(People({5})).value();
  EXPECT_EQ(Reopen().CountRows(), 3u);  // staged rows are invisible
  MergeStats stats;
  Dataset merged = ds.MergeInsertStaged({"id"}, {a}, &stats).value();
  EXPECT_EQ(stats.updated, 1);
  EXPECT_EQ(stats.inserted, 1);
  EXPECT_EQ(Contents(merged).size(), 4u);
  EXPECT_EQ(Contents(merged).at(3), "name-3-v2");
  Dataset appended = merged.AppendStaged({b}).value();
  EXPECT_EQ(appended.CountRows(), 5u);
  const Fragment c = appended.WriteFragment(People({9})).value();
  Dataset replaced = appended.OverwriteStaged({c}).value();
  ASSERT_EQ(Contents(replaced).size(), 1u);
  EXPECT_EQ(Contents(replaced).at(9), "name-9-v1");
  // A duplicate key inside staged rows is refused, like MergeInsert.
  const Fragment dup = replaced.WriteFragment(People({7, 7})).value();
  EXPECT_TRUE(replaced.MergeInsertStaged({"id"}, {dup}).status().IsInvalidArgument());
  // Abandoned staged files can be deleted; ScanEach streams what is committed.
  ASSERT_TRUE(replaced.DeleteStaged({dup}).ok());
  EXPECT_TRUE(store_->Head("tables/people/" + dup.data_path).status().IsNotFound());
  int64_t rows = 0;
  ASSERT_TRUE(Reopen()
                  .ScanEach({},
                            [&](const RecordBatch& batch) {
                              rows += batch.num_rows();
                              return Status::OK();
                            })
                  .ok());
  EXPECT_EQ(rows, 1);
}

TEST_F(DatasetTest, ScanProjectsFiltersAndLimits) {
  Dataset ds = ds_.Append({People({1, 2, 3, 4, 5})}).value();
  ScanSpec spec;
  spec.columns = {"score", "id"};
  spec.where = {Predicate::Ge("id", int64_t{2}), Predicate::Lt("id", int64_t{5})};
  RecordBatch got = ds.ReadAll(spec).value();
  ASSERT_EQ(got.schema.fields.size(), 2u);
  EXPECT_EQ(got.schema.fields[0].name, "score");
  ASSERT_EQ(got.num_rows(), 3);
  EXPECT_EQ(got.columns[1].GetInt64(0), 2);
  EXPECT_DOUBLE_EQ(got.columns[0].GetFloat64(2), 6.0);
  spec.limit = 2;
  EXPECT_EQ(ds.ReadAll(spec).value().num_rows(), 2);
  ScanSpec bad;
  bad.columns = {"nope"};
  EXPECT_TRUE(ds.ReadAll(bad).status().IsInvalidArgument());
  bad.columns = {"id", "id"};
  EXPECT_NE(ds.ReadAll(bad).status().message().find("named twice"), std::string::npos);
}

TEST_F(DatasetTest, AppendWithWrongSchemaIsRejectedAndChangesNothing) {
  RecordBatch other(Schema{{{"id", DataType::Int32()}}});
  Status s = ds_.Append({other}).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("does not match"), std::string::npos);
  RecordBatch bad_utf8 = People({1});
  bad_utf8.columns[1] = Column(DataType::String());
  bad_utf8.columns[1].AppendBytes("\xff");
  s = ds_.Append({bad_utf8}).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_EQ(Reopen().version(), 1u);
}

TEST_F(DatasetTest, DeleteUsesDeletionVectorsAndDropsEmptyFragments) {
  Dataset ds = ds_.Append({People({1, 2, 3, 4})}).value().Append({People({5, 6})}).value();
  Dataset d1 = ds.Delete({Predicate::In("id", {int64_t{2}, int64_t{5}})}).value();
  EXPECT_EQ(d1.version(), 4u);
  auto c = Contents(d1);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_FALSE(c.count(2));
  EXPECT_FALSE(c.count(5));
  EXPECT_EQ(d1.state().fragments.size(), 2u);
  EXPECT_EQ(d1.state().fragments[0].deleted_rows, 1u);
  // Deleting the rest of the second fragment drops it.
  Dataset d2 = d1.Delete({Predicate::Eq("id", int64_t{6})}).value();
  EXPECT_EQ(d2.state().fragments.size(), 1u);
  // No match: nothing is committed.
  Dataset d3 = d2.Delete({Predicate::Eq("id", int64_t{99})}).value();
  EXPECT_EQ(d3.version(), d2.version());
  EXPECT_EQ(Contents(Reopen()), Contents(d2));
}

TEST_F(DatasetTest, DeleteRowsByAddress) {
  Dataset ds = ds_.Append({People({1, 2, 3})}).value();
  ScanSpec spec;
  spec.where = {Predicate::Ge("id", int64_t{2})};
  spec.with_row_address = true;
  RecordBatch hits = ds.ReadAll(spec).value();
  std::vector<int64_t> addrs;
  for (int64_t r = 0; r < hits.num_rows(); ++r) addrs.push_back(hits.columns.back().GetInt64(r));
  Dataset d = ds.DeleteRows(addrs).value();
  EXPECT_EQ(Contents(d), (std::map<int64_t, std::string>{{1, "name-1-v1"}}));
  // Already deleted: nothing to commit.
  EXPECT_EQ(d.DeleteRows(addrs).value().version(), d.version());
  Status s = d.DeleteRows({int64_t{77} << 32}).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_EQ(Reopen().version(), d.version());
}

TEST_F(DatasetTest, CorruptDeletionFileIsDataLoss) {
  for (const bool inline_deletions : {false, true}) {
    DatasetOptions options;
    options.max_inline_deletion_bytes = inline_deletions ? 1024 : 0;
    const std::string root = inline_deletions ? "tables/inline" : "tables/files";
    Dataset ds = Dataset::Create(store_, root, PeopleSchema(), options)
                     .value()
                     .Append({People({1, 2, 3})})
                     .value()
                     .Delete({Predicate::Eq("id", int64_t{2})})
                     .value();
    const Fragment& f = ds.state().fragments[0];
    EXPECT_EQ(f.deletion_offset > 0, inline_deletions);
    EXPECT_EQ(f.deletion_path.starts_with("_versions/"), inline_deletions);
    const std::string key = root + "/" + f.deletion_path;
    std::string bytes = store_->Get(key).value();
    const size_t begin = f.deletion_offset;
    const size_t end = inline_deletions ? begin + f.deletion_size : bytes.size();
    for (size_t i = begin; i < end; ++i) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ 0x10);
      ASSERT_TRUE(store_->Put(key, bad).ok());
      Status s = ds.ReadAll().status();
      ASSERT_TRUE(s.IsDataLoss()) << "byte " << i << ": " << s;
    }
  }
}

TEST_F(DatasetTest, MergeInsertUpdatesAndInserts) {
  Dataset ds = ds_.Append({People({1, 2, 3})}).value();
  MergeStats stats;
  Dataset merged = ds.MergeInsert({"id"}, {People({2, 3, 4}, "v2")}, &stats).value();
  EXPECT_EQ(stats.updated, 2);
  EXPECT_EQ(stats.inserted, 1);
  auto c = Contents(merged);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[1], "name-1-v1");
  EXPECT_EQ(c[2], "name-2-v2");
  EXPECT_EQ(c[4], "name-4-v2");
  EXPECT_EQ(merged.state().txn.inserted_keys.size(), 1u);
}

TEST_F(DatasetTest, MergeInsertRejectsDuplicateAndNullSourceKeys) {
  Dataset ds = ds_.Append({People({1})}).value();
  Status s = ds.MergeInsert({"id"}, {People({7, 8}), People({7})}).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("duplicate key"), std::string::npos) << s;
  EXPECT_NE(s.message().find("id=7"), std::string::npos) << s;
  RecordBatch null_key(PeopleSchema());
  null_key.AppendRow({int64_t{9}, std::monostate{}, 1.0}).CheckOK();
  s = ds.MergeInsert({"name"}, {null_key}).status();
  EXPECT_NE(s.message().find("is null"), std::string::npos) << s;
  EXPECT_TRUE(ds.MergeInsert({"nope"}, {People({1})}).status().IsInvalidArgument());
  EXPECT_TRUE(ds.MergeInsert({"id", "id"}, {People({1})}).status().IsInvalidArgument());
  EXPECT_EQ(Reopen().version(), ds.version());
  EXPECT_EQ(Contents(Reopen()).size(), 1u);
}

TEST_F(DatasetTest, OverwriteKeepsOrChangesSchemaExplicitly) {
  Dataset ds = ds_.Append({People({1, 2})}).value();
  Dataset o = ds.Overwrite({People({10})}).value();
  EXPECT_EQ(Contents(o), (std::map<int64_t, std::string>{{10, "name-10-v1"}}));
  Schema narrow{{{"id", DataType::Int64(), false}, {"name", DataType::String()}}};
  RecordBatch n(narrow);
  n.AppendRow({int64_t{20}, std::string("x")}).CheckOK();
  EXPECT_TRUE(o.Overwrite({n}).status().IsInvalidArgument());  // schema change needs the call
  Dataset o2 = o.Overwrite({n}, narrow).value();
  EXPECT_EQ(o2.schema(), narrow);
  EXPECT_EQ(Contents(o2)[20], "x");
}

TEST_F(DatasetTest, RestoreMakesAnOldVersionLatest) {
  Dataset v2 = ds_.Append({People({1})}).value();
  Dataset v3 = v2.Append({People({2})}).value();
  Dataset v4 = v3.Delete({Predicate::Eq("id", int64_t{1})}).value();
  Dataset v5 = v4.Restore(3).value();
  EXPECT_EQ(v5.version(), 5u);
  EXPECT_EQ(Contents(v5), Contents(v3));
  EXPECT_TRUE(v5.Restore(42).status().IsNotFound());
}

TEST_F(DatasetTest, AddColumnReadsNullForOldRows) {
  Dataset ds = ds_.Append({People({1})}).value();
  EXPECT_TRUE(ds.AddColumn({"age", DataType::Int32(), false}).status().IsInvalidArgument());
  EXPECT_TRUE(ds.AddColumn({"name", DataType::Int32()}).status().IsAlreadyExists());
  Dataset wide = ds.AddColumn({"age", DataType::Int32()}).value();
  ASSERT_EQ(wide.schema().fields.size(), 4u);
  RecordBatch row(wide.schema());
  row.AppendRow({int64_t{2}, std::string("b"), 1.0, int64_t{42}}).CheckOK();
  Dataset more = wide.Append({row}).value();
  RecordBatch all = more.ReadAll().value();
  ASSERT_EQ(all.num_rows(), 2);
  EXPECT_TRUE(all.columns[3].IsNull(0));
  EXPECT_EQ(all.columns[3].GetInt32(1), 42);
  ScanSpec where_null;
  where_null.where = {Predicate::IsNull("age")};
  EXPECT_EQ(more.ReadAll(where_null).value().num_rows(), 1);
  ScanSpec where_val;
  where_val.where = {Predicate::Eq("age", int64_t{42})};
  EXPECT_EQ(more.ReadAll(where_val).value().num_rows(), 1);
}

TEST_F(DatasetTest, AnAppendCanAddNullableColumnsInItsOwnCommit) {
  Dataset ds = ds_.Append({People({1})}).value();
  Schema wide = ds.schema();
  wide.fields.push_back({"age", DataType::Int32()});
  RecordBatch row(wide);
  row.AppendRow({int64_t{2}, std::string("b"), 1.0, int64_t{42}}).CheckOK();
  Fragment staged = ds.WriteFragment(row, false, &wide).value();
  EXPECT_TRUE(ds.AppendStaged({staged}, {}, {{"age", DataType::Int32(), false}})
                  .status()
                  .IsInvalidArgument());
  Dataset more = ds.AppendStaged({staged}, {}, {{"age", DataType::Int32()}}).value();
  EXPECT_EQ(more.version(), ds.version() + 1);  // one commit: never the column without its rows
  EXPECT_EQ(more.schema(), wide);
  RecordBatch all = more.ReadAll().value();
  ASSERT_EQ(all.num_rows(), 2);
  EXPECT_TRUE(all.columns[3].IsNull(0));
  EXPECT_EQ(all.columns[3].GetInt32(1), 42);
  EXPECT_EQ(Reopen({.version = ds.version()}).schema(), PeopleSchema());
}

TEST_F(DatasetTest, TimeTravelByVersionTimestampAndTag) {
  clock_.SetMicros(2'000'000);
  Dataset v2 = ds_.Append({People({1})}).value();
  clock_.SetMicros(3'000'000);
  Dataset v3 = v2.Append({People({2})}).value();
  EXPECT_EQ(Reopen({.version = 2}).CountRows(), 1u);
  EXPECT_EQ(Reopen({.as_of_micros = 2'500'000}).version(), 2u);
  EXPECT_EQ(Reopen({.as_of_micros = 3'000'000}).version(), 3u);
  EXPECT_TRUE(Dataset::Open(store_, "tables/people", {.as_of_micros = 10}).status().IsNotFound());
  EXPECT_TRUE(Dataset::Open(store_, "tables/people", {.version = 9}).status().IsNotFound());

  ASSERT_TRUE(v3.CreateTag("first", 2).ok());
  EXPECT_TRUE(v3.CreateTag("first", 3).IsAlreadyExists());
  EXPECT_TRUE(v3.CreateTag("bad/name", 3).IsInvalidArgument());
  EXPECT_TRUE(v3.CreateTag("missing", 77).IsNotFound());
  EXPECT_EQ(Reopen({.tag = "first"}).version(), 2u);
  auto tags = v3.ListTags().value();
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0], (std::pair<std::string, uint64_t>{"first", 2}));
  ASSERT_TRUE(v3.DeleteTag("first").ok());
  EXPECT_TRUE(v3.DeleteTag("first").IsNotFound());
  EXPECT_TRUE(Dataset::Open(store_, "tables/people", {.tag = "first"}).status().IsNotFound());
  auto history = v3.ListVersions().value();
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[1].op, OpType::kAppend);
  EXPECT_EQ(history[2].live_rows, 2u);
}

// A version file copied under another version's name (a buggy writer
// sharing the bucket) is data loss wherever it is read, not another version.
TEST_F(DatasetTest, AVersionFileUnderAnotherNumberIsDataLoss) {
  Dataset v2 = ds_.Append({People({1})}).value();
  const std::string dir = "tables/people/_versions/";
  ASSERT_TRUE(
      store_->Put(dir + VersionFileName(3), store_->Get(dir + VersionFileName(2)).value()).ok());
  Status latest = Dataset::Open(store_, "tables/people", {}, options_).status();
  EXPECT_TRUE(latest.IsDataLoss()) << latest;
  EXPECT_NE(latest.message().find("is named for version 3 but holds version 2"), std::string::npos)
      << latest;
  Status header = Dataset::ReadLatestHeader(store_, "tables/people", "").status();
  EXPECT_TRUE(header.IsDataLoss()) << header;
  EXPECT_TRUE(v2.ListVersions().status().IsDataLoss());
  EXPECT_TRUE(v2.Cleanup({}).status().IsDataLoss());
}

// Refs whose parents lead back to themselves are data loss for every walk
// up the chain (open, history, cleanup), never a hang or a stack overflow.
TEST_F(DatasetTest, BranchRefsThatFormACycleAreDataLoss) {
  Dataset dev = ds_.Append({People({1})}).value().CreateBranch("dev").value();
  ASSERT_TRUE(dev.CreateBranch("qa").ok());
  const std::string prefix = "tables/people/";
  ASSERT_TRUE(store_
                  ->Put(BranchRefKey(prefix, "dev"),
                        EncodeBranchRef({"dev", "qa", 5}, 0, "01AAAAAAAAAAAAAAAAAAAAAAAA"))
                  .ok());
  OpenSpec at;
  at.branch = "qa";
  at.version = 1;
  Status s = Dataset::Open(store_, "tables/people", at, options_).status();
  EXPECT_TRUE(s.IsDataLoss()) << s;
  EXPECT_NE(s.message().find("form a cycle"), std::string::npos) << s;
  at.version.reset();
  Result<Dataset> qa = Dataset::Open(store_, "tables/people", at, options_);
  if (qa.ok()) {
    EXPECT_TRUE(qa->ListVersions().status().IsDataLoss());
  } else {
    EXPECT_TRUE(qa.status().IsDataLoss()) << qa.status();
  }
  EXPECT_TRUE(ds_.Cleanup({}).status().IsDataLoss());
}

TEST_F(DatasetTest, BranchesShareFilesAndDivergeIndependently) {
  Dataset main2 = ds_.Append({People({1, 2})}).value();
  const size_t keys_before = store_->ListAll("").value().size();
  Dataset dev = main2.CreateBranch("dev").value();
  // Creating a branch writes only its ref: no data or version file is copied.
  EXPECT_EQ(store_->ListAll("").value().size(), keys_before + 1);
  EXPECT_EQ(dev.branch(), "dev");
  EXPECT_EQ(dev.version(), 2u);
  EXPECT_TRUE(main2.CreateBranch("dev").status().IsAlreadyExists());
  EXPECT_TRUE(main2.CreateBranch("main").status().IsInvalidArgument());

  Dataset dev3 = dev.Append({People({3})}).value();
  EXPECT_EQ(dev3.version(), 3u);
  Dataset main3 = main2.Delete({Predicate::Eq("id", int64_t{1})}).value();
  EXPECT_EQ(Contents(Reopen({.branch = "dev"})).size(), 3u);
  EXPECT_EQ(Contents(Reopen()).size(), 1u);
  EXPECT_EQ(Reopen({.branch = "dev", .version = 2}).CountRows(), 2u);
  // Branch of a branch.
  Dataset feature = dev3.CreateBranch("feature").value();
  Dataset feature4 = feature.MergeInsert({"id"}, {People({3, 4}, "f")}).value();
  EXPECT_EQ(Contents(feature4)[3], "name-3-f");
  EXPECT_EQ(Contents(Reopen({.branch = "dev"}))[3], "name-3-v1");
  // Deletion is refused while a child or a tag depends on the branch.
  Status s = dev3.DeleteBranch("dev");
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("feature"), std::string::npos);
  ASSERT_TRUE(feature4.CreateTag("keep", 4).ok());
  EXPECT_TRUE(dev3.DeleteBranch("feature").IsFailedPrecondition());
  ASSERT_TRUE(dev3.DeleteTag("keep").ok());
  ASSERT_TRUE(dev3.DeleteBranch("feature").ok());
  ASSERT_TRUE(dev3.DeleteBranch("dev").ok());
  EXPECT_TRUE(Dataset::Open(store_, "tables/people", {.branch = "dev"}).status().IsNotFound());
  EXPECT_TRUE(store_->ListAll("tables/people/tree/").value().empty());
  EXPECT_EQ(Contents(Reopen()).size(), 1u);  // main untouched
  EXPECT_TRUE(dev3.ListBranches().value().empty());
}

TEST_F(DatasetTest, ExpectedVersionIsACompareAndSwap) {
  Dataset v2 = ds_.Append({People({1})}).value();
  Status s = ds_.Append({People({2})}, {.expected_version = 1}).status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_TRUE(v2.Append({People({2})}, {.expected_version = 2}).ok());
  CommitOptions big;
  big.app_section = std::string(kMaxAppSection + 1, 'x');
  EXPECT_TRUE(v2.Append({People({3})}, big).status().IsInvalidArgument());
}

TEST_F(DatasetTest, AppSectionIsReadableWithOneRangeRequest) {
  CommitOptions opts;
  opts.app_section = "heads:abc";
  Dataset v2 = ds_.Append({People({1})}, opts).value();
  const std::string key = "tables/people/_versions/" + VersionFileName(2);
  auto counting = std::make_shared<CountingObjectStore>(store_);
  std::string prefix = counting->GetRange(key, 0, kHeaderReadBytes).value();
  VersionHeader h = DecodeVersionHeader(prefix, key).value();
  EXPECT_EQ(h.app_section, "heads:abc");
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.live_rows, 1u);
  EXPECT_EQ(counting->Snapshot().total.total_requests(), 1u);
  // Later operations carry the section forward unless they set their own.
  Dataset v3 = v2.Append({People({2})}).value();
  EXPECT_EQ(v3.state().app_section, "heads:abc");
  // The latest header: one LIST and one range GET.
  counting->Reset();
  VersionHeader latest = Dataset::ReadLatestHeader(counting, "tables/people", "").value();
  EXPECT_EQ(latest.version, 3u);
  EXPECT_EQ(latest.app_section, "heads:abc");
  EXPECT_EQ(counting->Snapshot().total.count(ObjectOp::kList), 1u);
  EXPECT_EQ(counting->Snapshot().total.count(ObjectOp::kGetRange), 1u);
  EXPECT_EQ(counting->Snapshot().total.total_requests(), 2u);
  // A branch without versions of its own answers with its fork point's header.
  Dataset feature = v2.CreateBranch("feature").value();
  VersionHeader fork = Dataset::ReadLatestHeader(store_, "tables/people", "feature").value();
  EXPECT_EQ(fork.version, 2u);
  EXPECT_EQ(Dataset::ReadHeader(store_, "tables/people", "feature", 1).value().version, 1u);
  EXPECT_FALSE(feature.BranchId("feature").value().empty());
}

TEST_F(DatasetTest, RewriteCommitsExactlyOnTopOfItsSnapshot) {
  Dataset v2 = ds_.Append({People({1, 2})}).value();
  Fragment f = v2.WriteFragment(People({7})).value();
  EXPECT_EQ(f.inline_bytes, nullptr);  // WriteFragment's default: a file
  EXPECT_EQ(f.data_offset, 0u);
  Dataset v3 = v2.CommitRewrite({f}, {v2.state().fragments[0].id}, "dir").value();
  EXPECT_EQ(v3.version(), 3u);
  EXPECT_EQ(Contents(v3).size(), 1u);
  EXPECT_EQ(Contents(v3).count(7), 1u);
  EXPECT_EQ(v3.state().app_section, "dir");
  // A stale snapshot loses: Aborted, and nothing changes.
  Fragment g = v2.WriteFragment(People({8})).value();
  EXPECT_TRUE(v2.CommitRewrite({g}, {}, "x").status().IsAborted());
  EXPECT_EQ(Contents(v3.Latest().value()).size(), 1u);
  // Removing a fragment the version lacks is refused, and so is an empty section.
  EXPECT_TRUE(v3.CommitRewrite({}, {12345}, "d").status().IsInvalidArgument());
  EXPECT_TRUE(v3.CommitRewrite({}, {}, "").status().IsInvalidArgument());
}

TEST_F(DatasetTest, ABranchCreatedAgainNeverReadsTheOldBranchesBytesFromACache) {
  // Branch version file names repeat when a branch is deleted and created
  // again, so branches keep their fragments in files of their own.
  DatasetOptions cached;
  cached.cache = std::make_shared<LruCache>(1 << 20);
  Dataset main = Dataset::Create(store_, "tables/b", PeopleSchema(), cached)
                     .value()
                     .Append({People({1})})
                     .value();
  EXPECT_GT(main.state().fragments[0].data_offset, 0u);  // main inlines
  Dataset dev = main.CreateBranch("dev").value().Append({People({2})}).value();
  EXPECT_EQ(dev.state().fragments.back().data_offset, 0u);
  EXPECT_EQ(Contents(dev).count(2), 1u);  // read through the cache
  ASSERT_TRUE(main.DeleteBranch("dev").ok());
  Dataset again = main.CreateBranch("dev").value().Append({People({3})}).value();
  EXPECT_EQ(Contents(again), (std::map<int64_t, std::string>{{1, "name-1-v1"}, {3, "name-3-v1"}}));
}

TEST_F(DatasetTest, AVersionsInlinePartsStayWithinItsBudget) {
  DatasetOptions small;
  small.max_inline_bytes_per_version = 60;  // two one-row deletion files (28 bytes each)
  Dataset ds = Dataset::Create(store_, "tables/budget", PeopleSchema(), small).value();
  for (int64_t id : {1, 2, 3}) ds = ds.Append({People({id, id + 10})}).value();
  for (const Fragment& f : ds.state().fragments) EXPECT_EQ(f.data_offset, 0u);  // over budget
  ds = ds.Delete({Predicate::Lt("id", int64_t{10})}).value();
  int embedded = 0, files = 0;
  for (const Fragment& f : ds.state().fragments) {
    ASSERT_FALSE(f.deletion_path.empty());
    (f.deletion_offset > 0 ? embedded : files)++;
  }
  EXPECT_EQ(embedded, 2);
  EXPECT_EQ(files, 1);
  EXPECT_EQ(
      Contents(Dataset::Open(store_, "tables/budget").value()),
      (std::map<int64_t, std::string>{{11, "name-11-v1"}, {12, "name-12-v1"}, {13, "name-13-v1"}}));
}

TEST_F(DatasetTest, ARewriteTellsItsSectionWhereInlineFragmentsLanded) {
  Dataset v2 = ds_.Append({People({1, 2})}).value();
  Fragment f = v2.WriteFragment(People({7}), /*allow_inline=*/true).value();
  ASSERT_TRUE(f.inline_bytes != nullptr);
  std::vector<Fragment> seen;
  auto section = [&](const std::vector<Fragment>& added) -> Result<std::string> {
    seen = added;
    return std::string("dir");
  };
  Dataset v3 = v2.CommitRewrite({f}, {}, section).value();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].data_path, "_versions/" + VersionFileName(3));
  EXPECT_EQ(seen[0].data_offset, kHeaderReadBytes);  // after the padded section
  EXPECT_EQ(seen[0].id, v3.state().fragments.back().id);
  EXPECT_EQ(v3.state().fragments.back(), seen[0]);
  // A fresh open reads the rows out of the version file.
  Dataset reopened = Reopen();
  EXPECT_EQ(Contents(reopened).size(), 3u);
  EXPECT_EQ(Contents(reopened).count(7), 1u);
}

}  // namespace
}  // namespace loam
