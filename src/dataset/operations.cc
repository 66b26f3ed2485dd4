// Dataset write operations: each builds a Transaction against a base version
// and hands it to the commit loop (commit.cc).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "common/coding.h"
#include "common/flat_hash_map.h"
#include "common/hash.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"
#include "format/page.h"

namespace loam {
namespace {

Status CheckBatchesMatch(const Schema& schema, const std::vector<RecordBatch>& batches) {
  for (const RecordBatch& b : batches) {
    if (!(b.schema == schema)) {
      return Status::InvalidArgument("batch schema " + b.schema.ToString() +
                                     " does not match the dataset schema " + schema.ToString());
    }
    RETURN_NOT_OK(b.Validate());
  }
  return Status::OK();
}

// Row addresses (fragment id << 32 | offset) grouped into one deletion per fragment.
std::vector<FragmentDeletion> GroupByFragment(const std::vector<uint64_t>& addresses) {
  std::map<uint64_t, std::vector<uint32_t>> rows;
  for (uint64_t a : addresses) rows[a >> 32].push_back(static_cast<uint32_t>(a));
  std::vector<FragmentDeletion> out;
  for (auto& [frag, offsets] : rows) out.push_back({frag, DeletionVector(std::move(offsets))});
  return out;
}

// The "_rowaddr" values of scan results (the last column of each batch).
std::vector<uint64_t> RowAddresses(const std::vector<RecordBatch>& batches) {
  std::vector<uint64_t> out;
  for (const RecordBatch& b : batches) {
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      out.push_back(static_cast<uint64_t>(b.columns.back().GetInt64(r)));
    }
  }
  return out;
}

std::string DescribeKey(const std::vector<std::string>& names, const RecordBatch& b,
                        const std::vector<int>& idx, int64_t row) {
  std::string out;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) out += ", ";
    Value v = b.columns[idx[i]].GetValue(row);
    out += names[i] + "=";
    if (auto* s = std::get_if<std::string>(&v)) {
      out += "'" + *s + "'";
    } else if (auto* n = std::get_if<int64_t>(&v)) {
      out += std::to_string(*n);
    } else {
      out += "<value>";
    }
  }
  return out;
}

}  // namespace

namespace {

// Streams row ranges of caller-owned batches; whole batches are not copied.
class RangeStream final : public BatchStream {
 public:
  struct Range {
    const RecordBatch* batch;
    int64_t offset;
    int64_t count;
  };
  explicit RangeStream(std::vector<Range> ranges) : ranges_(std::move(ranges)) {}
  Result<std::shared_ptr<const RecordBatch>> Next() override {
    if (next_ == ranges_.size()) return std::shared_ptr<const RecordBatch>();
    const Range& r = ranges_[next_++];
    if (r.offset == 0 && r.count == r.batch->num_rows()) {
      return std::shared_ptr<const RecordBatch>(std::shared_ptr<void>(), r.batch);
    }
    return std::shared_ptr<const RecordBatch>(
        std::make_shared<RecordBatch>(r.batch->Slice(r.offset, r.count)));
  }

 private:
  std::vector<Range> ranges_;
  size_t next_ = 0;
};

}  // namespace

Result<Fragment> Dataset::WriteFragment(const RecordBatch& batch, bool allow_inline,
                                        const Schema* schema) const {
  ASSIGN_OR_RETURN(std::vector<Fragment> frags, WriteFragments(schema ? *schema : state_->schema,
                                                               std::span(&batch, 1), allow_inline));
  if (frags.size() != 1)
    return Status::InvalidArgument("a fragment needs 1 to max_rows_per_fragment rows");
  return std::move(frags[0]);
}

Status Dataset::DeleteStaged(const std::vector<Fragment>& staged) const {
  Status first;
  for (const Fragment& f : staged) {
    if (f.data_path.empty()) continue;  // kept in memory
    Status s = store_->Delete(Key(f.data_path));
    if (first.ok() && !s.ok()) first = s;  // delete the others anyway
  }
  return first;
}

Status Dataset::StagedExists(const Fragment& staged) const {
  if (staged.data_path.empty() && staged.inline_bytes) return Status::OK();  // in memory
  Result<ObjectMeta> meta = store_->Head(Key(staged.data_path));
  if (meta.ok() && meta->size != staged.data_size) {
    return Status::DataLoss("staged file '" + staged.data_path + "' changed size");
  }
  return meta.status();
}

