#include "engine/retention.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "dataset/refs.h"

namespace loam {
namespace {

std::string SettingKey(const std::string& root) {
  return (root.empty() ? "" : root + "/") + "_control/retention.json";
}

std::string HorizonKey(const std::string& root) {
  return (root.empty() ? "" : root + "/") + "_control/retention-horizon.json";
}

std::string DeletedBranchPrefix(const std::string& root) {
  return (root.empty() ? "" : root + "/") + "_control/deleted-branches/";
}

// The horizon object: each branch's oldest readable manifest version, and
// the datasets of dropped tables a pass decided to remove and has not
// finished removing (an intent a later pass carries out).
struct Horizons {
  nlohmann::json branches = nlohmann::json::object();
  std::set<std::string> removing;
};

Result<Horizons> ReadHorizons(ObjectStore& store, const std::string& root, ObjectMeta* meta) {
  Result<std::string> text = store.Get(HorizonKey(root), meta);
  if (text.status().IsNotFound()) return Horizons{};
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObject(*text, "retention horizon"));
  const auto format = j.find("format");
  const auto branches = j.find("branches");
  if (format == j.end() || !format->is_number_integer() || format->get<int64_t>() != 1 ||
      branches == j.end() || !branches->is_object()) {
    return Status::DataLoss("retention horizon: needs \"format\" 1 and a \"branches\" object");
  }
  for (const auto& [id, v] : branches->items()) {
    if (!v.is_number_unsigned()) {
      return Status::DataLoss("retention horizon: branch '" + id + "' needs a version");
    }
  }
  Horizons out{*branches, {}};
  if (const auto removing = j.find("removing"); removing != j.end()) {
    if (!removing->is_array()) return Status::DataLoss("retention horizon: bad \"removing\"");
    for (const auto& location : *removing) {
      if (!location.is_string()) return Status::DataLoss("retention horizon: bad \"removing\"");
      out.removing.insert(location.get<std::string>());
    }
  }
  return out;
}

// Raises each branch's horizon to at least the given version and adds
// `remove` to the datasets being removed, then takes `removed` off them, by
// put-if-match, so two passes never lower one another's horizons.
Status UpdateHorizons(ObjectStore& store, const std::string& root,
                      const std::map<std::string, uint64_t>& by_id,
                      const std::vector<std::string>& remove,
                      const std::vector<std::string>& removed = {}) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    ObjectMeta meta;
    ASSIGN_OR_RETURN(Horizons h, ReadHorizons(store, root, &meta));
    const bool existed = !meta.etag.empty();
    bool changed = false;
    for (const auto& [id, version] : by_id) {
      // Version 1 is no horizon: a workspace with nothing past its window
      // gets no object.
      if (version <= 1 || h.branches.value(id, uint64_t{0}) >= version) continue;
      h.branches[id] = version;
      changed = true;
    }
    for (const std::string& l : remove) changed |= h.removing.insert(l).second;
    for (const std::string& l : removed) changed |= h.removing.erase(l) > 0;
    if (!changed) return Status::OK();
    nlohmann::json j = {{"format", 1}, {"branches", h.branches}};
    if (!h.removing.empty()) j["removing"] = h.removing;
    Result<ObjectMeta> put = existed ? store.PutIfMatch(HorizonKey(root), j.dump(), meta.etag)
                                     : store.PutIfAbsent(HorizonKey(root), j.dump());
    if (put.ok()) return Status::OK();
    if (!put.status().IsAlreadyExists() && !put.status().IsAborted() &&
        !put.status().IsNotFound()) {
      return put.status();
    }
  }
  return Status::Aborted("retention horizon: gave up after 16 concurrent updates");
}

// The version of `branch` current at `cutoff`: the newest whose commit time
// is at or before it, or the oldest still readable when every readable one
// is newer (a branch made after the cutoff reads from its fork point on).
// Versions older than the oldest readable are expired, so "expired or not
// newer than the cutoff" holds for a prefix of 1..latest: a binary search
// of header reads.
Result<uint64_t> VersionAtCutoff(const Manifest& manifest, const std::string& branch,
                                 uint64_t latest, int64_t cutoff) {
  uint64_t lo = 0, hi = latest;  // invariant: pred(lo) (or lo = 0), !pred(hi + 1)
  bool lo_readable = false;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    Result<ManifestVersion> v = manifest.At(branch, mid);
    if (!v.ok() && !v.status().IsNotFound()) return v.status();
    if (!v.ok() || v->timestamp_micros <= cutoff) {
      lo = mid;
      lo_readable = v.ok();
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0) return uint64_t{1};
  // Expired: the next one is the oldest readable.
  return lo_readable ? lo : std::min(lo + 1, latest);
}

