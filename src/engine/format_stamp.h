// The workspace format stamp (`<root>/_control/format.json`, docs/format/
// manifest.md "Workspace format"): one graph-wide object, read by every open
// before any branch, that says which format the whole workspace is in. A
// binary serves exactly kWorkspaceFormat; everything else is refused with the
// next step, and only `loam migrate` opens the predecessors.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "loam/object_store.h"
#include "loam/result.h"

namespace loam {

class Manifest;

// 5: durable heads, incarnation baselines and heads markers on every branch.
inline constexpr int kWorkspaceFormat = 5;
// 4: the journal-only manifest (current state by folding the journal).
inline constexpr int kPredecessorFormat = 4;

std::string FormatStampKey(const std::string& root);
// Where `loam migrate` keeps its claim and ledger.
std::string MigrationPrefix(const std::string& root);
std::string MigrationClaimKey(const std::string& root);

struct FormatStamp {
  int format = 0;
  std::string stamped_by;  // "init" or "migrate"
  std::string migration;   // the migration's token ("" for init)
  int64_t stamped_micros = 0;
};

// NotFound when there is no stamp; DataLoss when it is malformed or its
// checksum does not match. A later format's stamp is returned unchecked
// beyond its magic and number (its layout may differ).
Result<FormatStamp> ReadFormatStamp(ObjectStore& store, const std::string& root);
// The stamp `text` read from `key` (DataLoss when malformed or its checksum
// fails; a newer format is returned unchecked, for the caller to refuse).
Result<FormatStamp> DecodeFormatStamp(const std::string& key, const std::string& text);
// Put-if-absent: a stamp is never rewritten.
Status WriteFormatStamp(ObjectStore& store, const std::string& root, const FormatStamp& stamp);

// What an unstamped or mis-stamped workspace holds, as far as an open can
// tell without folding anything.
enum class FoundFormat {
  kCurrent,            // stamped kWorkspaceFormat
  kNewer,              // stamped with a later format
  kOlderStamped,       // stamped with an earlier format, which no Loam writes: damage
  kPartiallyMigrated,  // unstamped, with a migration claim
  kJournalOnly,        // format 4: no head directory on main
  kUnstampedHeads,     // heads written by a Loam before the stamp (head directory 5-7)
};

struct FormatFinding {
  FoundFormat found = FoundFormat::kCurrent;
  int stamped_format = 0;       // kCurrent, kNewer
  uint32_t head_directory = 0;  // kUnstampedHeads: the head directory's format (0: no commit)
  std::string migration_token;  // kPartiallyMigrated
};

// What a readable stamp says.
FormatFinding FindingOf(const FormatStamp& stamp);
// Reads the stamp; only when it is missing, the migration claim and main's
// latest manifest header.
Result<FormatFinding> FindFormat(ObjectStore& store, const std::string& root,
                                 const Manifest& manifest);

// OK for kCurrent; otherwise FailedPrecondition (code migration_required,
// or unsupported_format for a newer workspace; DataLoss for an older stamp)
// saying what was found, what this Loam needs and the exact command to run.
Status ServableOrRefusal(const FormatFinding& finding, const std::string& root);

}  // namespace loam