Result<Fragment> Dataset::EncodeSmallFragment(const Schema& schema, BatchStream& rows,
                                              uint64_t* budget) const {
  RETURN_NOT_OK(schema.Validate());
  FragmentEncoder encoder(schema, &rows, options_->write);
  std::string bytes;
  char buf[16 << 10];
  for (;;) {
    ASSIGN_OR_RETURN(size_t n, encoder.Read(buf, sizeof(buf)));
    if (n == 0) break;
    bytes.append(buf, n);
  }
  Fragment f;
  f.data_size = bytes.size();
  f.physical_rows = encoder.footer().num_rows;
  if (bytes.size() <= options_->max_inline_fragment_bytes && bytes.size() <= *budget) {
    *budget -= bytes.size();
    f.inline_bytes = std::make_shared<const std::string>(std::move(bytes));
    return f;
  }
  // Larger than expected: a file of its own after all.
  f.data_path = BranchDir(branch_) + "data/" + NewUlidString() + ".lfrag";
  RETURN_NOT_OK(store_->PutIfAbsent(Key(f.data_path), std::move(bytes)).status());
  return f;
}

Result<std::vector<Fragment>> Dataset::WriteFragments(const Schema& schema,
                                                      std::span<const RecordBatch> batches,
                                                      bool allow_inline) const {
  std::vector<Fragment> out;
  std::vector<RangeStream::Range> pending;
  uint64_t pending_rows = 0;
  uint64_t pending_bytes = 0;  // in memory: encoded, a fragment is rarely larger
  uint64_t budget = options_->max_inline_bytes_per_version;
  auto flush = [&]() -> Status {
    if (pending_rows == 0) return Status::OK();
    RangeStream stream(std::move(pending));
    if (allow_inline && MayInline() && pending_bytes <= options_->max_inline_fragment_bytes &&
        pending_bytes <= budget) {
      ASSIGN_OR_RETURN(Fragment f, EncodeSmallFragment(schema, stream, &budget));
      out.push_back(std::move(f));
    } else {
      const std::string rel = BranchDir(branch_) + "data/" + NewUlidString() + ".lfrag";
      ASSIGN_OR_RETURN(FragmentFileInfo info,
                       WriteFragmentFile(*store_, Key(rel), schema, stream, options_->write));
      Fragment f;
      f.data_path = rel;
      f.data_size = info.size;
      f.physical_rows = info.num_rows;
      out.push_back(std::move(f));
    }
    pending.clear();
    pending_rows = 0;
    pending_bytes = 0;
    return Status::OK();
  };
  const uint64_t cap = options_->max_rows_per_fragment;
  for (const RecordBatch& b : batches) {
    uint64_t batch_bytes = 0;
    for (const Column& c : b.columns) batch_bytes += static_cast<uint64_t>(c.ByteSize());
    int64_t offset = 0;
    while (offset < b.num_rows()) {
      const int64_t take = std::min<int64_t>(b.num_rows() - offset, cap - pending_rows);
      pending.push_back({&b, offset, take});
      pending_rows += take;
      pending_bytes +=
          batch_bytes * static_cast<uint64_t>(take) / static_cast<uint64_t>(b.num_rows());
      offset += take;
      if (pending_rows >= cap) RETURN_NOT_OK(flush());
    }
  }
  RETURN_NOT_OK(flush());
  return out;
}

