#include "manifest/manifest.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "format/fragment_reader.h"
#include "manifest/manifest_internal.h"

namespace loam {
namespace {

using json = nlohmann::json;
using manifest_internal::DirectoryOf;
using manifest_internal::FileOf;
using manifest_internal::FragmentRows;
using manifest_internal::kPublishBackoff;
using manifest_internal::PartitionReader;
using manifest_internal::PartitionRows;
using manifest_internal::RegroupPartitions;
using manifest_internal::SettleTombstoneLevels;

// Journal rows of one commit that share its partitions' fragment; more go
// in a fragment of their own.
constexpr size_t kJournalRowsBesideHeads = 64;

}  // namespace

std::string WithCommit(const std::string& metadata, const std::string& commit_id,
                       uint64_t manifest_version) {
  json j = ParseJson(metadata);
  if (j.is_discarded() || !j.is_object()) j = json::object();
  j["commit"] = commit_id;
  j["manifest_version"] = manifest_version;
  return j.dump();
}

uint64_t ManifestVersionOf(const ManifestRow& row) {
  json j = ParseJson(row.metadata);
  return j.is_object() && j.contains("manifest_version") &&
                 j["manifest_version"].is_number_unsigned()
             ? j["manifest_version"].get<uint64_t>()
             : 0;
}

// --- PublishView -------------------------------------------------------------

Result<std::vector<ManifestRow>> PublishView::Partition(uint32_t p) {
  auto it = partitions_.find(p);
  if (it == partitions_.end()) {
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, manifest_->ReadPartition(base_, p));
    it = partitions_.emplace(p, std::move(rows)).first;
  }
  return it->second;
}

Result<std::optional<ManifestRow>> PublishView::Find(const std::string& object_id,
                                                     uint32_t partition) {
  ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, Partition(partition));
  for (ManifestRow& r : rows) {
    if (r.object_id == object_id) return std::optional<ManifestRow>(std::move(r));
  }
  return std::optional<ManifestRow>();
}

Result<std::optional<TableHead>> PublishView::TableHeadOf(int64_t sid) {
  ASSIGN_OR_RETURN(auto row, Find(TableHeadId(sid), LiveHeadPartition(sid, base_.dir.format)));
  if (!row && base_.dir.format >= kFirstHashedFormat) {
    for (uint32_t p : TombstoneHeadPartitions(sid, base_.dir.format)) {
      ASSIGN_OR_RETURN(row, Find(TableHeadId(sid), p));
      if (row) break;
    }
  }
  if (!row) return std::optional<TableHead>();
  ASSIGN_OR_RETURN(TableHead h, ParseTableHead(*row));
  return std::optional<TableHead>(std::move(h));
}

Result<std::optional<GraphHead>> PublishView::GraphHeadOf(const std::string& branch) {
  ASSIGN_OR_RETURN(auto row, Find(GraphHeadId(branch), kGraphPartition));
  if (!row) return std::optional<GraphHead>();
  ASSIGN_OR_RETURN(GraphHead g, ParseGraphHead(*row));
  return std::optional<GraphHead>(std::move(g));
}

// --- Manifest: opening and reading ---------------------------------------------

Manifest::Manifest(std::shared_ptr<ObjectStore> store, std::string workspace,
                   ManifestOptions options)
    : store_(std::move(store)), workspace_(std::move(workspace)), options_(std::move(options)) {
  while (!workspace_.empty() && workspace_.back() == '/') workspace_.pop_back();
  if (options_.cache_bytes > 0) cache_ = std::make_shared<LruCache>(options_.cache_bytes);
  // Manifest files are immutable: journal look-ups keep index pages and
  // fragment pages in the same cache.
  if (cache_ && !options_.dataset.cache) options_.dataset.cache = cache_;
}

std::string Manifest::Root() const {
  return workspace_.empty() ? "__manifest" : workspace_ + "/__manifest";
}

