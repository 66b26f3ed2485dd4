#include "dataset/dataset.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/refs.h"
#include "format/fragment_reader.h"

namespace loam {

std::string Dataset::Key(std::string_view rel) const {
  return root_.empty() ? std::string(rel) : root_ + "/" + std::string(rel);
}

std::string Dataset::BranchDir(const std::string& branch) {
  return branch.empty() ? std::string() : "tree/" + branch + "/";
}

Dataset Dataset::WithState(DatasetVersion v) const {
  return Dataset(store_, root_, branch_, std::make_shared<const DatasetVersion>(std::move(v)),
                 options_);
}

Dataset Dataset::WithCache(std::shared_ptr<LruCache> cache) const {
  auto options = std::make_shared<DatasetOptions>(*options_);
  options->cache = std::move(cache);
  return Dataset(store_, root_, branch_, state_, std::move(options));
}

Result<Dataset> Dataset::Create(std::shared_ptr<ObjectStore> store, std::string root, Schema schema,
                                DatasetOptions options) {
  RETURN_NOT_OK(schema.Validate());
  while (!root.empty() && root.back() == '/') root.pop_back();
  DatasetVersion v;
  v.version = 1;
  v.timestamp_micros = options.clock->NowMicros();
  v.schema = schema;
  v.txn.op = OpType::kCreate;
  v.txn.id = NewUlidString();
  v.txn.schema = schema;
  auto opts = std::make_shared<const DatasetOptions>(std::move(options));
  Dataset ds(store, root, "", std::make_shared<const DatasetVersion>(v), opts);
  const std::string key = ds.Key("_versions/" + VersionFileName(1));
  Result<ObjectMeta> put = store->PutIfAbsent(key, EncodeVersionFile(v));
  if (put.status().IsAlreadyExists()) {
    return Status::AlreadyExists("a dataset already exists at '" + root + "'");
  }
  RETURN_NOT_OK(put.status());
  return ds;
}

Result<Dataset> Dataset::Open(std::shared_ptr<ObjectStore> store, std::string root,
                              const OpenSpec& spec, DatasetOptions options) {
  while (!root.empty() && root.back() == '/') root.pop_back();
  Dataset probe(store, root, spec.branch, nullptr,
                std::make_shared<const DatasetOptions>(std::move(options)));
  std::string branch = spec.branch;
  if (!branch.empty()) RETURN_NOT_OK(ValidateRefName("branch", branch));
  DatasetVersion v;
  if (!spec.tag.empty()) {
    RETURN_NOT_OK(ValidateRefName("tag", spec.tag));
    Result<std::string> text = store->Get(TagRefKey(probe.Key(""), spec.tag));
    if (text.status().IsNotFound()) return Status::NotFound("no tag '" + spec.tag + "'");
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(TagRef tag, DecodeTagRef(*text, spec.tag));
    branch = tag.branch;
    ASSIGN_OR_RETURN(v, probe.LoadVersion(branch, tag.version));
  } else if (spec.version) {
    ASSIGN_OR_RETURN(v, probe.LoadVersion(branch, *spec.version));
  } else if (spec.as_of_micros) {
    probe.branch_ = branch;
    ASSIGN_OR_RETURN(auto versions, probe.ListVersions());
    std::optional<uint64_t> best;
    for (const VersionSummary& s : versions) {
      if (s.timestamp_micros <= *spec.as_of_micros) best = s.version;
    }
    if (!best) return Status::NotFound("no version committed at or before the given time");
    ASSIGN_OR_RETURN(v, probe.LoadVersion(branch, *best));
  } else {
    ASSIGN_OR_RETURN(v, probe.LoadLatest(branch));
  }
  probe.branch_ = branch;
  return probe.WithState(std::move(v));
}

Result<std::optional<uint64_t>> Dataset::LatestOwnVersion(const std::string& branch,
                                                          bool use_hint) const {
  if (use_hint && store_->ListReadsWholeDirectory()) {
    ASSIGN_OR_RETURN(std::optional<uint64_t> hinted, LatestFromHint(branch));
    if (hinted) return hinted;
  }
  const std::string prefix = Key(BranchDir(branch) + "_versions/");
  std::string after;
  // Ascending key order is newest first; skip foreign names, if any.
  while (true) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(prefix, after, 1));
    for (const ObjectInfo& o : page.objects) {
      if (auto v = ParseVersionFileName(std::string_view(o.key).substr(prefix.size()))) return v;
    }
    if (!page.truncated) return std::optional<uint64_t>();
    after = page.objects.back().key;
  }
}

