#include "dataset/conflict.h"

#include <gtest/gtest.h>

namespace loam {
namespace {

Transaction Txn(OpType op) {
  Transaction t;
  t.op = op;
  return t;
}

Transaction Deleting(OpType op, uint64_t frag, std::vector<uint32_t> rows) {
  Transaction t = Txn(op);
  t.deleted.push_back({frag, DeletionVector(std::move(rows))});
  return t;
}

TEST(ConflictTest, AppendsNeverConflictButLoseToReplacement) {
  for (OpType theirs : {OpType::kAppend, OpType::kDelete, OpType::kMergeInsert, OpType::kAddColumn,
                        OpType::kCompact}) {
    EXPECT_EQ(CheckConflict(Txn(OpType::kAppend), Txn(theirs)), ConflictVerdict::kCompatible);
  }
  EXPECT_EQ(CheckConflict(Txn(OpType::kAppend), Txn(OpType::kOverwrite)), ConflictVerdict::kAbort);
  EXPECT_EQ(CheckConflict(Txn(OpType::kAppend), Txn(OpType::kRestore)), ConflictVerdict::kAbort);
}

TEST(ConflictTest, DeletesMergeWhenDisjointAndRetryWhenOverlapping) {
  auto mine = Deleting(OpType::kDelete, 1, {1, 2});
  EXPECT_EQ(CheckConflict(mine, Deleting(OpType::kDelete, 1, {3})), ConflictVerdict::kCompatible);
  EXPECT_EQ(CheckConflict(mine, Deleting(OpType::kDelete, 2, {1})), ConflictVerdict::kCompatible);
  EXPECT_EQ(CheckConflict(mine, Deleting(OpType::kMergeInsert, 1, {2})), ConflictVerdict::kRetry);
  Transaction compact = Txn(OpType::kCompact);
  compact.removed = {1};
  EXPECT_EQ(CheckConflict(mine, compact), ConflictVerdict::kRetry);
  compact.removed = {9};
  EXPECT_EQ(CheckConflict(mine, compact), ConflictVerdict::kCompatible);
  EXPECT_EQ(CheckConflict(mine, Txn(OpType::kOverwrite)), ConflictVerdict::kAbort);
}

TEST(ConflictTest, UpsertsOfTheSameNewKeyRetry) {
  Transaction a = Txn(OpType::kMergeInsert), b = Txn(OpType::kMergeInsert);
  a.inserted_keys = {"k1", "k2"};
  b.inserted_keys = {"k3"};
  EXPECT_EQ(CheckConflict(a, b), ConflictVerdict::kCompatible);
  b.inserted_keys.push_back("k2");
  EXPECT_EQ(CheckConflict(a, b), ConflictVerdict::kRetry);
}

TEST(ConflictTest, ReplacementsWinAndSchemaChangesCollideByName) {
  for (OpType theirs : {OpType::kAppend, OpType::kDelete, OpType::kOverwrite, OpType::kRestore}) {
    EXPECT_EQ(CheckConflict(Txn(OpType::kOverwrite), Txn(theirs)), ConflictVerdict::kCompatible);
    EXPECT_EQ(CheckConflict(Txn(OpType::kRestore), Txn(theirs)), ConflictVerdict::kCompatible);
  }
  Transaction a = Txn(OpType::kAddColumn), b = Txn(OpType::kAddColumn);
  a.schema = Schema{{{"x", DataType::Int64()}}};
  b.schema = Schema{{{"y", DataType::Int64()}}};
  EXPECT_EQ(CheckConflict(a, b), ConflictVerdict::kCompatible);
  b.schema = a.schema;
  EXPECT_EQ(CheckConflict(a, b), ConflictVerdict::kAbort);
}

}  // namespace
}  // namespace loam