Result<std::shared_ptr<Manifest>> Manifest::Create(std::shared_ptr<ObjectStore> store,
                                                   std::string workspace, ManifestOptions options) {
  std::shared_ptr<Manifest> m(new Manifest(std::move(store), std::move(workspace), options));
  RETURN_NOT_OK(
      Dataset::Create(m->store_, m->Root(), ManifestSchema(), m->options_.dataset).status());
  return m;
}

Result<std::shared_ptr<Manifest>> Manifest::Open(std::shared_ptr<ObjectStore> store,
                                                 std::string workspace, ManifestOptions options) {
  std::shared_ptr<Manifest> m(new Manifest(std::move(store), std::move(workspace), options));
  Result<VersionHeader> h = Dataset::ReadLatestHeader(m->store_, m->Root(), "");
  if (h.status().IsNotFound()) {
    return Status::NotFound("no Loam workspace at '" + m->workspace_ +
                            "' (no __manifest); run init");
  }
  RETURN_NOT_OK(h.status());
  RETURN_NOT_OK(DirectoryOf(h->app_section).status());
  return m;
}

Result<ManifestVersion> Manifest::FromHeader(const std::string& branch,
                                             const VersionHeader& h) const {
  ManifestVersion v;
  v.branch = branch;
  v.version = h.version;
  v.timestamp_micros = h.timestamp_micros;
  ASSIGN_OR_RETURN(v.dir, DirectoryOf(h.app_section));
  return v;
}

Result<ManifestVersion> Manifest::Current(const std::string& branch) const {
  ASSIGN_OR_RETURN(VersionHeader h, Dataset::ReadLatestHeader(store_, Root(), branch));
  return FromHeader(branch, h);
}

Result<ManifestVersion> Manifest::CurrentForWriter(const std::string& branch) {
  std::optional<Dataset> cached;
  if (branch.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = writer_base_.find(branch);
    if (it != writer_base_.end()) cached = it->second;
  }
  if (cached) {
    const std::string next = Root() + "/_versions/" + VersionFileName(cached->version() + 1);
    Result<ObjectMeta> probe = store_->Head(next);
    if (probe.status().IsNotFound()) {
      ManifestVersion v;
      v.branch = branch;
      v.version = cached->version();
      v.timestamp_micros = cached->state().timestamp_micros;
      ASSIGN_OR_RETURN(v.dir, DirectoryOf(cached->state().app_section));
      return v;
    }
    RETURN_NOT_OK(probe.status().ok() ? Status::OK() : probe.status());
  }
  return Current(branch);
}

Result<ManifestVersion> Manifest::At(const std::string& branch, uint64_t version) const {
  ASSIGN_OR_RETURN(VersionHeader h, Dataset::ReadHeader(store_, Root(), branch, version));
  return FromHeader(branch, h);
}

std::string Manifest::FileCacheKey(const HeadDirectory::File& f) const {
  return "manifest-file:" + Root() + "/" + f.path + "@" + std::to_string(f.offset);
}

Result<std::shared_ptr<const RecordBatch>> Manifest::ReadFile(const HeadDirectory::File& f,
                                                              ManifestReadStats* stats) const {
  const std::string cache_key = FileCacheKey(f);
  if (cache_) {
    if (auto hit = cache_->Get<RecordBatch>(cache_key)) return hit;
  }
  ASSIGN_OR_RETURN(auto reader,
                   FragmentReader::OpenAt(store_.get(), {Root() + "/" + f.path, f.offset, f.size}));
  ASSIGN_OR_RETURN(RecordBatch batch, reader->ReadAll());
  if (stats) {
    stats->partition_files_read++;
    stats->file_rows_decoded += batch.num_rows();
  }
  auto shared = std::make_shared<const RecordBatch>(std::move(batch));
  if (cache_) cache_->Put<RecordBatch>(cache_key, shared, f.size * 4 + 1024);
  return shared;
}