Result<std::string> Dataset::VersionKey(const std::string& branch, uint64_t version,
                                        std::string* owner, int depth) const {
  if (!branch.empty()) {
    RETURN_NOT_OK(CheckBranchDepth(branch, depth));
    Result<std::string> text = store_->Get(BranchRefKey(Key(""), branch));
    if (text.status().IsNotFound()) return Status::NotFound("no branch '" + branch + "'");
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, branch));
    if (version <= info.parent_version) return VersionKey(info.parent, version, owner, depth + 1);
  }
  if (owner) *owner = branch;
  return Key(BranchDir(branch) + "_versions/" + VersionFileName(version));
}

Result<VersionHeader> Dataset::LoadHeader(const std::string& branch, uint64_t version) const {
  std::string owner;
  ASSIGN_OR_RETURN(std::string key, VersionKey(branch, version, &owner));
  Result<std::string> prefix = store_->GetRange(key, 0, kHeaderReadBytes);
  if (prefix.status().IsNotFound()) return MissingVersion(owner, version);
  RETURN_NOT_OK(prefix.status());
  ASSIGN_OR_RETURN(VersionHeader h, DecodeVersionHeader(*prefix, "version file '" + key + "'"));
  RETURN_NOT_OK(CheckVersionNumber(key, version, h.version));
  return h;
}

Result<VersionHeader> Dataset::ReadLatestHeader(std::shared_ptr<ObjectStore> store,
                                                const std::string& root,
                                                const std::string& branch) {
  Dataset probe(std::move(store), root, branch, nullptr, std::make_shared<DatasetOptions>());
  ASSIGN_OR_RETURN(std::optional<uint64_t> own, probe.LatestOwnVersion(branch));
  if (own) {
    const std::string key = probe.Key(BranchDir(branch) + "_versions/" + VersionFileName(*own));
    ASSIGN_OR_RETURN(std::string prefix, probe.store_->GetRange(key, 0, kHeaderReadBytes));
    ASSIGN_OR_RETURN(VersionHeader h, DecodeVersionHeader(prefix, "version file '" + key + "'"));
    RETURN_NOT_OK(CheckVersionNumber(key, *own, h.version));
    return h;
  }
  if (branch.empty()) return Status::NotFound("no dataset at '" + root + "'");
  Result<std::string> text = probe.store_->Get(BranchRefKey(probe.Key(""), branch));
  if (text.status().IsNotFound()) return Status::NotFound("no branch '" + branch + "'");
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, branch));
  return probe.LoadHeader(info.parent, info.parent_version);
}

Result<VersionHeader> Dataset::ReadHeader(std::shared_ptr<ObjectStore> store,
                                          const std::string& root, const std::string& branch,
                                          uint64_t version) {
  Dataset probe(std::move(store), root, branch, nullptr, std::make_shared<DatasetOptions>());
  return probe.LoadHeader(branch, version);
}

Result<Dataset> Dataset::OpenLatestFrom(std::shared_ptr<ObjectStore> store, std::string root,
                                        const std::string& branch, uint64_t known,
                                        DatasetOptions options) {
  OpenSpec at;
  at.branch = branch;
  at.version = known;
  Result<Dataset> ds = Open(store, root, at, options);
  if (ds.ok()) {
    Result<ObjectMeta> next =
        store->Head(ds->Key(BranchDir(branch) + "_versions/" + VersionFileName(known + 1)));
    if (next.status().IsNotFound()) return ds;
    RETURN_NOT_OK(next.status());
  } else if (!ds.status().IsNotFound()) {
    return ds.status();
  }
  OpenSpec latest;
  latest.branch = branch;
  return Open(std::move(store), std::move(root), latest, std::move(options));
}

