// A dataset version file: the complete, immutable description of one version
// (docs/format/dataset.md, "Version file").
//
// Layout: a 64-byte fixed header, an application section of at most
// kMaxAppSection bytes (opaque to this layer; the manifest keeps its head
// locations there), then the body (schema, fragments, transaction, branch) and
// its checksum. The header and application section are readable with one
// range request of kHeaderReadBytes, whatever the size of the body.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataset/btree_index.h"
#include "dataset/deletion_file.h"
#include "loam/types.h"

namespace loam {

// The version file format this build writes, and the oldest it reads
// (version 2 added inline fragments, data_offset).
inline constexpr uint16_t kVersionFileFormat = 2;
inline constexpr uint16_t kOldestVersionFileFormat = 1;

inline constexpr size_t kVersionHeaderSize = 64;
inline constexpr size_t kHeaderReadBytes = 8192;
inline constexpr size_t kMaxAppSection = kHeaderReadBytes - kVersionHeaderSize;

struct Fragment {
  uint64_t id = 0;
  // The fragment is bytes [data_offset, data_offset + data_size) of the object
  // at data_path, relative to the dataset root (shared across branches): a
  // fragment file (offset 0), or the version file that added the fragment
  // inline (offset > 0).
  std::string data_path;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;  // bytes, so opening needs no HEAD
  uint64_t physical_rows = 0;
  // The deletion file, "" when nothing is deleted: bytes [deletion_offset,
  // deletion_offset + deletion_size) of the version file that wrote it
  // inline (offset > 0), else the whole object.
  std::string deletion_path;
  uint64_t deletion_offset = 0;
  uint64_t deletion_size = 0;
  uint64_t deleted_rows = 0;
  // In memory only, before the commit: the bytes of a fragment, or of its new
  // deletion file, to embed in the committing version file (placed by
  // PlaceInlineFragments; dropped by ForgetInlineBytes once committed).
  std::shared_ptr<const std::string> inline_bytes;
  std::shared_ptr<const std::string> inline_deletion;

  uint64_t live_rows() const { return physical_rows - deleted_rows; }
  friend bool operator==(const Fragment& a, const Fragment& b) {
    return a.id == b.id && a.data_path == b.data_path && a.data_offset == b.data_offset &&
           a.data_size == b.data_size && a.physical_rows == b.physical_rows &&
           a.deletion_path == b.deletion_path && a.deletion_offset == b.deletion_offset &&
           a.deletion_size == b.deletion_size && a.deleted_rows == b.deleted_rows;
  }
};

// Values are stored in version files; never renumber.
enum class OpType : uint8_t {
  kCreate = 1,
  kAppend = 2,
  kDelete = 3,
  kMergeInsert = 4,
  kOverwrite = 5,
  kRestore = 6,
  kAddColumn = 7,
  kCompact = 8,
  kCreateIndex = 9,
  kRewrite = 10,  // removes and adds whole fragments; only with an expected version
};
std::string_view OpTypeName(OpType op);

struct FragmentDeletion {
  uint64_t fragment_id = 0;
  DeletionVector rows;  // rows this transaction newly deletes
  friend bool operator==(const FragmentDeletion&, const FragmentDeletion&) = default;
};

// What a commit did, kept in its version file so later writers can rebase.
struct Transaction {
  OpType op = OpType::kCreate;
  uint64_t read_version = 0;
  std::string id;                          // ULID
  std::vector<Fragment> added;             // ids assigned at commit
  std::vector<FragmentDeletion> deleted;   // delete / merge-insert
  std::vector<uint64_t> removed;           // compact / rewrite: fragments replaced by `added`
  std::vector<std::string> inserted_keys;  // merge-insert: encoded keys of new rows
  uint64_t restore_version = 0;            // restore
  std::optional<Schema> schema;            // create / overwrite / add column
  std::vector<IndexMeta> indices;          // create index / compact: indices to (re)place

  friend bool operator==(const Transaction&, const Transaction&) = default;
};

struct BranchInfo {
  std::string name;    // "" for main
  std::string parent;  // branch this one was created from ("" = main)
  uint64_t parent_version = 0;
  friend bool operator==(const BranchInfo&, const BranchInfo&) = default;
};

struct DatasetVersion {
  uint64_t version = 0;
  int64_t timestamp_micros = 0;
  Schema schema;
  std::vector<Fragment> fragments;
  uint64_t next_fragment_id = 0;
  std::vector<IndexMeta> indices;
  BranchInfo branch;
  Transaction txn;
  std::string app_section;
  std::vector<std::pair<std::string, std::string>> metadata;

  uint64_t live_rows() const;
  const Fragment* FindFragment(uint64_t id) const;
  const IndexMeta* FindIndex(std::string_view name) const;
};

// What one range request of the first kHeaderReadBytes gives.
struct VersionHeader {
  uint64_t version = 0;
  int64_t timestamp_micros = 0;
  uint64_t live_rows = 0;
  std::string app_section;
};

// Gives each fragment of v->txn.added that carries inline_bytes, then each
// fragment of v->fragments that carries inline_deletion, its place in the
// version file at `own_path` (root-relative), in txn.added and fragments
// alike: one after another from the end of the application section (64 bytes
// when there is none, else kHeaderReadBytes). Idempotent.
void PlaceInlineFragments(DatasetVersion* v, const std::string& own_path);
// The parts of `v`'s own file that hold fragments and deletion files inline,
// as (offset, size) in file order: the fragments its transaction added with
// an offset, then the deletion files with an offset of the fragments it
// deleted rows from.
std::vector<std::pair<uint64_t, uint64_t>> InlinePartsOf(const DatasetVersion& v);
// Drops the in-memory inline bytes of a committed version (its places stay).
void ForgetInlineBytes(DatasetVersion* v);
// Encodes a version whose inline fragments are placed (PlaceInlineFragments).
std::string EncodeVersionFile(const DatasetVersion& v);
Result<DatasetVersion> DecodeVersionFile(std::string_view bytes, const std::string& what);
// Parses a prefix of a version file (at least the header and app section).
Result<VersionHeader> DecodeVersionHeader(std::string_view prefix, const std::string& what);

// "_versions/<20 digits of UINT64_MAX - version>.lver": ascending key order is
// newest first, so a LIST with limit 1 finds the latest version.
std::string VersionFileName(uint64_t version);
std::optional<uint64_t> ParseVersionFileName(std::string_view name);
// DataLoss when the file at `key`, named for version `named`, holds `held`
// (a writer that put bytes under the wrong name).
Status CheckVersionNumber(const std::string& key, uint64_t named, uint64_t held);

}  // namespace loam