Result<std::vector<ManifestRow>> Manifest::ReadPartitionUnchecked(const ManifestVersion& v,
                                                                  uint32_t partition) const {
  return ReadPartitionRows(v, partition, nullptr);
}

Result<std::vector<ManifestRow>> Manifest::ReadPartitionRows(const ManifestVersion& v,
                                                             uint32_t partition,
                                                             ManifestReadStats* stats) const {
  if (partition >= kNumPartitions) return Status::InvalidArgument("no such partition");
  const HeadDirectory::Slot& slot = v.dir.slots[partition];
  if (slot.file < 0) return std::vector<ManifestRow>();
  const HeadDirectory::File& file = v.dir.files[slot.file];
  ASSIGN_OR_RETURN(std::shared_ptr<const RecordBatch> batch, ReadFile(file, stats));
  Result<std::vector<ManifestRow>> rows = BatchToRows(*batch, slot.offset, slot.count);
  if (!rows.ok()) {
    return rows.status().WithContext("manifest partition " + std::to_string(partition));
  }
  if (stats) stats->rows_decoded += static_cast<int>(rows->size());
  return rows;
}

Result<std::vector<ManifestRow>> Manifest::ReadPartition(const ManifestVersion& v,
                                                         uint32_t partition,
                                                         ManifestReadStats* stats) const {
  Result<std::vector<ManifestRow>> rows = ReadPartitionRows(v, partition, stats);
  RETURN_NOT_OK(rows.status());
  std::set<std::string> seen;
  for (const ManifestRow& r : *rows) {
    if (!BelongsIn(r, partition, v.dir.format)) {
      return Status::DataLoss("manifest row '" + r.object_id + "' is in partition " +
                              std::to_string(partition) + ", where it does not belong");
    }
    if (!seen.insert(r.object_id).second) {
      return Status::DataLoss("manifest row '" + r.object_id + "' appears twice in partition " +
                              std::to_string(partition) + " (duplicate head)");
    }
  }
  return rows;
}

Result<std::optional<TableHead>> Manifest::ReadTableHead(const ManifestVersion& v, int64_t sid,
                                                         ManifestReadStats* stats) const {
  std::vector<uint32_t> where = {LiveHeadPartition(sid, v.dir.format)};
  if (v.dir.format >= kFirstHashedFormat) {  // a dropped table's, newest level first
    for (uint32_t p : TombstoneHeadPartitions(sid, v.dir.format)) where.push_back(p);
  }
  for (uint32_t p : where) {
    ASSIGN_OR_RETURN(auto rows, ReadPartition(v, p, stats));
    for (const ManifestRow& r : rows) {
      if (r.object_id != TableHeadId(sid)) continue;
      ASSIGN_OR_RETURN(TableHead h, ParseTableHead(r));
      return std::optional<TableHead>(std::move(h));
    }
  }
  return std::optional<TableHead>();
}

Result<std::optional<GraphHead>> Manifest::ReadGraphHead(const ManifestVersion& v,
                                                         ManifestReadStats* stats) const {
  ASSIGN_OR_RETURN(auto rows, ReadPartition(v, kGraphPartition, stats));
  for (const ManifestRow& r : rows) {
    if (r.object_id != GraphHeadId(v.branch)) continue;
    ASSIGN_OR_RETURN(GraphHead g, ParseGraphHead(r));
    return std::optional<GraphHead>(std::move(g));
  }
  return std::optional<GraphHead>();
}

Result<Dataset> Manifest::OpenDataset(const std::string& branch,
                                      std::optional<uint64_t> version) const {
  OpenSpec spec;
  spec.branch = branch;
  spec.version = version;
  return Dataset::Open(store_, Root(), spec, options_.dataset);
}

// --- publishing -----------------------------------------------------------------

