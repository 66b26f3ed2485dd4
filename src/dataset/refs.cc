#include "dataset/refs.h"

#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"

namespace loam {

std::string BranchRefKey(const std::string& root_prefix, const std::string& name) {
  return root_prefix + "_refs/branches/" + name + ".json";
}

std::string TagRefKey(const std::string& root_prefix, const std::string& name) {
  return root_prefix + "_refs/tags/" + name + ".json";
}

std::string EncodeBranchRef(const BranchInfo& b, int64_t created_micros, const std::string& id) {
  nlohmann::json j = {{"format", 1},
                      {"parentBranch", b.parent},
                      {"parentVersion", b.parent_version},
                      {"createdAtMicros", created_micros},
                      {"id", id}};
  return j.dump();
}

Result<std::string> DecodeBranchRefId(std::string_view text, const std::string& name) {
  auto j = ParseJson(text);
  if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j["id"].is_string()) {
    return Status::DataLoss("branch ref '" + name + "' has no id");
  }
  return j["id"].get<std::string>();
}

Result<std::string> Dataset::BranchId(const std::string& name) const {
  if (name.empty()) return std::string();
  Result<std::string> text = store_->Get(BranchRefKey(Key(""), name));
  if (text.status().IsNotFound()) return Status::NotFound("no branch '" + name + "'");
  RETURN_NOT_OK(text.status());
  return DecodeBranchRefId(*text, name);
}

Result<BranchInfo> DecodeBranchRef(std::string_view text, const std::string& name) {
  auto j = ParseJson(text);
  if (j.is_discarded() || !j.is_object() || !j.contains("parentBranch") ||
      !j["parentBranch"].is_string() || !j.contains("parentVersion") ||
      !j["parentVersion"].is_number_unsigned() || IntegerAt(j, "format") != 1) {
    return Status::DataLoss("branch ref '" + name + "' is malformed");
  }
  BranchInfo b;
  b.name = name;
  b.parent = j["parentBranch"].get<std::string>();
  b.parent_version = j["parentVersion"].get<uint64_t>();
  return b;
}

Status CheckBranchDepth(const std::string& branch, int depth) {
  if (depth <= kMaxBranchDepth) return Status::OK();
  return Status::DataLoss("branch '" + branch + "': more than " + std::to_string(kMaxBranchDepth) +
                          " parents; the branch refs form a cycle");
}

std::string EncodeTagRef(const TagRef& t) {
  nlohmann::json j = {{"format", 1}, {"branch", t.branch}, {"version", t.version}};
  return j.dump();
}

Result<TagRef> DecodeTagRef(std::string_view text, const std::string& name) {
  auto j = ParseJson(text);
  if (j.is_discarded() || !j.is_object() || !j.contains("branch") || !j["branch"].is_string() ||
      !j.contains("version") || !j["version"].is_number_unsigned() || IntegerAt(j, "format") != 1) {
    return Status::DataLoss("tag '" + name + "' is malformed");
  }
  return TagRef{j["branch"].get<std::string>(), j["version"].get<uint64_t>()};
}

Status ValidateRefName(std::string_view kind, std::string_view name) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("invalid " + std::string(kind) + " name '" + std::string(name) +
                                   "': " + std::string(why));
  };
  if (name.empty() || name.size() > 64) return bad("must be 1 to 64 characters");
  if (name == "main") return bad("'main' is reserved");
  if (name[0] == '.' || name[0] == '-') return bad("must not start with '.' or '-'");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return bad("only letters, digits, '.', '_' and '-' are allowed");
  }
  return Status::OK();
}

// --- Dataset methods for tags and branches ---------------------------------

Status Dataset::CreateTag(const std::string& name, uint64_t version) const {
  RETURN_NOT_OK(ValidateRefName("tag", name));
  RETURN_NOT_OK(LoadVersion(branch_, version).status());
  Result<ObjectMeta> put =
      store_->PutIfAbsent(TagRefKey(Key(""), name), EncodeTagRef({branch_, version}));
  if (put.status().IsAlreadyExists()) return Status::AlreadyExists("tag '" + name + "' exists");
  return put.status();
}