Result<Dataset> Dataset::Append(const std::vector<RecordBatch>& batches,
                                const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        RETURN_NOT_OK(CheckBatchesMatch(base.schema, batches));
        ASSIGN_OR_RETURN(std::vector<Fragment> frags, WriteFragments(base.schema, batches));
        if (frags.empty()) return std::optional<Transaction>();
        Transaction t;
        t.op = OpType::kAppend;
        t.added = std::move(frags);
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::Delete(const std::vector<Predicate>& where,
                                const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        ScanSpec spec;
        spec.columns = {base.schema.fields[0].name};
        spec.where = where;
        spec.with_row_address = true;
        ASSIGN_OR_RETURN(std::vector<RecordBatch> hits, ScanVersion(base, spec));
        Transaction t;
        t.op = OpType::kDelete;
        t.deleted = GroupByFragment(RowAddresses(hits));
        if (t.deleted.empty()) return std::optional<Transaction>();
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::DeleteRows(const std::vector<int64_t>& row_addresses,
                                    const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        for (int64_t a : row_addresses) {
          const Fragment* f = base.FindFragment(static_cast<uint64_t>(a) >> 32);
          if (a < 0 || f == nullptr ||
              (static_cast<uint64_t>(a) & 0xffffffffu) >= f->physical_rows) {
            return Status::InvalidArgument("row address " + std::to_string(a) +
                                           " is not in version " + std::to_string(base.version));
          }
        }
        Transaction t;
        t.op = OpType::kDelete;
        // Rows already deleted are dropped, so the transaction records (and
        // conflicts on) only what it newly deletes.
        for (FragmentDeletion& fd : GroupByFragment({row_addresses.begin(), row_addresses.end()})) {
          const Fragment* f = base.FindFragment(fd.fragment_id);
          if (!f->deletion_path.empty()) {
            ASSIGN_OR_RETURN(DeletionVector existing, ReadDeletions(*f));
            fd.rows = fd.rows.Minus(existing);
          }
          if (!fd.rows.empty()) t.deleted.push_back(std::move(fd));
        }
        if (t.deleted.empty()) return std::optional<Transaction>();
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Status Dataset::PlanMerge(const DatasetVersion& base, const std::vector<std::string>& keys,
                          const std::vector<RecordBatch>& source_keys, Transaction* t,
                          MergeStats* stats) const {
  // Keys of the source: no nulls, no duplicates. Looked up by hash, then
  // compared byte for byte, so the plan is exact.
  std::vector<std::string> row_keys;
  FlatHashMap<uint32_t> source_set;  // hash of a key -> its index in row_keys + 1
  for (const RecordBatch& b : source_keys) {
    std::vector<const Column*> cols;
    for (const Column& c : b.columns) cols.push_back(&c);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      for (size_t k = 0; k < cols.size(); ++k) {
        if (cols[k]->IsNull(r)) {
          return Status::InvalidArgument("key column '" + keys[k] + "' is null in a source row");
        }
      }
      std::string key = EncodeRowKey(cols, r);
      bool fresh = false;
      uint32_t& at = source_set.FindOrInsert(Hash128(key), &fresh);
      if (!fresh) {
        std::vector<int> all(keys.size());
        for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
        return Status::InvalidArgument("duplicate key in merge-insert source: " +
                                       DescribeKey(keys, b, all, r));
      }
      row_keys.push_back(std::move(key));
      at = static_cast<uint32_t>(row_keys.size());
    }
  }
  // Live rows of the dataset whose key appears in the source.
  ScanSpec spec;
  spec.columns = keys;
  spec.with_row_address = true;
  ASSIGN_OR_RETURN(std::vector<RecordBatch> existing, ScanVersion(base, spec));
  // Every live row with a source key is replaced (duplicates left by
  // blind appends collapse into the one source row).
  std::vector<uint64_t> replaced;
  std::vector<bool> matched(row_keys.size(), false);
  size_t matched_count = 0;
  for (const RecordBatch& b : existing) {
    std::vector<const Column*> cols;
    for (size_t k = 0; k < keys.size(); ++k) cols.push_back(&b.columns[k]);
    const Column& addr = b.columns.back();
    std::string key;
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      key.clear();
      AppendRowKey(cols, r, &key);
      const uint32_t* at = source_set.Find(Hash128(key));
      if (at == nullptr || row_keys[*at - 1] != key) continue;
      if (!matched[*at - 1]) ++matched_count;
      matched[*at - 1] = true;
      replaced.push_back(static_cast<uint64_t>(addr.GetInt64(r)));
    }
  }
  t->op = OpType::kMergeInsert;
  for (size_t i = 0; i < row_keys.size(); ++i) {
    if (!matched[i]) t->inserted_keys.push_back(std::move(row_keys[i]));
  }
  t->deleted = GroupByFragment(replaced);
  if (stats) {
    stats->updated = static_cast<int64_t>(matched_count);
    stats->inserted = static_cast<int64_t>(t->inserted_keys.size());
  }
  return Status::OK();
}

namespace {

Status CheckMergeKeys(const Schema& schema, const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::InvalidArgument("merge-insert needs at least one key column");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (schema.IndexOf(keys[i]) < 0) {
      return Status::InvalidArgument("key column '" + keys[i] + "' is not in the dataset");
    }
    for (size_t j = 0; j < i; ++j) {
      if (keys[j] == keys[i])
        return Status::InvalidArgument("key column '" + keys[i] + "' is named twice");
    }
  }
  return Status::OK();
}

}  // namespace