// (table location, fork) -> the oldest table version a kept manifest
// version may name there.
using Floors = std::map<std::pair<std::string, std::string>, int64_t>;

void LowerFloors(const Snapshot& snap, bool create, Floors* floors) {
  for (const auto& [name, t] : snap.tables) {
    const auto key = std::make_pair(t.head.location, t.head.owner_ref);
    auto it = floors->find(key);
    if (it == floors->end()) {
      if (create) (*floors)[key] = t.head.table_version;
    } else {
      it->second = std::min(it->second, t.head.table_version);
    }
  }
}

// sid -> location of every tombstoned head of `v` (none before format 7,
// where tombstones share partitions with live heads: nothing goes then).
Result<std::map<int64_t, std::string>> DroppedTables(const Manifest& m, const ManifestVersion& v) {
  std::map<int64_t, std::string> out;
  if (v.dir.format < kFirstHashedFormat) return out;
  for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) {
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, m.ReadPartition(v, p));
    for (const ManifestRow& r : rows) {
      ASSIGN_OR_RETURN(TableHead h, ParseTableHead(r));
      out[h.sid] = h.location;
    }
  }
  return out;
}

// One branch's manifest at the oldest version a pass keeps, now, and at the
// oldest version the previous pass kept.
struct BranchEnds {
  ManifestVersion oldest, now;
  std::map<int64_t, std::string> dropped_by_oldest, dropped_before;
};

// Whether no version `b` keeps has table `sid` live: dropped by its oldest
// kept version, or never there at all.
Result<bool> GoneFromBranch(const Manifest& m, const BranchEnds& b, int64_t sid) {
  ASSIGN_OR_RETURN(std::optional<TableHead> now, m.ReadTableHead(b.now, sid));
  if (now && now->state == HeadState::kLive) return false;
  if (b.dropped_by_oldest.count(sid)) return true;
  ASSIGN_OR_RETURN(std::optional<TableHead> then, m.ReadTableHead(b.oldest, sid));
  return !then && !now;
}

void Count(const CleanupStats& st, int* versions, RetentionReport* report) {
  *versions += st.versions_removed;
  report->files_removed +=
      st.data_files_removed + st.deletion_files_removed + st.index_files_removed;
  report->bytes_removed += st.bytes_removed;
}

}  // namespace

Result<RetentionSetting> ReadRetentionSetting(ObjectStore& store,
                                              const std::string& workspace_root) {
  Result<std::string> text = store.Get(SettingKey(workspace_root));
  if (text.status().IsNotFound()) return RetentionSetting{};
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObject(*text, "retention setting"));
  const auto format = j.find("format");
  const auto window = j.find("timeTravelWindowSeconds");
  if (format == j.end() || !format->is_number_integer() || window == j.end() ||
      !window->is_number_integer()) {
    return Status::DataLoss(
        "retention setting: needs integers \"format\" and \"timeTravelWindowSeconds\"");
  }
  if (format->get<int64_t>() != 1) {
    return Status::FailedPrecondition("retention setting: format " +
                                      std::to_string(format->get<int64_t>()) +
                                      " is newer than this Loam reads (1)")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  return RetentionSetting{window->get<int64_t>()};
}

Status WriteRetentionSetting(ObjectStore& store, const std::string& workspace_root,
                             const RetentionSetting& setting) {
  if (setting.window_seconds < kMinTimeTravelWindowSeconds ||
      setting.window_seconds > kMaxTimeTravelWindowSeconds) {
    return Status::InvalidArgument(
        "the time-travel window must be between " + std::to_string(kMinTimeTravelWindowSeconds) +
        " seconds and 100 years, not " + std::to_string(setting.window_seconds) + " seconds");
  }
  const nlohmann::json j = {{"format", 1}, {"timeTravelWindowSeconds", setting.window_seconds}};
  return store.Put(SettingKey(workspace_root), j.dump()).status();
}

