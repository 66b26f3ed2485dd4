#include "service/compaction_trigger.h"

namespace loam::service {

std::string CompactionTrigger::Label(const std::string& branch, const std::string& table) {
  return branch.empty() ? table : branch + ":" + table;
}

void CompactionTrigger::NoteCommit(const std::string& branch, const std::string& table,
                                   int64_t table_version) {
  std::lock_guard lock(mu_);
  Table& t = tables_[Label(branch, table)];
  if (table_version == t.last_version) return;  // a group-mate's commit, counted once
  t.last_version = table_version;
  ++t.new_versions;
  if (t.left + t.new_versions >= min_fragments_) wanted_ = true;
}

bool CompactionTrigger::Wanted() const {
  std::lock_guard lock(mu_);
  return wanted_;
}

void CompactionTrigger::PassStarted() {
  std::lock_guard lock(mu_);
  wanted_ = false;
  for (auto& [label, t] : tables_) t.new_versions = 0;
}

void CompactionTrigger::PassEnded(const MaintenanceReport& pass) {
  std::lock_guard lock(mu_);
  for (const auto& [label, compactable] : pass.compactable) {
    tables_[label].left = compactable;
  }
}

}  // namespace loam::service