Result<Dataset> Dataset::MergeInsert(const std::vector<std::string>& keys,
                                     const std::vector<RecordBatch>& source, MergeStats* stats,
                                     const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        RETURN_NOT_OK(CheckBatchesMatch(base.schema, source));
        RETURN_NOT_OK(CheckMergeKeys(base.schema, keys));
        std::vector<RecordBatch> source_keys;
        int64_t rows = 0;
        for (const RecordBatch& b : source) {
          ASSIGN_OR_RETURN(RecordBatch k, b.Project(keys));
          source_keys.push_back(std::move(k));
          rows += b.num_rows();
        }
        if (rows == 0) return std::optional<Transaction>();
        Transaction t;
        RETURN_NOT_OK(PlanMerge(base, keys, source_keys, &t, stats));
        ASSIGN_OR_RETURN(t.added, WriteFragments(base.schema, source));
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::AppendStaged(std::vector<Fragment> staged, const CommitOptions& opts,
                                      std::vector<Field> add_columns) const {
  ASSIGN_OR_RETURN(staged, PlaceStaged(std::move(staged)));
  for (Field& f : add_columns) {
    if (!f.nullable) {
      return Status::InvalidArgument("added column '" + f.name +
                                     "' must be nullable: existing rows have no value for it");
    }
  }
  return RunOperation(
      [&](const DatasetVersion&) -> Result<std::optional<Transaction>> {
        if (staged.empty() && add_columns.empty()) return std::optional<Transaction>();
        Transaction t;
        t.op = OpType::kAppend;
        t.added = staged;
        // Columns added by the same commit (applied before the fragments).
        if (!add_columns.empty()) t.schema = Schema{add_columns};
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::MergeInsertStaged(const std::vector<std::string>& keys,
                                           std::vector<Fragment> staged, MergeStats* stats,
                                           const CommitOptions& opts, const MergePlan* plan) const {
  ASSIGN_OR_RETURN(staged, PlaceStaged(std::move(staged)));
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        RETURN_NOT_OK(CheckMergeKeys(base.schema, keys));
        if (staged.empty()) return std::optional<Transaction>();
        if (plan && plan->basis == base.fragments) {
          Transaction t;
          t.op = OpType::kMergeInsert;
          t.deleted = GroupByFragment(plan->replaced);
          t.inserted_keys = plan->inserted_keys;
          t.added = staged;
          if (stats) *stats = {static_cast<int64_t>(t.inserted_keys.size()), plan->updated};
          return std::optional<Transaction>(std::move(t));
        }
        // The staged rows' keys, read back from their files.
        DatasetVersion source = base;
        source.fragments = staged;
        for (size_t i = 0; i < source.fragments.size(); ++i) source.fragments[i].id = i;
        ScanSpec spec;
        spec.columns = keys;
        ASSIGN_OR_RETURN(std::vector<RecordBatch> source_keys, ScanVersion(source, spec));
        Transaction t;
        RETURN_NOT_OK(PlanMerge(base, keys, source_keys, &t, stats));
        t.added = staged;
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<std::vector<RecordBatch>> Dataset::ReadStaged(
    const std::vector<Fragment>& staged, const std::vector<std::string>& columns) const {
  DatasetVersion source = *state_;
  source.fragments = staged;
  source.indices.clear();
  for (size_t i = 0; i < source.fragments.size(); ++i) source.fragments[i].id = i;
  ScanSpec spec;
  spec.columns = columns;
  return ScanVersion(source, spec);
}

Result<Dataset> Dataset::OverwriteStaged(std::vector<Fragment> staged,
                                         const CommitOptions& opts) const {
  ASSIGN_OR_RETURN(staged, PlaceStaged(std::move(staged)));
  return RunOperation(
      [&](const DatasetVersion&) -> Result<std::optional<Transaction>> {
        Transaction t;
        t.op = OpType::kOverwrite;
        t.added = staged;
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::Overwrite(const std::vector<RecordBatch>& batches,
                                   std::optional<Schema> new_schema,
                                   const CommitOptions& opts) const {
  if (new_schema) RETURN_NOT_OK(new_schema->Validate());
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        const Schema& schema = new_schema ? *new_schema : base.schema;
        RETURN_NOT_OK(CheckBatchesMatch(schema, batches));
        Transaction t;
        t.op = OpType::kOverwrite;
        t.schema = new_schema;
        ASSIGN_OR_RETURN(t.added, WriteFragments(schema, batches));
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::ReplaceRowsStaged(const std::vector<int64_t>& row_addresses,
                                           std::vector<Fragment> staged,
                                           const CommitOptions& opts) const {
  ASSIGN_OR_RETURN(staged, PlaceStaged(std::move(staged)));
  std::vector<uint64_t> addresses;
  for (int64_t a : row_addresses) {
    if (a < 0) return Status::InvalidArgument("row address " + std::to_string(a) + " is negative");
    addresses.push_back(static_cast<uint64_t>(a));
  }
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        Transaction t;
        t.op = OpType::kMergeInsert;
        t.deleted = GroupByFragment(addresses);
        for (const FragmentDeletion& fd : t.deleted) {
          const Fragment* f = base.FindFragment(fd.fragment_id);
          bool live = f != nullptr && fd.rows.rows().back() < f->physical_rows;
          if (live && !f->deletion_path.empty()) {
            ASSIGN_OR_RETURN(DeletionVector existing, ReadDeletions(*f));
            live = !fd.rows.Intersects(existing);
          }
          if (!live) {
            return Status::FailedPrecondition("rows of fragment " + std::to_string(fd.fragment_id) +
                                              " are no longer live at version " +
                                              std::to_string(base.version) +
                                              ": a later commit deleted or rewrote them");
          }
        }
        if (t.deleted.empty() && staged.empty()) return std::optional<Transaction>();
        t.added = staged;
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset::RowChanges> Dataset::RowsChangedSince(const Dataset& earlier) const {
  RowChanges out;
  auto live_rows = [](const Fragment& f, const DeletionVector& dv, std::vector<uint64_t>* into) {
    for (uint32_t r = 0; r < f.physical_rows; ++r) {
      if (!dv.Contains(r)) into->push_back((f.id << 32) | r);
    }
  };
  for (const Fragment& f : earlier.state().fragments) {
    const Fragment* now = state_->FindFragment(f.id);
    if (now != nullptr && now->deletion_path == f.deletion_path) continue;
    ASSIGN_OR_RETURN(DeletionVector before, earlier.ReadDeletions(f));
    if (now == nullptr) {
      live_rows(f, before, &out.removed);
      continue;
    }
    ASSIGN_OR_RETURN(DeletionVector after, ReadDeletions(*now));
    const DeletionVector deleted = after.Minus(before), restored = before.Minus(after);
    for (uint32_t r : deleted.rows()) out.removed.push_back((f.id << 32) | r);
    for (uint32_t r : restored.rows()) out.added.push_back((f.id << 32) | r);
  }
  for (const Fragment& f : state_->fragments) {
    if (earlier.state().FindFragment(f.id) != nullptr) continue;
    ASSIGN_OR_RETURN(DeletionVector dv, ReadDeletions(f));
    live_rows(f, dv, &out.added);
  }
  std::sort(out.added.begin(), out.added.end());
  std::sort(out.removed.begin(), out.removed.end());
  return out;
}

Result<std::vector<uint64_t>> Dataset::RowsRemovedSince(const Dataset& earlier) const {
  ASSIGN_OR_RETURN(RowChanges changes, RowsChangedSince(earlier));
  return std::move(changes.removed);
}

Result<Dataset> Dataset::Restore(uint64_t version, const CommitOptions& opts) const {
  RETURN_NOT_OK(LoadVersion(branch_, version).status());
  return RunOperation(
      [&](const DatasetVersion&) -> Result<std::optional<Transaction>> {
        Transaction t;
        t.op = OpType::kRestore;
        t.restore_version = version;
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

Result<Dataset> Dataset::AddColumn(const Field& field, const CommitOptions& opts) const {
  if (!field.nullable) {
    return Status::InvalidArgument("added column '" + field.name +
                                   "' must be nullable: existing rows have no value for it");
  }
  RETURN_NOT_OK(Schema{{field}}.Validate());
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        if (base.schema.IndexOf(field.name) >= 0) {
          return Status::AlreadyExists("column '" + field.name + "' already exists");
        }
        Transaction t;
        t.op = OpType::kAddColumn;
        t.schema = Schema{{field}};
        return std::optional<Transaction>(std::move(t));
      },
      opts);
}

}  // namespace loam
