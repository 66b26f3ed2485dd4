// Building, optimising and remapping B+tree indices.
#include <algorithm>
#include <map>
#include <set>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"
#include "format/fragment_reader.h"

namespace loam {
namespace {
constexpr uint32_t kEntriesPerPage = 256;
}  // namespace

// Entries for every physical row, deleted or not: deletion vectors are
// applied at query time, and a restore may bring deleted rows back.
Result<std::vector<IndexEntry>> Dataset::CollectIndexEntries(const DatasetVersion& v,
                                                             const std::vector<Fragment>& fragments,
                                                             const std::string& column) const {
  const DataType type = v.schema.fields[v.schema.IndexOf(column)].type;
  std::vector<IndexEntry> entries;
  for (const Fragment& frag : fragments) {
    ASSIGN_OR_RETURN(auto reader, FragmentReader::OpenAt(store_.get(), Locate(frag)));
    if (reader->schema().IndexOf(column) < 0) continue;  // column added later: all null
    FragmentScanOptions fo;
    fo.columns = {column};
    fo.with_row_offsets = true;
    ASSIGN_OR_RETURN(std::vector<RecordBatch> parts, reader->Scan(fo));
    for (const RecordBatch& b : parts) {
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        if (b.columns[0].IsNull(r)) continue;  // nulls are not indexed
        entries.push_back({EncodeIndexKey(type, b.columns[0].GetValue(r)),
                           (frag.id << 32) | static_cast<uint64_t>(b.columns[1].GetInt64(r))});
      }
    }
  }
  return entries;
}