Status Dataset::DeleteTag(const std::string& name) const {
  RETURN_NOT_OK(ValidateRefName("tag", name));
  const std::string key = TagRefKey(Key(""), name);
  RETURN_NOT_OK(store_->Head(key).status());
  return store_->Delete(key);
}

namespace {

// Every tag under `prefix` ("<root>/_refs/tags/"): name -> ref. A tag deleted
// between the listing and its read is left out.
Result<std::vector<std::pair<std::string, TagRef>>> ReadTagRefs(ObjectStore& store,
                                                                const std::string& prefix) {
  std::vector<std::pair<std::string, TagRef>> out;
  ASSIGN_OR_RETURN(auto objects, store.ListAll(prefix));
  for (const ObjectInfo& o : objects) {
    std::string name = o.key.substr(prefix.size());
    if (!name.ends_with(".json")) continue;
    name.resize(name.size() - 5);
    Result<std::string> text = store.Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(TagRef t, DecodeTagRef(*text, name));
    out.emplace_back(std::move(name), std::move(t));
  }
  return out;
}

}  // namespace

Result<std::vector<std::pair<std::string, uint64_t>>> Dataset::ListTags() const {
  ASSIGN_OR_RETURN(auto tags, ReadTagRefs(*store_, Key("_refs/tags/")));
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [name, t] : tags) out.emplace_back(name, t.version);
  return out;
}

Result<Dataset> Dataset::CreateBranch(const std::string& name) const {
  RETURN_NOT_OK(ValidateRefName("branch", name));
  BranchInfo b{name, branch_, state_->version};
  Result<ObjectMeta> put =
      store_->PutIfAbsent(BranchRefKey(Key(""), name),
                          EncodeBranchRef(b, options_->clock->NowMicros(), NewUlidString()));
  if (put.status().IsAlreadyExists()) return Status::AlreadyExists("branch '" + name + "' exists");
  RETURN_NOT_OK(put.status());
  DatasetVersion v = *state_;
  v.branch = b;
  Dataset out = WithState(std::move(v));
  out.branch_ = name;
  return out;
}

Status DeleteBranchFiles(ObjectStore& store, const std::string& root_prefix,
                         const std::string& name) {
  RETURN_NOT_OK(ValidateRefName("branch", name));
  const std::string ref_key = BranchRefKey(root_prefix, name);
  RETURN_NOT_OK_CTX(store.Head(ref_key).status(), "branch '" + name + "'");
  // Refuse while a child branch or a tag depends on it.
  const std::string bprefix = root_prefix + "_refs/branches/";
  ASSIGN_OR_RETURN(auto branches, store.ListAll(bprefix));
  for (const ObjectInfo& o : branches) {
    std::string child = o.key.substr(bprefix.size());
    child.resize(child.size() - 5);
    Result<std::string> text = store.Get(o.key);
    if (text.status().IsNotFound()) continue;  // deleted since the listing
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, child));
    if (info.parent == name) {
      return Status::FailedPrecondition("branch '" + name + "' has child branch '" + child +
                                        "'; delete it first");
    }
  }
  const std::string tprefix = root_prefix + "_refs/tags/";
  ASSIGN_OR_RETURN(auto tags, store.ListAll(tprefix));
  for (const ObjectInfo& o : tags) {
    ASSIGN_OR_RETURN(std::string text, store.Get(o.key));
    ASSIGN_OR_RETURN(TagRef t, DecodeTagRef(text, o.key));
    if (t.branch == name) {
      return Status::FailedPrecondition("tag '" + o.key.substr(tprefix.size()) +
                                        "' points at branch '" + name + "'; delete it first");
    }
  }
  // Newest versions first, so a crash part-way leaves an older, complete
  // version; the ref goes last, so a retried delete finishes the job.
  const std::string dir = root_prefix + Dataset::BranchDir(name);
  ASSIGN_OR_RETURN(auto version_files, store.ListAll(dir + "_versions/"));
  for (const ObjectInfo& o : version_files) RETURN_NOT_OK(store.Delete(o.key));
  ASSIGN_OR_RETURN(auto files, store.ListAll(dir));
  for (const ObjectInfo& o : files) RETURN_NOT_OK(store.Delete(o.key));
  return store.Delete(ref_key);
}