Result<uint64_t> ReadTimeTravelHorizon(ObjectStore& store, const std::string& workspace_root,
                                       const std::string& branch_id) {
  ObjectMeta meta;
  ASSIGN_OR_RETURN(Horizons h, ReadHorizons(store, workspace_root, &meta));
  return h.branches.value(branch_id, uint64_t{0});
}

Status VersionExpired(const std::string& branch, uint64_t version, uint64_t oldest) {
  return Status::NotFound("manifest version " + std::to_string(version) + " of " +
                          (branch.empty() ? "main" : "branch '" + branch + "'") +
                          " is past the time-travel window and was removed; the oldest " +
                          "readable version is " + std::to_string(oldest))
      .WithErrorCode(ErrorCode::kVersionExpired)
      .WithDetail("oldestVersion", std::to_string(oldest));
}

namespace {

// Each listed branch's ends for this pass, and (in `candidates`) the
// tables dropped on it between the oldest version the last pass kept there
// and the oldest this one keeps (a table dropped earlier was looked at by an
// earlier pass; its dataset went then, or some branch still had it).
Result<std::vector<BranchEnds>> ReadBranchEnds(const Manifest& m,
                                               const std::vector<std::string>& branches,
                                               const std::vector<Snapshot>& current,
                                               const nlohmann::json& horizons,
                                               const RetentionReport& report,
                                               std::map<int64_t, std::string>* candidates) {
  std::vector<BranchEnds> ends;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string& b = branches[i];
    BranchEnds e;
    ASSIGN_OR_RETURN(e.now, m.At(b, current[i].manifest_version));  // as the pass read it
    ASSIGN_OR_RETURN(e.oldest, m.At(b, report.oldest_manifest_version.at(b)));
    ASSIGN_OR_RETURN(e.dropped_by_oldest, DroppedTables(m, e.oldest));
    std::string id;
    if (!b.empty()) {
      ASSIGN_OR_RETURN(id, m.BranchId(b));
    }
    const uint64_t before = horizons.value(id, uint64_t{0});
    if (before > 1 && before < e.oldest.version) {
      Result<ManifestVersion> v = m.At(b, before);
      if (v.ok()) {
        ASSIGN_OR_RETURN(e.dropped_before, DroppedTables(m, *v));
      }
    }
    for (const auto& [sid, location] : e.dropped_by_oldest) {
      if (!e.dropped_before.count(sid)) (*candidates)[sid] = location;
    }
    ends.push_back(std::move(e));
  }
  return ends;
}

// Whether no version any listed branch keeps after this pass has table
// `sid` at `location` live (under any fork).
Result<bool> GoneEverywhere(const Manifest& m, const std::vector<BranchEnds>& ends,
                            const Floors& floors, int64_t sid, const std::string& location) {
  auto kept = floors.lower_bound({location, std::string()});
  if (kept != floors.end() && kept->first.first == location) return false;
  for (const BranchEnds& e : ends) {
    ASSIGN_OR_RETURN(bool from_branch, GoneFromBranch(m, e, sid));
    if (!from_branch) return false;
  }
  return true;
}

// The locations of tables that no version any branch keeps after this pass
// has live, among those dropped on some branch since the last pass.
Result<std::vector<std::string>> DroppedEverywhere(const Manifest& m,
                                                   const std::vector<BranchEnds>& ends,
                                                   const std::map<int64_t, std::string>& candidates,
                                                   const Floors& floors) {
  std::vector<std::string> out;
  for (const auto& [sid, location] : candidates) {
    ASSIGN_OR_RETURN(bool gone, GoneEverywhere(m, ends, floors, sid, location));
    if (gone) out.push_back(location);
  }
  return out;
}

// Every object under `prefix` (a dropped table's dataset). A pass that stops
// part way leaves the location in the horizon's "removing" list, and the
// next pass finishes it.
Status RemoveDataset(ObjectStore& store, const std::string& prefix, RetentionReport* report) {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects, store.ListAll(prefix));
  for (const ObjectInfo& o : objects) {
    RETURN_NOT_OK(store.Delete(o.key));  // on local disk, its directories go too
    ++report->files_removed;
    report->bytes_removed += o.meta.size;
  }
  if (!objects.empty()) ++report->tables_removed;
  return Status::OK();
}

}  // namespace

