// The latest-version hint of a branch on a store whose listing reads a whole
// directory (local disk), where a LIST for the newest version file reads the
// name of every version the branch keeps.
//
// `_versions/latest` holds a version number in decimal, rewritten without
// durability after each commit of the branch, once the version it names
// exists. A reader trusts it only if that version file is still there, then
// steps to the next version until one is missing: three requests when the
// hint is current. That finds the latest because a branch's own versions are
// contiguous above any version still present (a commit puts version N + 1
// only once N exists; cleanup removes oldest first and never a branch's
// newest). A hint that is missing, torn, behind (its writer died between the
// two puts) or left by an earlier branch of the same name costs a step per
// version since, or the LIST.
#include <charconv>

#include "dataset/dataset.h"
#include "dataset/version_file.h"
#include "loam/object_store.h"

namespace loam {
namespace {

constexpr std::string_view kLatestHintName = "_versions/latest";

std::optional<uint64_t> ParseHint(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0) return std::nullopt;
  return v;
}

}  // namespace

Result<std::optional<uint64_t>> Dataset::LatestFromHint(const std::string& branch) const {
  const std::string dir = BranchDir(branch);
  Result<std::string> text = store_->Get(Key(dir + std::string(kLatestHintName)));
  if (text.status().IsNotFound()) return std::optional<uint64_t>();
  RETURN_NOT_OK(text.status());
  std::optional<uint64_t> version = ParseHint(*text);
  if (!version) return std::optional<uint64_t>();  // torn by a crash: list
  auto exists = [&](uint64_t v) -> Result<bool> {
    Result<ObjectMeta> head = store_->Head(Key(dir + "_versions/" + VersionFileName(v)));
    if (head.status().IsNotFound()) return false;
    RETURN_NOT_OK(head.status());
    return true;
  };
  ASSIGN_OR_RETURN(bool present, exists(*version));
  if (!present) return std::optional<uint64_t>();  // cleaned up or another branch's
  while (true) {
    ASSIGN_OR_RETURN(bool next, exists(*version + 1));
    if (!next) return version;
    ++*version;
  }
}

void Dataset::NoteCommitted(uint64_t version) const {
  if (!store_->ListReadsWholeDirectory()) return;
  PutOptions relaxed;
  relaxed.durable = false;
  const std::string text = std::to_string(version);
  StringSource source(text);
  // Best effort: a failed or lost hint only sends readers back to the LIST.
  (void)store_->Write(Key(BranchDir(branch_) + std::string(kLatestHintName)), source, relaxed);
}

}  // namespace loam
