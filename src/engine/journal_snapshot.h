// Time travel to a version written before a workspace's migration from the
// journal-only format 4: such a version holds no heads, so its state is the
// fold of its journal (a history read, whose cost grows with the history).
#pragma once

#include "catalog/snapshot.h"
#include "manifest/manifest.h"

namespace loam {

// The snapshot of a journal-only version (IsJournalOnly): heads folded from its journal,
// definitions rebuilt from its schema rows, grants from its grant rows.
// DataLoss when the journal cannot give a live table its definition.
Result<Snapshot> SnapshotFromJournal(const Manifest& manifest, const ManifestVersion& v);

}  // namespace loam