Result<DeletedBranch> ParseDeletedBranch(const std::string& key, std::string_view text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObject(text, "deleted-branch record"));
  const auto bad = [&] {
    return Status::DataLoss("deleted-branch record " + key + " is malformed");
  };
  const std::optional<int64_t> deleted = IntegerAt(j, "deletedMicros");
  if (IntegerAt(j, "format") != 1 || !deleted || !j.contains("id") || !j["id"].is_string() ||
      !j.contains("tables") || !j["tables"].is_array()) {
    return bad();
  }
  DeletedBranch d{key, j["id"].get<std::string>(), *deleted, {}};
  for (const auto& t : j["tables"]) {
    const std::optional<int64_t> sid = t.is_object() ? IntegerAt(t, "sid") : std::nullopt;
    if (!sid || !t.contains("location") || !t["location"].is_string()) return bad();
    d.tables.emplace_back(*sid, t["location"].get<std::string>());
  }
  return d;
}

namespace {

// Every record, oldest deletion first (a child branch is deleted before its
// parent, so its table forks go first too). A record that does not parse is
// left where it is, with a warning at every pass: what its branch alone kept
// stays until someone repairs or removes it.
Result<std::vector<DeletedBranch>> ReadDeletedBranches(ObjectStore& store,
                                                       const std::string& root) {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects, store.ListAll(DeletedBranchPrefix(root)));
  std::vector<DeletedBranch> out;
  for (const ObjectInfo& o : objects) {
    Result<std::string> text = store.Get(o.key);
    if (text.status().IsNotFound()) continue;  // another pass finished it
    RETURN_NOT_OK(text.status());
    Result<DeletedBranch> d = ParseDeletedBranch(o.key, *text);
    if (!d.ok()) {
      LOAM_LOG_WARN("retention: {}; left as it is", d.status().ToString());
      continue;
    }
    out.push_back(*std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DeletedBranch& a, const DeletedBranch& b) {
    return a.deleted_micros < b.deleted_micros;
  });
  return out;
}

// What only deleted branches kept: a table no listed branch keeps goes
// whole; from the others, the deleted branch's own fork goes. A record is
// removed once all of it is done, and only once its branch is no longer
// listed (a deletion in progress, or one refused, keeps it).
Status SweepDeletedBranches(WorkspaceEngine& ws, const std::set<std::string>& listed_ids,
                            const std::vector<BranchEnds>& ends, const Floors& floors,
                            RetentionReport* report) {
  ASSIGN_OR_RETURN(std::vector<DeletedBranch> deleted, ReadDeletedBranches(*ws.store(), ws.root()));
  for (const DeletedBranch& d : deleted) {
    if (listed_ids.count(d.id)) continue;
    bool done = true;
    for (const auto& [sid, location] : d.tables) {
      const std::string prefix = ws.TableRoot(location) + "/";
      ASSIGN_OR_RETURN(bool gone, GoneEverywhere(ws.manifest(), ends, floors, sid, location));
      if (gone) {
        RETURN_NOT_OK(RemoveDataset(*ws.store(), prefix, report));
        continue;
      }
      // No fork of this branch in the table: nothing to do. One a kept
      // version still reads (a branch forked from it as it was deleted)
      // stays, with the record, for a later pass.
      Result<ObjectMeta> ref = ws.store()->Head(BranchRefKey(prefix, d.id));
      if (ref.status().IsNotFound()) continue;
      RETURN_NOT_OK(ref.status());
      if (floors.count({location, d.id})) {
        done = false;
        continue;
      }
      Status fork = DeleteBranchFiles(*ws.store(), prefix, d.id);
      if (fork.ok()) {
        ++report->forks_removed;
      } else if (fork.IsFailedPrecondition() || fork.IsNotFound()) {
        done = false;  // a child fork still there, or a concurrent pass: next pass
      } else {
        return fork;
      }
    }
    if (done) RETURN_NOT_OK(ws.store()->Delete(d.key));
  }
  return Status::OK();
}

}  // namespace