Result<DatasetVersion> Dataset::LoadVersion(const std::string& branch, uint64_t version,
                                            int depth) const {
  if (!branch.empty()) {
    RETURN_NOT_OK(CheckBranchDepth(branch, depth));
    Result<std::string> text = store_->Get(BranchRefKey(Key(""), branch));
    if (text.status().IsNotFound()) return Status::NotFound("no branch '" + branch + "'");
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, branch));
    if (version <= info.parent_version) {
      ASSIGN_OR_RETURN(DatasetVersion v, LoadVersion(info.parent, version, depth + 1));
      v.branch = info;
      return v;
    }
  }
  const std::string key = Key(BranchDir(branch) + "_versions/" + VersionFileName(version));
  Result<std::string> bytes = store_->Get(key);
  if (bytes.status().IsNotFound()) return MissingVersion(branch, version);
  RETURN_NOT_OK(bytes.status());
  ASSIGN_OR_RETURN(DatasetVersion v, DecodeVersionFile(*bytes, "version file '" + key + "'"));
  RETURN_NOT_OK(CheckVersionNumber(key, version, v.version));
  return v;
}

Status Dataset::MissingVersion(const std::string& branch, uint64_t version) const {
  const std::string name = branch.empty() ? "main" : "branch '" + branch + "'";
  Status missing =
      Status::NotFound("version " + std::to_string(version) + " of " + name + " does not exist");
  const std::string prefix = Key(BranchDir(branch) + "_versions/");
  Result<std::vector<ObjectInfo>> listed = store_->ListAll(prefix);
  if (!listed.ok()) return missing;
  std::set<uint64_t> present;
  for (const ObjectInfo& o : *listed) {
    if (auto v = ParseVersionFileName(std::string_view(o.key).substr(prefix.size()))) {
      present.insert(*v);
    }
  }
  if (present.empty() || *present.rbegin() < version) return missing;
  // The oldest readable version: the bottom of the unbroken run down from
  // the latest (a file kept below it for its inline parts is not a version
  // one may travel to).
  uint64_t oldest = *present.rbegin();
  while (oldest > 1 && present.count(oldest - 1)) --oldest;
  if (version >= oldest) return missing;
  return Status::NotFound("version " + std::to_string(version) + " of " + name +
                          " is past the time-travel window and was removed; the oldest " +
                          "readable version is " + std::to_string(oldest))
      .WithErrorCode(ErrorCode::kVersionExpired)
      .WithDetail("oldestVersion", std::to_string(oldest));
}

Result<DatasetVersion> Dataset::LoadLatest(const std::string& branch) const {
  ASSIGN_OR_RETURN(std::optional<uint64_t> own, LatestOwnVersion(branch));
  if (own) return LoadVersion(branch, *own);
  if (branch.empty()) return Status::NotFound("no dataset at '" + root_ + "'");
  Result<std::string> text = store_->Get(BranchRefKey(Key(""), branch));
  if (text.status().IsNotFound()) return Status::NotFound("no branch '" + branch + "'");
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, branch));
  return LoadVersion(branch, info.parent_version);
}

Result<Dataset> Dataset::Latest() const {
  ASSIGN_OR_RETURN(DatasetVersion v, LoadLatest(branch_));
  return WithState(std::move(v));
}

Result<Dataset> Dataset::CheckoutVersion(uint64_t version) const {
  ASSIGN_OR_RETURN(DatasetVersion v, LoadVersion(branch_, version));
  return WithState(std::move(v));
}

Result<std::vector<VersionSummary>> Dataset::ListVersions() const {
  std::vector<VersionSummary> out;
  std::string branch = branch_;
  uint64_t max_version = UINT64_MAX;
  // Walk up the branch chain: own versions, then the parent's up to the fork.
  for (int depth = 0;; ++depth) {
    RETURN_NOT_OK(CheckBranchDepth(branch, depth));
    const std::string prefix = Key(BranchDir(branch) + "_versions/");
    ASSIGN_OR_RETURN(auto objects, store_->ListAll(prefix));
    for (const ObjectInfo& o : objects) {
      auto v = ParseVersionFileName(std::string_view(o.key).substr(prefix.size()));
      if (!v || *v > max_version) continue;
      ASSIGN_OR_RETURN(std::string full, store_->Get(o.key));
      ASSIGN_OR_RETURN(DatasetVersion dv, DecodeVersionFile(full, o.key));
      RETURN_NOT_OK(CheckVersionNumber(o.key, *v, dv.version));
      out.push_back({dv.version, dv.timestamp_micros, dv.txn.op, dv.live_rows()});
    }
    if (branch.empty()) break;
    ASSIGN_OR_RETURN(std::string text, store_->Get(BranchRefKey(Key(""), branch)));
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(text, branch));
    branch = info.parent;
    max_version = info.parent_version;
  }
  std::sort(out.begin(), out.end(),
            [](const VersionSummary& a, const VersionSummary& b) { return a.version < b.version; });
  return out;
}