Result<Dataset> Manifest::WriterBase(const std::string& branch, bool reload, bool* cached) {
  *cached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = writer_base_.find(branch);
    // Only main's snapshot is reused: a branch deleted and recreated under the
    // same name restarts its version numbers.
    if (!reload && branch.empty() && it != writer_base_.end()) {
      *cached = true;
      return it->second;
    }
  }
  ASSIGN_OR_RETURN(Dataset base, OpenDataset(branch));
  RememberBase(branch, base);
  return base;
}

void Manifest::RememberBase(const std::string& branch, const Dataset& ds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = writer_base_.find(branch);
  if (it == writer_base_.end()) {
    writer_base_.emplace(branch, ds);
  } else if (it->second.version() < ds.version()) {
    it->second = ds;
  }
}

Result<PublishResult> Manifest::Publish(const PublishSpec& spec) {
  const std::string commit_id = spec.commit_id.empty() ? NewUlidString() : spec.commit_id;
  bool reload = false;
  for (int attempt = 0; attempt < options_.max_publish_attempts; ++attempt) {
    bool cached = false;
    ASSIGN_OR_RETURN(Dataset base, WriterBase(spec.branch, reload, &cached));
    Result<PublishResult> r = PublishOnce(spec, base, commit_id);
    if (r.ok()) {
      r->attempts = attempt + 1;
      return r;
    }
    // A plan judged against this process's last commit may have met a stale
    // state (another process committed since): judge it again on the latest.
    if (!r.status().IsAborted() && !cached) return r.status();
    // Lost the compare-and-swap on the next version: re-read heads and the
    // graph parent, then try again.
    if (reload) kPublishBackoff.Sleep(attempt);
    reload = true;
  }
  return Status::Aborted("gave up publishing to the manifest after " +
                         std::to_string(options_.max_publish_attempts) +
                         " attempts against concurrent writers");
}

namespace {

// The new contents of every partition `plan` touches. A directory
// partitioned as before format 7 is converted whole: this commit rewrites
// every partition in place. Later formats share the partitioning; the
// header is rewritten, and tombstone levels over capacity move up.
Result<PartitionRows> TouchedPartitions(const ManifestVersion& v, PublishView& view,
                                        const PublishPlan& plan) {
  const PartitionReader read = [&](uint32_t p) { return view.Partition(p); };
  PartitionRows touched;
  if (v.dir.format < kFirstHashedFormat) {
    ASSIGN_OR_RETURN(touched, RegroupPartitions(v, read));
  }
  for (uint32_t p : plan.rebuild) touched[p].clear();
  auto rows_of = [&](uint32_t p) -> Result<std::vector<ManifestRow>*> {
    auto it = touched.find(p);
    if (it == touched.end()) {
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, read(p));
      it = touched.emplace(p, std::move(rows)).first;
    }
    return &it->second;
  };
  auto same = [](const ManifestRow& r) {
    return [&r](const ManifestRow& x) { return x.object_id == r.object_id; };
  };
  for (const ManifestRow& r : plan.removes) {
    std::vector<uint32_t> where;
    if (r.object_type == object_type::kTableHead && !r.row_count && r.stable_table_id) {
      where = TombstoneHeadPartitions(*r.stable_table_id, kManifestFormatVersion);
    } else {
      ASSIGN_OR_RETURN(uint32_t p, PartitionOf(r));
      where = {p};
    }
    for (uint32_t p : where) {  // only a level that holds a tombstone is rewritten
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, read(p));
      if (touched.count(p) || std::any_of(rows.begin(), rows.end(), same(r))) {
        ASSIGN_OR_RETURN(std::vector<ManifestRow> * at, rows_of(p));
        std::erase_if(*at, same(r));
      }
    }
  }
  for (const ManifestRow& r : plan.upserts) {
    ASSIGN_OR_RETURN(uint32_t p, PartitionOf(r));
    ASSIGN_OR_RETURN(std::vector<ManifestRow> * rows, rows_of(p));
    auto it = std::find_if(rows->begin(), rows->end(), same(r));
    if (it == rows->end()) {
      rows->push_back(r);
    } else {
      *it = r;
    }
  }
  RETURN_NOT_OK(SettleTombstoneLevels(&touched, read));
  return touched;
}

}  // namespace