Status Dataset::DeleteBranch(const std::string& name) const {
  return DeleteBranchFiles(*store_, Key(""), name);
}

Result<std::optional<DatasetVersion>> Dataset::OwnVersionFile(const std::string& branch,
                                                              uint64_t version) const {
  const std::string key = Key(BranchDir(branch) + "_versions/" + VersionFileName(version));
  Result<std::string> bytes = store_->Get(key);
  if (bytes.status().IsNotFound()) return std::optional<DatasetVersion>();
  RETURN_NOT_OK(bytes.status());
  ASSIGN_OR_RETURN(DatasetVersion v, DecodeVersionFile(*bytes, "version file '" + key + "'"));
  RETURN_NOT_OK(CheckVersionNumber(key, version, v.version));
  return std::optional<DatasetVersion>(std::move(v));
}

Status Dataset::RemoveOwnVersion(const std::string& branch, uint64_t version,
                                 const std::string& txn) const {
  RETURN_NOT_OK(ValidateRefName("branch", branch));
  const std::string file = Key(BranchDir(branch) + "_versions/" + VersionFileName(version));
  const std::string what =
      "version " + std::to_string(version) + " of branch '" + branch + "' is not withdrawn: ";
  // Read again just before the delete: another commit at that number since
  // the caller looked is never removed (a window of one GET remains).
  auto remove = [&]() -> Status {
    ASSIGN_OR_RETURN(std::optional<DatasetVersion> v, OwnVersionFile(branch, version));
    if (!v) return Status::OK();
    if (v->txn.id != txn) {
      return Status::FailedPrecondition(what + "it is another commit (transaction " + v->txn.id +
                                        ") than the one asked for");
    }
    return store_->Delete(file);
  };
  Result<std::string> ref = store_->Get(BranchRefKey(Key(""), branch));
  if (!ref.ok() && !ref.status().IsNotFound()) return ref.status();
  if (ref.ok()) {
    ASSIGN_OR_RETURN(BranchInfo self, DecodeBranchRef(*ref, branch));
    if (version <= self.parent_version) return remove();  // no version look-up reads it
  }
  ASSIGN_OR_RETURN(std::optional<uint64_t> own, LatestOwnVersion(branch, /*use_hint=*/false));
  if (own != version) {
    return Status::FailedPrecondition(what + "it is not the newest there (" +
                                      (own ? std::to_string(*own) : std::string("none")) + ")");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> branches, ListBranches());
  for (const std::string& child : branches) {
    Result<std::string> text = store_->Get(BranchRefKey(Key(""), child));
    if (text.status().IsNotFound()) continue;  // deleted since the listing
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(*text, child));
    if (info.parent == branch && info.parent_version >= version) {
      return Status::FailedPrecondition(what + "branch '" + child + "' forks from it");
    }
  }
  ASSIGN_OR_RETURN(auto tags, ReadTagRefs(*store_, Key("_refs/tags/")));
  for (const auto& [name, t] : tags) {
    if (t.branch == branch && t.version >= version) {
      return Status::FailedPrecondition(what + "tag '" + name + "' names it");
    }
  }
  return remove();
}

Result<std::vector<std::string>> Dataset::ListBranches() const {
  std::vector<std::string> out;
  const std::string prefix = Key("_refs/branches/");
  ASSIGN_OR_RETURN(auto objects, store_->ListAll(prefix));
  for (const ObjectInfo& o : objects) {
    std::string name = o.key.substr(prefix.size());
    if (name.ends_with(".json")) out.push_back(name.substr(0, name.size() - 5));
  }
  return out;
}

}  // namespace loam