Result<std::vector<RecordBatch>> Dataset::Scan(const ScanSpec& spec) const {
  return ScanVersion(*state_, spec);
}

Result<RecordBatch> Dataset::ReadAll(const ScanSpec& spec) const {
  ASSIGN_OR_RETURN(ScanShape shape, ShapeOf(*state_, spec));
  ASSIGN_OR_RETURN(std::vector<RecordBatch> parts, Scan(spec));
  return ConcatenateBatches(shape.out_schema, parts);
}

Result<Dataset::ScanShape> Dataset::ShapeOf(const DatasetVersion& v, const ScanSpec& spec) {
  ScanShape shape;
  if (spec.columns.empty()) {
    for (size_t i = 0; i < v.schema.fields.size(); ++i)
      shape.projected.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < spec.columns.size(); ++i) {
    const std::string& c = spec.columns[i];
    const int idx = v.schema.IndexOf(c);
    if (idx < 0) return Status::InvalidArgument("no column '" + c + "' in the dataset");
    if (std::find(spec.columns.begin(), spec.columns.begin() + i, c) != spec.columns.begin() + i) {
      return Status::InvalidArgument("column '" + c + "' is named twice");
    }
    shape.projected.push_back(idx);
  }
  for (int i : shape.projected) shape.out_schema.fields.push_back(v.schema.fields[i]);
  if (spec.with_row_address) {
    shape.out_schema.fields.push_back({kRowAddressColumn, DataType::Int64(), false});
  }
  return shape;
}

namespace {

Column NullColumn(const DataType& type, int64_t rows) {
  Column c(type);
  for (int64_t i = 0; i < rows; ++i) c.AppendNull();
  return c;
}

std::span<const Fragment> SelectedFragments(const DatasetVersion& v, const ScanSpec& spec) {
  std::span<const Fragment> all(v.fragments);
  if (!spec.fragment_range) return all;
  const size_t first = std::min(spec.fragment_range->first, all.size());
  const size_t last = std::clamp(spec.fragment_range->second, first, all.size());
  return all.subspan(first, last - first);
}

// The index key ranges that hold every row matching `p` on a column of
// type `t` (kIsNull: none; an index holds no nulls).
using IndexKeyRange = std::pair<std::optional<std::string>, std::optional<std::string>>;
std::vector<IndexKeyRange> IndexKeyRanges(const DataType& t, const Predicate& p) {
  std::vector<IndexKeyRange> ranges;
  switch (p.op) {
    case CompareOp::kEq:
    case CompareOp::kIn:
      for (const Value& x : p.values)
        ranges.push_back({EncodeIndexKey(t, x), EncodeIndexKey(t, x)});
      break;
    case CompareOp::kLt:
    case CompareOp::kLe:
      ranges.push_back({std::nullopt, EncodeIndexKey(t, p.values[0])});
      break;
    case CompareOp::kGt:
    case CompareOp::kGe:
      ranges.push_back({EncodeIndexKey(t, p.values[0]), std::nullopt});
      break;
    case CompareOp::kIsNull:
      break;
  }
  return ranges;
}

}  // namespace