Status RecordBranchDeletion(WorkspaceEngine& ws, const std::string& name, int64_t now_micros) {
  const Manifest& m = ws.manifest();
  ASSIGN_OR_RETURN(std::string id, m.BranchId(name));
  ASSIGN_OR_RETURN(Snapshot snap, ws.Current(name));
  ASSIGN_OR_RETURN(ManifestVersion v, m.At(name, snap.manifest_version));
  ASSIGN_OR_RETURN(auto dropped, DroppedTables(m, v));
  std::set<std::pair<int64_t, std::string>> tables(dropped.begin(), dropped.end());
  for (const auto& [table, t] : snap.tables) tables.emplace(t.head.sid, t.head.location);
  // A deletion tried before and stopped part way removed the newest
  // versions first: what the record it wrote then names stays named.
  const std::string key = DeletedBranchPrefix(ws.root()) + id + ".json";
  Result<std::string> earlier = ws.store()->Get(key);
  if (earlier.ok()) {
    Result<DeletedBranch> e = ParseDeletedBranch(key, *earlier);
    if (e.ok()) {
      now_micros = std::min(now_micros, e->deleted_micros);
      tables.insert(e->tables.begin(), e->tables.end());
    }
  } else if (!earlier.status().IsNotFound()) {
    return earlier.status();
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [sid, location] : tables) list.push_back({{"sid", sid}, {"location", location}});
  const nlohmann::json j = {{"format", 1},
                            {"branch", name},
                            {"id", id},
                            {"deletedMicros", now_micros},
                            {"tables", std::move(list)}};
  return ws.store()->Put(key, j.dump()).status();
}

Status ForgetBranchDeletion(WorkspaceEngine& ws, const std::string& id) {
  Status s = ws.store()->Delete(DeletedBranchPrefix(ws.root()) + id + ".json");
  return s.IsNotFound() ? Status::OK() : s;
}

namespace {

// What a retention pass reads before it removes anything.
struct WindowState {
  std::vector<std::string> branches;  // main ("") first
  Floors floors;
  std::vector<Snapshot> current;          // each branch's state now
  std::map<std::string, uint64_t> by_id;  // branch id -> oldest readable version
  Horizons horizons;
};

// Floors from each branch's state at the cutoff, lowered by every branch's
// current state (a branch reads its parent's fork as of its fork point). A
// fork no state at the cutoff names keeps every version.
Status ReadWindow(WorkspaceEngine& ws, int64_t cutoff, WindowState* w, RetentionReport* report) {
  ASSIGN_OR_RETURN(w->branches, ws.ListBranches());
  w->branches.insert(w->branches.begin(), "");
  ObjectMeta horizons_meta;
  ASSIGN_OR_RETURN(w->horizons, ReadHorizons(*ws.store(), ws.root(), &horizons_meta));
  for (const std::string& b : w->branches) {
    ASSIGN_OR_RETURN(Snapshot now, ws.Current(b));
    ASSIGN_OR_RETURN(uint64_t at, VersionAtCutoff(ws.manifest(), b, now.manifest_version, cutoff));
    std::string id;
    if (!b.empty()) {
      ASSIGN_OR_RETURN(id, ws.manifest().BranchId(b));
    }
    // A longer window than the last pass had brings nothing back.
    at = std::max(at, w->horizons.branches.value(id, uint64_t{0}));
    report->oldest_manifest_version[b] = at;
    w->by_id[id] = at;
    ASSIGN_OR_RETURN(Snapshot then, ws.SnapshotAt(b, at));
    LowerFloors(then, /*create=*/true, &w->floors);
    w->current.push_back(std::move(now));
  }
  for (const Snapshot& s : w->current) LowerFloors(s, /*create=*/false, &w->floors);
  return Status::OK();
}

// The manifest's versions before each branch's horizon: by version, not by
// time, so what goes is exactly what the horizon refuses (commit times of
// several processes need not be in order).
Status ExpireManifest(WorkspaceEngine& ws, int64_t grace_cutoff_micros, RetentionReport* report) {
  CleanupOptions opts;
  opts.grace_cutoff_micros = grace_cutoff_micros;
  opts.keep_holders_loadable = false;  // SnapshotAt refuses them (the horizon)
  opts.expired = [report](const std::string& branch, uint64_t version, int64_t) {
    auto it = report->oldest_manifest_version.find(branch);
    return it != report->oldest_manifest_version.end() && version < it->second;
  };
  ASSIGN_OR_RETURN(Dataset manifest_data, ws.manifest().OpenDataset(""));
  ASSIGN_OR_RETURN(CleanupStats st, manifest_data.Cleanup(opts));
  Count(st, &report->manifest_versions_removed, report);
  return Status::OK();
}

// Every table some branch holds now, each once, below its floors.
Status ExpireTables(WorkspaceEngine& ws, const WindowState& w, int64_t grace_cutoff_micros,
                    RetentionReport* report) {
  std::set<std::string> done;
  for (const Snapshot& s : w.current) {
    for (const auto& [name, t] : s.tables) {
      if (!done.insert(t.head.location).second) continue;
      ++report->tables;
      ASSIGN_OR_RETURN(Dataset data, ws.OpenTable(s, name));
      CleanupOptions opts;
      opts.grace_cutoff_micros = grace_cutoff_micros;
      // A version below the floor is past the window: snapshots never read
      // it, an upsert or delete run's revert is refused first
      // (version_expired), and following rows takes a file that is gone as
      // history cleaned up. Kept loadable, each holder of an inline
      // fragment still in use would keep the holders its own fragment list
      // names, back through every compaction that committed after an append.
      opts.keep_holders_loadable = false;
      const std::string location = t.head.location;
      opts.expired = [&w, location](const std::string& fork, uint64_t version, int64_t) {
        auto it = w.floors.find({location, fork});
        return it != w.floors.end() && static_cast<int64_t>(version) < it->second;
      };
      ASSIGN_OR_RETURN(CleanupStats st, data.Cleanup(opts));
      Count(st, &report->table_versions_removed, report);
    }
  }
  return Status::OK();
}

}  // namespace

