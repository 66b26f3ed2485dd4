// Time travel to a version written before a workspace's migration from the
// journal-only format 4: such a version holds no heads, so its state is the
// fold of its journal (a history read, whose cost grows with the history).
#pragma once

#include "catalog/snapshot.h"
#include "manifest/manifest.h"

namespace loam {

// True for a version that holds journal rows but no head directory files:
// only versions a migration converted from format 4 are like that.
inline bool IsJournalOnly(const ManifestVersion& v) { return v.version > 1 && v.dir.files.empty(); }

// The snapshot of a journal-only version: heads folded from its journal,
// definitions rebuilt from its schema rows, grants from its grant rows.
// DataLoss when the journal cannot give a live table its definition.
Result<Snapshot> SnapshotFromJournal(const Manifest& manifest, const ManifestVersion& v);

}  // namespace loam