Result<std::map<uint64_t, std::vector<uint64_t>>> Dataset::IndexHits(
    const std::vector<const IndexMeta*>& indexes, const Predicate& p, ScanStats* stats) const {
  std::map<uint64_t, std::vector<uint64_t>> hits;
  IndexLookupStats lookup;
  const std::vector<IndexKeyRange> ranges = IndexKeyRanges(indexes[0]->key_type, p);
  for (const IndexMeta* m : indexes) {
    if (m->entries == 0) continue;
    for (const auto& [lo, hi] : ranges) {
      ASSIGN_OR_RETURN(
          std::vector<uint64_t> addrs,
          LookupBTreeRange(*store_, Key(m->path), *m, lo, hi, &lookup, options_->cache.get()));
      for (uint64_t a : addrs) {
        // An entry of a fragment another index covers now is not this one's.
        if (m->Covers(a >> 32)) hits[a >> 32].push_back(a & 0xffffffffu);
      }
    }
  }
  for (auto& [frag, offsets] : hits) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  }
  if (stats) stats->index_pages_read += lookup.pages_read;
  return hits;
}

Result<std::vector<RecordBatch>> Dataset::ScanVersion(const DatasetVersion& v,
                                                      const ScanSpec& spec) const {
  ASSIGN_OR_RETURN(const ScanShape shape, ShapeOf(v, spec));
  for (const Predicate& p : spec.where) RETURN_NOT_OK(p.Validate(v.schema));
  // The indices on a predicate column (each covering its own fragments)
  // name the matching rows of the fragments they cover; the rest (their
  // uncovered tail) is scanned.
  std::vector<const IndexMeta*> indexes;
  const Predicate* indexed = nullptr;
  for (const Predicate& p : spec.where) {
    if (!spec.use_index || p.op == CompareOp::kIsNull) continue;
    for (const IndexMeta& m : v.indices) {
      const int c = v.schema.IndexOf(m.column);
      if (m.column == p.column && c >= 0 && v.schema.fields[c].type == m.key_type &&
          m.CoversFrom(spec.min_fragment_id)) {
        indexes.push_back(&m);
      }
    }
    if (!indexes.empty()) {
      indexed = &p;
      break;
    }
  }
  const bool index = !indexes.empty();
  auto covered = [&](uint64_t id) {
    return std::any_of(indexes.begin(), indexes.end(),
                       [&](const IndexMeta* m) { return m->Covers(id); });
  };
  std::map<uint64_t, std::vector<uint64_t>> hits;  // fragment -> ascending offsets
  if (index) {
    ASSIGN_OR_RETURN(hits, IndexHits(indexes, *indexed, spec.stats));
  }
  std::vector<RecordBatch> out;
  int64_t produced = 0;
  for (const Fragment& frag : SelectedFragments(v, spec)) {
    if (spec.limit && produced >= *spec.limit) break;
    if (frag.id < spec.min_fragment_id) continue;
    if (index && covered(frag.id)) {
      auto it = hits.find(frag.id);
      if (it == hits.end()) continue;  // the index proves no row matches
      if (spec.stats) ++spec.stats->fragments_taken;
      RETURN_NOT_OK(ScanFragment(v, frag, spec, shape, &it->second, &out, &produced));
    } else if (!(index && spec.indexed_fragments_only)) {
      if (spec.stats) ++spec.stats->fragments_scanned;
      RETURN_NOT_OK(ScanFragment(v, frag, spec, shape, nullptr, &out, &produced));
    }
  }
  return out;
}

Status Dataset::ScanEach(const ScanSpec& spec,
                         const std::function<Status(const RecordBatch&)>& each) const {
  const DatasetVersion& v = *state_;
  ASSIGN_OR_RETURN(const ScanShape shape, ShapeOf(v, spec));
  for (const Predicate& p : spec.where) RETURN_NOT_OK(p.Validate(v.schema));
  int64_t produced = 0;  // across fragments: spec.limit is the scan's
  for (const Fragment& frag : SelectedFragments(v, spec)) {
    if (spec.limit && produced >= *spec.limit) break;
    if (frag.id < spec.min_fragment_id) continue;
    std::vector<RecordBatch> out;
    RETURN_NOT_OK(ScanFragment(v, frag, spec, shape, nullptr, &out, &produced));
    for (const RecordBatch& b : out) RETURN_NOT_OK(each(b));
  }
  return Status::OK();
}