Result<RetentionReport> ExpireVersions(WorkspaceEngine& ws, int64_t now_micros,
                                       int64_t window_seconds, int64_t grace_micros) {
  if (window_seconds < kMinTimeTravelWindowSeconds) {
    return Status::InvalidArgument("the time-travel window must be at least " +
                                   std::to_string(kMinTimeTravelWindowSeconds) + " seconds");
  }
  RetentionReport report;
  const int64_t cutoff = now_micros - window_seconds * 1'000'000;
  report.cutoff_micros = cutoff;
  WindowState w;
  RETURN_NOT_OK(ReadWindow(ws, cutoff, &w, &report));
  // Tables that went out of every branch's window since the last pass,
  // read before the versions that show it go.
  std::map<int64_t, std::string> candidates;
  ASSIGN_OR_RETURN(std::vector<BranchEnds> ends,
                   ReadBranchEnds(ws.manifest(), w.branches, w.current, w.horizons.branches, report,
                                  &candidates));
  ASSIGN_OR_RETURN(std::vector<std::string> dropped,
                   DroppedEverywhere(ws.manifest(), ends, candidates, w.floors));
  // Readers learn where time travel stops before anything goes, and the
  // datasets to remove are recorded first (with those an earlier pass
  // recorded and did not finish).
  RETURN_NOT_OK(UpdateHorizons(*ws.store(), ws.root(), w.by_id, dropped));
  dropped.insert(dropped.end(), w.horizons.removing.begin(), w.horizons.removing.end());
  // A branch created since the listing, from a version the raised horizon
  // still allows (its creation checks the horizon once it exists), keeps
  // what its fork point reads.
  ASSIGN_OR_RETURN(std::vector<std::string> now_listed, ws.ListBranches());
  for (const std::string& b : now_listed) {
    if (std::find(w.branches.begin(), w.branches.end(), b) != w.branches.end()) continue;
    ASSIGN_OR_RETURN(Snapshot late, ws.Current(b));
    LowerFloors(late, /*create=*/false, &w.floors);
  }
  // The manifest first: a version that goes takes its table versions' last
  // reader with it.
  RETURN_NOT_OK(ExpireManifest(ws, now_micros - grace_micros, &report));
  RETURN_NOT_OK(ExpireTables(ws, w, now_micros - grace_micros, &report));
  for (const std::string& location : dropped) {
    RETURN_NOT_OK(RemoveDataset(*ws.store(), ws.TableRoot(location) + "/", &report));
  }
  if (!dropped.empty()) RETURN_NOT_OK(UpdateHorizons(*ws.store(), ws.root(), {}, {}, dropped));
  std::set<std::string> listed_ids;
  for (const auto& [id, version] : w.by_id) listed_ids.insert(id);
  RETURN_NOT_OK(SweepDeletedBranches(ws, listed_ids, ends, w.floors, &report));
  return report;
}

}  // namespace loam
