#include "service/compaction_trigger.h"

#include <gtest/gtest.h>

namespace loam::service {
namespace {

MaintenanceReport Left(const std::string& label, uint64_t compactable) {
  MaintenanceReport r;
  r.compactable[label] = compactable;
  return r;
}

// A pass is wanted once the versions committed since the last pass began,
// on top of what that pass left, reach the threshold; runs of one group
// commit (one version) count once; tables count apart.
TEST(CompactionTriggerTest, WantsAPassWhenNewVersionsReachTheThreshold) {
  CompactionTrigger trigger(4);
  trigger.PassStarted();
  trigger.PassEnded(Left("t", 1));
  trigger.NoteCommit("", "t", 10);
  trigger.NoteCommit("", "t", 10);  // a group-mate
  trigger.NoteCommit("", "u", 3);
  trigger.NoteCommit("dev", "t", 11);  // another branch's table
  trigger.NoteCommit("", "t", 11);
  EXPECT_FALSE(trigger.Wanted());  // t: 1 left + 2 versions
  trigger.NoteCommit("", "t", 12);
  EXPECT_TRUE(trigger.Wanted());
  trigger.PassStarted();  // the pass counts what came before it
  EXPECT_FALSE(trigger.Wanted());
  trigger.NoteCommit("", "t", 13);  // during the pass
  trigger.PassEnded(Left("t", 2));
  EXPECT_FALSE(trigger.Wanted());  // 2 + 1
  trigger.NoteCommit("", "t", 14);
  EXPECT_TRUE(trigger.Wanted());
}

// A table the pass left at the threshold (its compaction deferred: a plan
// gone stale under upserts) wants the next pass at its next commit, not
// before: a failed pass does not call the next one by itself.
TEST(CompactionTriggerTest, ATableLeftAtTheThresholdWaitsForACommit) {
  CompactionTrigger trigger(4);
  trigger.PassStarted();
  trigger.PassEnded(Left("dev:t", 9));
  EXPECT_FALSE(trigger.Wanted());
  trigger.NoteCommit("", "t", 5);  // main's t is another table
  EXPECT_FALSE(trigger.Wanted());
  trigger.NoteCommit("dev", "t", 4);
  EXPECT_TRUE(trigger.Wanted());
  trigger.Forget();  // another process holds the lease
  EXPECT_FALSE(trigger.Wanted());
}

}  // namespace
}  // namespace loam::service