Status Dataset::TakeEach(const std::vector<uint64_t>& row_addresses, const ScanSpec& spec,
                         const std::function<Status(const RecordBatch&)>& each) const {
  if (!spec.where.empty() || spec.limit || spec.min_fragment_id > 0) {
    return Status::InvalidArgument("TakeEach takes no predicates, no limit and no fragment floor");
  }
  const DatasetVersion& v = *state_;
  ASSIGN_OR_RETURN(const ScanShape shape, ShapeOf(v, spec));
  size_t i = 0;
  while (i < row_addresses.size()) {
    const uint64_t id = row_addresses[i] >> 32;
    const Fragment* frag = v.FindFragment(id);
    std::vector<uint64_t> offsets;
    for (; i < row_addresses.size() && (row_addresses[i] >> 32) == id; ++i) {
      const uint64_t offset = row_addresses[i] & 0xffffffffu;
      if (frag == nullptr || offset >= frag->physical_rows ||
          (i > 0 && row_addresses[i] <= row_addresses[i - 1])) {
        return Status::InvalidArgument("row address " + std::to_string(row_addresses[i]) +
                                       " is not in version " + std::to_string(v.version) +
                                       " or not ascending");
      }
      offsets.push_back(offset);
    }
    std::vector<RecordBatch> out;
    int64_t produced = 0;
    RETURN_NOT_OK(ScanFragment(v, *frag, spec, shape, &offsets, &out, &produced));
    for (const RecordBatch& b : out) RETURN_NOT_OK(each(b));
  }
  return Status::OK();
}

Result<DeletionVector> Dataset::ReadDeletions(const Fragment& f) const {
  if (f.deletion_path.empty()) return DeletionVector();
  return ReadDeletionFileAt(*store_, Key(f.deletion_path), f.deletion_offset, f.deletion_size,
                            f.physical_rows);
}

namespace {

// The rows of `part` (whose last column holds row offsets) that no
// deletion removed and that match `filter` (rows taken by address; a scan's
// reader filtered already).
std::vector<int64_t> KeptRows(const RecordBatch& part, const DeletionVector& dv,
                              const std::vector<Predicate>* filter) {
  const Column& offsets = part.columns.back();
  std::vector<int64_t> keep;
  keep.reserve(part.num_rows());
  for (int64_t r = 0; r < part.num_rows(); ++r) {
    if (!dv.empty() && dv.Contains(static_cast<uint32_t>(offsets.GetInt64(r)))) continue;
    bool match = true;
    if (filter != nullptr) {
      for (const Predicate& p : *filter) {
        match = match && ValueMatches(p, part.columns[part.schema.IndexOf(p.column)].GetValue(r));
      }
    }
    if (match) keep.push_back(r);
  }
  return keep;
}

// The `keep` rows of `part` as the scan's output: its projected columns
// (a column the fragment predates as nulls), then the row addresses if asked.
RecordBatch ShapePart(RecordBatch& part, const std::vector<int64_t>& keep, const Schema& schema,
                      const std::vector<int>& projected, const Schema& out_schema,
                      uint64_t fragment_id, bool with_row_address) {
  const Column& offsets = part.columns.back();
  RecordBatch batch;
  batch.schema = out_schema;
  const bool all = static_cast<int64_t>(keep.size()) == part.num_rows();
  std::vector<bool> moved(part.columns.size(), false);
  auto select = [&](int pi) {
    Column& c = part.columns[pi];
    if (all && !moved[pi]) {  // the common case: hand the decoded column over
      moved[pi] = true;
      return std::move(c);
    }
    Column t(c.type());
    t.AppendRows(c, keep);
    return t;
  };
  for (int i : projected) {
    const int pi = part.schema.IndexOf(schema.fields[i].name);
    batch.columns.push_back(pi < 0 ? NullColumn(schema.fields[i].type, keep.size()) : select(pi));
  }
  if (with_row_address) {
    Column addr(DataType::Int64());
    for (int64_t r : keep) {
      addr.AppendInt64(static_cast<int64_t>(fragment_id << 32) | offsets.GetInt64(r));
    }
    batch.columns.push_back(std::move(addr));
  }
  return batch;
}

}  // namespace