Status Manifest::AddGraphCommit(const PublishSpec& spec, const Dataset& base, PublishView& view,
                                const std::string& commit_id, uint64_t next_version,
                                PublishPlan* plan) {
  ASSIGN_OR_RETURN(std::optional<GraphHead> head, view.GraphHeadOf(spec.branch));
  // Protection is the branch's own (a new branch starts unprotected).
  const bool was_protected = head && head->protected_branch;
  if (was_protected && spec.direct_change) {
    return Status::PermissionDenied("branch '" +
                                    (spec.branch.empty() ? std::string("main") : spec.branch) +
                                    "' is protected: its tables change only through merges "
                                    "(docs/branches.md)");
  }
  const bool now_protected = spec.set_protected.value_or(was_protected);
  std::string parent;
  // A branch's first commit continues the line of its nearest ancestor
  // branch with a commit (graph heads of ancestors are inherited rows).
  BranchInfo b = base.state().branch;
  for (int hop = 0; !head && !spec.branch.empty() && hop < 64; ++hop) {
    ASSIGN_OR_RETURN(head, view.GraphHeadOf(b.parent));
    if (head || b.parent.empty()) break;
    ASSIGN_OR_RETURN(b, BranchParent(b.parent));
  }
  if (head) parent = head->head_commit;
  ManifestRow commit;
  commit.object_id = GraphCommitId(commit_id);
  commit.object_type = std::string(object_type::kGraphCommit);
  commit.table_version = static_cast<int64_t>(next_version);
  if (!spec.branch.empty()) commit.table_branch = spec.branch;
  json parents = json::array();
  if (!parent.empty()) parents.push_back(parent);
  if (!spec.merged_parent.empty()) parents.push_back(spec.merged_parent);
  json meta = {{"parents", parents},
               {"actor", spec.actor},
               {"run_id", spec.runs.empty() ? "" : spec.runs.front().run_id},
               {"created_at", options_.dataset.clock->NowMicros()},
               {"commit", commit_id},
               {"manifest_version", next_version}};
  if (now_protected) meta["protected"] = true;  // the fold's graph head carries it on
  if (spec.runs.size() > 1) {
    json ids = json::array();
    for (const CommittedRun& run : spec.runs) ids.push_back(run.run_id);
    meta["run_ids"] = std::move(ids);
  }
  commit.metadata = meta.dump();
  plan->journal.push_back(std::move(commit));
  for (const CommittedRun& run : spec.runs) {
    ManifestRow row;
    row.object_id = RunCommitId(run.run_id);
    row.object_type = std::string(object_type::kRunCommit);
    row.table_version = static_cast<int64_t>(next_version);
    json detail = run.detail.empty() ? json::object() : ParseJson(run.detail);
    if (!detail.is_object()) return Status::InvalidArgument("run detail is not a JSON object");
    detail["commit"] = commit_id;
    detail["run_id"] = run.run_id;
    detail["manifest_version"] = next_version;
    row.metadata = detail.dump();
    plan->journal.push_back(std::move(row));
  }
  plan->upserts.push_back(GraphHeadRow(
      {spec.branch, commit_id, parent, static_cast<int64_t>(next_version), now_protected}));
  return Status::OK();
}

