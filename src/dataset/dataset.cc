#include "dataset/dataset.h"

#include <algorithm>

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

Result<Dataset> Dataset::Create(std::shared_ptr<ObjectStore> store, std::string root,
                                Schema schema, DatasetOptions options) {
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

Result<std::optional<uint64_t>> Dataset::LatestOwnVersion(const std::string& branch) const {
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

Result<DatasetVersion> Dataset::LoadVersion(const std::string& branch, uint64_t version) const {
  if (!branch.empty()) {
    Result<std::string> text = store_->Get(BranchRefKey(Key(""), branch));
    if (text.status().IsNotFound()) return Status::NotFound("no branch '" + branch + "'");
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, branch));
    if (version <= info.parent_version) {
      ASSIGN_OR_RETURN(DatasetVersion v, LoadVersion(info.parent, version));
      v.branch = info;
      return v;
    }
  }
  const std::string key = Key(BranchDir(branch) + "_versions/" + VersionFileName(version));
  Result<std::string> bytes = store_->Get(key);
  if (bytes.status().IsNotFound()) {
    return Status::NotFound("version " + std::to_string(version) + " of " +
                            (branch.empty() ? "main" : "branch '" + branch + "'") +
                            " does not exist (or was cleaned up)");
  }
  RETURN_NOT_OK(bytes.status());
  ASSIGN_OR_RETURN(DatasetVersion v, DecodeVersionFile(*bytes, "version file '" + key + "'"));
  if (v.version != version) return Status::DataLoss("'" + key + "' holds version " + std::to_string(v.version));
  return v;
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
  while (true) {
    const std::string prefix = Key(BranchDir(branch) + "_versions/");
    ASSIGN_OR_RETURN(auto objects, store_->ListAll(prefix));
    for (const ObjectInfo& o : objects) {
      auto v = ParseVersionFileName(std::string_view(o.key).substr(prefix.size()));
      if (!v || *v > max_version) continue;
      ASSIGN_OR_RETURN(std::string full, store_->Get(o.key));
      ASSIGN_OR_RETURN(DatasetVersion dv, DecodeVersionFile(full, o.key));
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
  ASSIGN_OR_RETURN(std::vector<RecordBatch> parts, Scan(spec));
  Schema schema;
  if (!parts.empty()) {
    schema = parts[0].schema;
  } else {
    for (const Field& f : state_->schema.fields) {
      if (spec.columns.empty() ||
          std::find(spec.columns.begin(), spec.columns.end(), f.name) != spec.columns.end()) {
        schema.fields.push_back(f);
      }
    }
    if (!spec.columns.empty()) {
      Schema ordered;
      for (const auto& c : spec.columns) ordered.fields.push_back(schema.fields[schema.IndexOf(c)]);
      schema = ordered;
    }
    if (spec.with_row_address) schema.fields.push_back({kRowAddressColumn, DataType::Int64(), false});
  }
  return ConcatenateBatches(schema, parts);
}

namespace {

Column NullColumn(const DataType& type, int64_t rows) {
  Column c(type);
  for (int64_t i = 0; i < rows; ++i) c.AppendNull();
  return c;
}

}  // namespace

Result<std::vector<RecordBatch>> Dataset::ScanVersion(const DatasetVersion& v,
                                                      const ScanSpec& spec) const {
  std::vector<int> projected;
  if (spec.columns.empty()) {
    for (size_t i = 0; i < v.schema.fields.size(); ++i) projected.push_back(static_cast<int>(i));
  } else {
    for (const std::string& c : spec.columns) {
      const int i = v.schema.IndexOf(c);
      if (i < 0) return Status::InvalidArgument("no column '" + c + "' in the dataset");
      projected.push_back(i);
    }
  }
  for (const Predicate& p : spec.where) RETURN_NOT_OK(p.Validate(v.schema));
  Schema out_schema;
  for (int i : projected) out_schema.fields.push_back(v.schema.fields[i]);
  if (spec.with_row_address) out_schema.fields.push_back({kRowAddressColumn, DataType::Int64(), false});

  std::vector<RecordBatch> out;
  int64_t produced = 0;
  for (const Fragment& frag : v.fragments) {
    if (spec.limit && produced >= *spec.limit) break;
    ASSIGN_OR_RETURN(auto reader, FragmentReader::Open(store_.get(), Key(frag.data_path), frag.data_size));
    const Schema& fs = reader->schema();
    if (reader->num_rows() != frag.physical_rows) {
      return Status::DataLoss("fragment file '" + frag.data_path + "' has " +
                              std::to_string(reader->num_rows()) + " rows, version says " +
                              std::to_string(frag.physical_rows));
    }
    // A column added after this fragment was written reads as null.
    FragmentScanOptions fo;
    fo.with_row_offsets = true;
    bool skip = false;
    for (const Predicate& p : spec.where) {
      if (fs.IndexOf(p.column) >= 0) {
        fo.predicates.push_back(p);
      } else if (p.op != CompareOp::kIsNull) {
        skip = true;  // null never matches
      }
    }
    if (skip) continue;
    for (int i : projected) {
      const Field& f = v.schema.fields[i];
      const int fi = fs.IndexOf(f.name);
      if (fi < 0) continue;
      if (!(fs.fields[fi].type == f.type)) {
        return Status::DataLoss("fragment '" + frag.data_path + "' stores column '" + f.name +
                                "' as " + fs.fields[fi].type.ToString());
      }
      fo.columns.push_back(f.name);
    }
    if (fo.columns.empty()) fo.columns.push_back(fs.fields[0].name);
    DeletionVector dv;
    if (!frag.deletion_path.empty()) {
      ASSIGN_OR_RETURN(dv, ReadDeletionFile(*store_, Key(frag.deletion_path)));
    }
    ASSIGN_OR_RETURN(std::vector<RecordBatch> parts, reader->Scan(fo));
    for (RecordBatch& part : parts) {
      const Column& offsets = part.columns.back();
      std::vector<int64_t> keep;
      keep.reserve(part.num_rows());
      for (int64_t r = 0; r < part.num_rows(); ++r) {
        if (!dv.Contains(static_cast<uint32_t>(offsets.GetInt64(r)))) keep.push_back(r);
      }
      if (spec.limit) {
        const int64_t room = *spec.limit - produced;
        if (static_cast<int64_t>(keep.size()) > room) keep.resize(room);
      }
      if (keep.empty()) continue;
      RecordBatch batch;
      batch.schema = out_schema;
      const bool all = static_cast<int64_t>(keep.size()) == part.num_rows();
      auto take = [&](const Column& c) {
        if (all) return c;
        Column t(c.type());
        for (int64_t r : keep) t.AppendFrom(c, r, 1);
        return t;
      };
      for (int i : projected) {
        const int pi = part.schema.IndexOf(v.schema.fields[i].name);
        batch.columns.push_back(pi < 0 ? NullColumn(v.schema.fields[i].type, keep.size())
                                       : take(part.columns[pi]));
      }
      if (spec.with_row_address) {
        Column addr(DataType::Int64());
        for (int64_t r : keep) {
          addr.AppendInt64(static_cast<int64_t>(frag.id << 32) | offsets.GetInt64(r));
        }
        batch.columns.push_back(std::move(addr));
      }
      produced += static_cast<int64_t>(keep.size());
      out.push_back(std::move(batch));
    }
  }
  return out;
}

}  // namespace loam