Result<Dataset> Dataset::CreateIndex(const std::string& name, const std::string& column,
                                     const CommitOptions& opts) const {
  RETURN_NOT_OK(ValidateRefName("index", name));
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        const int c = base.schema.IndexOf(column);
        if (c < 0) return Status::InvalidArgument("no column '" + column + "' to index");
        if (!IsIndexableType(base.schema.fields[c].type)) {
          return Status::InvalidArgument("column '" + column + "' of type " +
                                         base.schema.fields[c].type.ToString() +
                                         " cannot be indexed (integers, dates, timestamps, "
                                         "strings and binary can)");
        }
        ASSIGN_OR_RETURN(std::vector<IndexEntry> entries,
                         CollectIndexEntries(base, base.fragments, column));
        IndexMeta meta;
        meta.name = name;
        meta.column = column;
        meta.key_type = base.schema.fields[c].type;
        meta.path = BranchDir(branch_) + "_indices/" + name + "-" + NewUlidString() + ".lidx";
        for (const Fragment& f : base.fragments) meta.fragments.push_back(f.id);
        std::sort(meta.fragments.begin(), meta.fragments.end());
        RETURN_NOT_OK(
            WriteBTreeIndex(*store_, Key(meta.path), std::move(entries), kEntriesPerPage, &meta));
        Transaction t;
        t.op = OpType::kCreateIndex;
        t.indices = {std::move(meta)};
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::OptimizeIndices(const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        Transaction t;
        t.op = OpType::kCreateIndex;
        for (const IndexMeta& old : base.indices) {
          std::vector<Fragment> tail;
          for (const Fragment& f : base.fragments) {
            if (!old.Covers(f.id)) tail.push_back(f);
          }
          if (tail.empty()) continue;
          const int c = base.schema.IndexOf(old.column);
          if (c < 0 || !(base.schema.fields[c].type == old.key_type)) continue;  // stale
          // Old entries of fragments that still exist, plus the tail's.
          ASSIGN_OR_RETURN(std::vector<IndexEntry> entries,
                           ReadAllBTreeEntries(*store_, Key(old.path), old));
          std::erase_if(entries, [&](const IndexEntry& e) {
            return base.FindFragment(e.row_address >> 32) == nullptr;
          });
          ASSIGN_OR_RETURN(std::vector<IndexEntry> more,
                           CollectIndexEntries(base, tail, old.column));
          entries.insert(entries.end(), more.begin(), more.end());
          IndexMeta meta = old;
          meta.path = BranchDir(branch_) + "_indices/" + old.name + "-" + NewUlidString() + ".lidx";
          meta.fragments.clear();
          for (const Fragment& f : base.fragments) meta.fragments.push_back(f.id);
          std::sort(meta.fragments.begin(), meta.fragments.end());
          RETURN_NOT_OK(
              WriteBTreeIndex(*store_, Key(meta.path), std::move(entries), kEntriesPerPage, &meta));
          t.indices.push_back(std::move(meta));
        }
        if (t.indices.empty()) return std::optional<Transaction>();
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::RebuildIndices(const std::string& column,
                                        const std::vector<IndexRebuild>& outputs,
                                        const CommitOptions& opts) const {
  for (const IndexRebuild& o : outputs) RETURN_NOT_OK(ValidateRefName("index", o.name));
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        const int c = base.schema.IndexOf(column);
        if (c < 0 || !IsIndexableType(base.schema.fields[c].type)) {
          return Status::InvalidArgument("no indexable column '" + column + "'");
        }
        std::vector<Fragment> tail;
        for (const Fragment& f : base.fragments) {
          const bool covered =
              std::any_of(base.indices.begin(), base.indices.end(),
                          [&](const IndexMeta& m) { return m.column == column && m.Covers(f.id); });
          if (!covered) tail.push_back(f);
        }
        Transaction t;
        t.op = OpType::kCreateIndex;
        for (const IndexRebuild& o : outputs) {
          std::vector<IndexEntry> entries;
          std::set<uint64_t> covers;
          for (const std::string& name : o.from) {
            const IndexMeta* in = base.FindIndex(name);
            if (in == nullptr || in->column != column) {
              return Status::InvalidArgument("no index '" + name + "' on '" + column + "'");
            }
            if (in->entries > 0) {
              ASSIGN_OR_RETURN(std::vector<IndexEntry> old,
                               ReadAllBTreeEntries(*store_, Key(in->path), *in));
              for (IndexEntry& e : old) {
                if (base.FindFragment(e.row_address >> 32) != nullptr) {
                  entries.push_back(std::move(e));
                }
              }
            }
            for (uint64_t id : in->fragments) {
              if (base.FindFragment(id) != nullptr) covers.insert(id);
            }
          }
          if (o.tail) {
            ASSIGN_OR_RETURN(std::vector<IndexEntry> more, CollectIndexEntries(base, tail, column));
            entries.insert(entries.end(), std::make_move_iterator(more.begin()),
                           std::make_move_iterator(more.end()));
            for (const Fragment& f : tail) covers.insert(f.id);
          }
          IndexMeta meta;
          meta.name = o.name;
          meta.column = column;
          meta.key_type = base.schema.fields[c].type;
          meta.path = BranchDir(branch_) + "_indices/" + o.name + "-" + NewUlidString() + ".lidx";
          meta.fragments.assign(covers.begin(), covers.end());
          RETURN_NOT_OK(
              WriteBTreeIndex(*store_, Key(meta.path), std::move(entries), kEntriesPerPage, &meta));
          t.indices.push_back(std::move(meta));
        }
        if (t.indices.empty()) return std::optional<Transaction>();
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

// Compaction writes the live rows of the removed fragments, in order, into
// the added ones; so the k-th live row of the removed fragments is the k-th
// row of the added fragments.
Result<IndexMeta> Dataset::RemapIndex(const DatasetVersion& before, const DatasetVersion& after,
                                      const IndexMeta& index) const {
  std::map<uint64_t, uint64_t> moved;    // old address -> new address
  std::map<uint64_t, bool> new_covered;  // new fragment -> all sources covered
  ASSIGN_OR_RETURN(std::vector<RowsMoved> moves, MovedRows(before, after));
  for (const RowsMoved& m : moves) {
    for (uint64_t i = 0; i < m.rows; ++i) {
      moved[(m.from << 32) | (m.from_row + i)] = (m.to << 32) | (m.to_row + i);
    }
    auto [it, fresh] = new_covered.emplace(m.to, true);
    it->second = it->second && index.Covers(m.from);
  }
  ASSIGN_OR_RETURN(std::vector<IndexEntry> entries,
                   ReadAllBTreeEntries(*store_, Key(index.path), index));
  std::vector<IndexEntry> remapped;
  remapped.reserve(entries.size());
  for (IndexEntry& e : entries) {
    const uint64_t frag = e.row_address >> 32;
    if (auto it = moved.find(e.row_address); it != moved.end()) {
      if (new_covered[it->second >> 32]) remapped.push_back({std::move(e.key), it->second});
    } else if (after.FindFragment(frag) != nullptr) {
      remapped.push_back(std::move(e));
    }
  }
  IndexMeta meta = index;
  meta.path = BranchDir(branch_) + "_indices/" + index.name + "-" + NewUlidString() + ".lidx";
  meta.fragments.clear();
  for (uint64_t id : index.fragments) {
    if (after.FindFragment(id) != nullptr) meta.fragments.push_back(id);
  }
  for (const auto& [id, covered] : new_covered) {
    if (covered) meta.fragments.push_back(id);
  }
  std::sort(meta.fragments.begin(), meta.fragments.end());
  RETURN_NOT_OK(
      WriteBTreeIndex(*store_, Key(meta.path), std::move(remapped), kEntriesPerPage, &meta));
  return meta;
}

}  // namespace loam