Result<PublishResult> Manifest::PublishOnce(const PublishSpec& spec, const Dataset& base,
                                            const std::string& commit_id) {
  ManifestVersion v;
  v.branch = spec.branch;
  v.version = base.version();
  v.timestamp_micros = base.state().timestamp_micros;
  ASSIGN_OR_RETURN(v.dir, DirectoryOf(base.state().app_section));
  PublishView view(this, v, commit_id);
  for (const CommittedRun& run : spec.runs) {
    // Looked up in the version this attempt commits on: no second open.
    ASSIGN_OR_RETURN(auto done,
                     FindJournalRowIn(base, RunCommitId(run.run_id), nullptr, run.journal_floor));
    if (done) {
      return Status::AlreadyExists("run " + run.run_id + " already committed (" + done->metadata +
                                   ")")
          .WithErrorCode(ErrorCode::kRunAlreadyCommitted)
          .WithDetail("run", run.run_id);
    }
  }
  ASSIGN_OR_RETURN(PublishPlan plan, spec.build(view));

  for (const ManifestRow& r : plan.upserts) {
    if (!IsMutableType(r.object_type)) {
      return Status::InvalidArgument("'" + r.object_id + "' is not a mutable row");
    }
  }
  for (const ManifestRow& r : plan.journal) {
    if (!IsJournalType(r.object_type)) {
      return Status::InvalidArgument("'" + r.object_id + "' is not a journal row");
    }
  }
  RETURN_NOT_OK(CheckHeadPairing(plan.journal, plan.upserts));
  const uint64_t next_version = base.version() + 1;
  for (ManifestRow& r : plan.journal) r.metadata = WithCommit(r.metadata, commit_id, next_version);
  if (plan.graph_commit) {
    RETURN_NOT_OK(AddGraphCommit(spec, base, view, commit_id, next_version, &plan));
  } else if (!plan.journal.empty() && !plan.journal_without_graph_commit) {
    return Status::InvalidArgument("a metadata-only commit cannot append journal rows");
  }

  ASSIGN_OR_RETURN(PartitionRows touched, TouchedPartitions(v, view, plan));
  RETURN_NOT_OK(FitDirectory(spec.branch, v.dir, view, &touched));
  ASSIGN_OR_RETURN(Dataset committed,
                   CommitPartitions(base, v.dir, std::move(plan.journal), &touched, spec.txn_id));
  const uint64_t published = committed.version();
  bool merged_now = false;
  if (options_.merge_fanout > 0) {
    // Best effort: a lost race or an error leaves the merge to a later publish.
    Result<Dataset> merged = MergeTier(committed, options_.merge_fanout);
    if (merged.ok()) {
      merged_now = merged->version() != committed.version();
      committed = *std::move(merged);
    }
  }
  if (options_.index_tail_fragments > 0) {
    // Best effort too: a look-up without the fold is correct, only slower. A
    // merge's output (many rows) is folded in at once, so the tail a look-up
    // scans holds only small publish fragments.
    Result<Dataset> indexed =
        FoldJournalIndex(committed, merged_now ? 0 : options_.index_tail_fragments);
    if (indexed.ok()) {
      committed = *std::move(indexed);
    } else {
      LOAM_LOG_DEBUG("journal index fold skipped: {}", indexed.status().ToString());
    }
  }
  RememberBase(spec.branch, committed);
  return PublishResult{published, commit_id, 0};
}