Result<std::shared_ptr<const DeletionVector>> Dataset::CachedDeletions(const Fragment& frag) const {
  LruCache* cache = options_->cache.get();
  const std::string key =
      "dv:" + Key(frag.deletion_path) + "@" + std::to_string(frag.deletion_offset);
  std::shared_ptr<const DeletionVector> dv;
  if (cache) dv = cache->Get<DeletionVector>(key);
  if (!dv) {
    ASSIGN_OR_RETURN(DeletionVector loaded, ReadDeletions(frag));
    dv = std::make_shared<const DeletionVector>(std::move(loaded));
    if (cache) cache->Put<DeletionVector>(key, dv, 64 + 4 * dv->size());
  }
  return dv;
}

Status Dataset::ScanFragment(const DatasetVersion& v, const Fragment& frag, const ScanSpec& spec,
                             const ScanShape& shape, const std::vector<uint64_t>* take,
                             std::vector<RecordBatch>* out, int64_t* produced) const {
  const std::vector<int>& projected = shape.projected;
  // A staged fragment kept in memory (WriteFragment) is in no object yet, and
  // nothing of it is cached (the cache is keyed by place).
  const bool in_memory = frag.data_path.empty() && frag.inline_bytes;
  const std::string where = in_memory ? "staged in memory" : frag.data_path;
  LruCache* cache = in_memory ? nullptr : options_->cache.get();
  ASSIGN_OR_RETURN(auto reader, in_memory
                                    ? FragmentReader::OpenBytes(frag.inline_bytes, where)
                                    : FragmentReader::OpenAt(store_.get(), Locate(frag), cache));
  const Schema& fs = reader->schema();
  if (reader->num_rows() != frag.physical_rows) {
    return Status::DataLoss("fragment file '" + where + "' has " +
                            std::to_string(reader->num_rows()) + " rows, version says " +
                            std::to_string(frag.physical_rows));
  }
  // A column added after this fragment was written reads as null.
  std::vector<Predicate> file_preds;
  for (const Predicate& p : spec.where) {
    if (fs.IndexOf(p.column) >= 0) {
      file_preds.push_back(p);
    } else if (p.op != CompareOp::kIsNull) {
      return Status::OK();  // null never matches
    }
  }
  std::vector<std::string> fetch;
  auto want = [&](const std::string& name) {
    if (fs.IndexOf(name) >= 0 && std::find(fetch.begin(), fetch.end(), name) == fetch.end()) {
      fetch.push_back(name);
    }
  };
  for (int i : projected) {
    const Field& f = v.schema.fields[i];
    const int fi = fs.IndexOf(f.name);
    if (fi >= 0 && !(fs.fields[fi].type == f.type)) {
      return Status::DataLoss("fragment '" + where + "' stores column '" + f.name + "' as " +
                              fs.fields[fi].type.ToString());
    }
    want(f.name);
  }
  if (take) {
    for (const Predicate& p : file_preds) want(p.column);  // filtered here, not in the reader
  }
  if (fetch.empty()) fetch.push_back(fs.fields[0].name);
  static const DeletionVector kNoDeletions;
  std::shared_ptr<const DeletionVector> dv_holder;
  if (!frag.deletion_path.empty()) {
    ASSIGN_OR_RETURN(dv_holder, CachedDeletions(frag));
  }
  const DeletionVector& dv = dv_holder ? *dv_holder : kNoDeletions;
  std::vector<RecordBatch> parts;
  if (take) {
    ASSIGN_OR_RETURN(RecordBatch taken, reader->Take(*take, fetch, nullptr, cache));
    parts.push_back(std::move(taken));
  } else {
    FragmentScanOptions fo;
    fo.columns = fetch;
    fo.predicates = file_preds;
    fo.with_row_offsets = true;
    ASSIGN_OR_RETURN(parts, reader->Scan(fo));
  }
  for (RecordBatch& part : parts) {
    std::vector<int64_t> keep = KeptRows(part, dv, take ? &file_preds : nullptr);
    if (spec.limit) {
      const int64_t room = *spec.limit - *produced;
      if (static_cast<int64_t>(keep.size()) > room) keep.resize(room);
    }
    if (keep.empty()) continue;
    *produced += static_cast<int64_t>(keep.size());
    out->push_back(ShapePart(part, keep, v.schema, projected, shape.out_schema, frag.id,
                             spec.with_row_address));
  }
  return Status::OK();
}

}  // namespace loam