Result<Dataset> Manifest::CommitPartitions(const Dataset& base, const HeadDirectory& dir,
                                           std::vector<ManifestRow> journal,
                                           std::map<uint32_t, std::vector<ManifestRow>>* touched,
                                           const std::string& txn_id) {
  // Tombstone partitions go in a fragment of their own: reading a live
  // partition or the catalog never decodes a dropped table's head. So does
  // a long journal (a migration's baselines, one per identity ever made),
  // which no current read needs.
  FragmentRows main, tombs, journal_apart;
  (journal.size() > kJournalRowsBesideHeads ? journal_apart : main).rows = std::move(journal);
  for (auto& [p, rows] : *touched) (p >= kFirstTombstonePartition ? tombs : main).Add(p, &rows);
  std::vector<FragmentRows*> parts;
  for (FragmentRows* f : {&main, &tombs, &journal_apart}) {
    if (!f->rows.empty() || !f->ranges.empty()) parts.push_back(f);
  }
  if (main.rows.empty() && tombs.rows.empty() && journal_apart.rows.empty()) {
    return Status::InvalidArgument("nothing to publish");
  }
  std::vector<Fragment> frags;
  std::vector<RecordBatch> batches;
  std::vector<FragmentRows*> written;
  for (FragmentRows* f : parts) {
    if (f->rows.empty()) continue;  // only emptied partitions: no fragment
    batches.push_back(RowsToBatch(f->rows));
    ASSIGN_OR_RETURN(Fragment frag, base.WriteFragment(batches.back(), /*allow_inline=*/true));
    frags.push_back(std::move(frag));
    written.push_back(f);
  }
  std::vector<HeadDirectory::File> files;
  auto directory = [&](const std::vector<Fragment>& added) -> Result<std::string> {
    HeadDirectory next = dir;
    next.format = kManifestFormatVersion;
    files.clear();
    for (const Fragment& f : added) files.push_back(FileOf(f));
    for (FragmentRows* f : parts) {
      auto at = std::find(written.begin(), written.end(), f);
      for (const auto& [p, range] : f->ranges) {
        if (range.second == 0 || at == written.end()) {
          next.slots[p] = HeadDirectory::Slot{};
        } else {
          next.Set(p, files.at(at - written.begin()), range.first, range.second);
        }
      }
    }
    next.Prune();
    return EncodeHeadDirectory(next);
  };
  ASSIGN_OR_RETURN(Dataset committed, base.CommitRewrite(frags, {}, directory, txn_id));
  for (size_t i = 0; cache_ && i < files.size(); ++i) {
    // The writer's next commit reads these partitions back: keep them.
    cache_->Put<RecordBatch>(FileCacheKey(files[i]),
                             std::make_shared<const RecordBatch>(std::move(batches[i])),
                             files[i].size * 4 + 1024);
  }
  return committed;
}

// The directory must fit the version header. With long branch paths and
// many files holding partitions it may not: then the partitions of the
// least-used files are carried into this commit too, until it fits.
Status Manifest::FitDirectory(const std::string& branch, const HeadDirectory& dir,
                              PublishView& view,
                              std::map<uint32_t, std::vector<ManifestRow>>* touched) {
  // The new fragment's path has a fixed length: data/<26-character ULID>.lfrag,
  // or (inline) _versions/<20 digits>.lver, two characters shorter.
  // Tombstone partitions get a second such fragment (CommitPartitions).
  const HeadDirectory::File next{
      Dataset::BranchDir(branch) + "data/" + std::string(26, '0') + ".lfrag", 0};
  const HeadDirectory::File next_tombs{
      Dataset::BranchDir(branch) + "data/" + std::string(26, '1') + ".lfrag", 0};
  while (true) {
    HeadDirectory projected = dir;
    for (const auto& [p, rows] : *touched) {
      projected.Set(p, p >= kFirstTombstonePartition ? next_tombs : next, 0,
                    static_cast<uint32_t>(rows.size()));
    }
    projected.Prune();
    if (EncodeHeadDirectory(projected).size() <= kMaxAppSection) return Status::OK();
    std::map<int32_t, int> uses;
    for (const HeadDirectory::Slot& s : projected.slots) {
      if (s.file >= 0 && !(projected.files[s.file] == next) &&
          !(projected.files[s.file] == next_tombs)) {
        uses[s.file]++;
      }
    }
    if (uses.empty()) return Status::Internal("the head directory cannot fit a version header");
    const int32_t victim =
        std::min_element(uses.begin(), uses.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;
        })->first;
    for (uint32_t p = 0; p < kNumPartitions; ++p) {
      if (projected.slots[p].file != victim) continue;
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, view.Partition(p));
      touched->emplace(p, std::move(rows));
    }
  }
}

}  // namespace loam
