// Opening and making a workspace: the format gate every open passes first
// (docs/format/manifest.md, "Workspace format"), the workspace facts in
// `_control/workspace.json`, and recovery on open.
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/workspace.h"

namespace loam {
namespace {

using json = nlohmann::json;

// "<root>/_control/workspace.json": facts fixed when the workspace is made.
std::string WorkspaceInfoKey(const std::string& root) {
  return (root.empty() ? "" : root + "/") + "_control/workspace.json";
}

struct WorkspaceInfo {
  std::string owner;
  std::string id;  // "" for workspaces made before ids existed
};

Result<WorkspaceInfo> ReadInfo(ObjectStore& store, const std::string& root) {
  Result<std::string> text = store.Get(WorkspaceInfoKey(root));
  if (text.status().IsNotFound()) return WorkspaceInfo{};  // made before owners existed
  RETURN_NOT_OK(text.status());
  json j = ParseJson(*text);
  if (!j.is_object() || !j.contains("owner") || !j["owner"].is_string() ||
      (j.contains("id") && !j["id"].is_string())) {
    return Status::DataLoss("malformed " + WorkspaceInfoKey(root));
  }
  return WorkspaceInfo{j["owner"].get<std::string>(), StringAt(j, "id")};
}

// The stamp first, before the manifest or any branch is read: a workspace in
// another format is refused before anything of it is decoded as this one's.
Status CheckFormat(ObjectStore& store, const std::string& root, const Manifest* manifest,
                   const Result<FormatStamp>& stamp) {
  if (stamp.ok()) return ServableOrRefusal(FindingOf(*stamp), root);
  if (manifest == nullptr) return Status::OK();  // checked once the manifest is open
  ASSIGN_OR_RETURN(FormatFinding found, FindFormat(store, root, *manifest));
  return ServableOrRefusal(found, root);
}

}  // namespace

// --- opening -------------------------------------------------------------------------

Result<std::shared_ptr<WorkspaceEngine>> WorkspaceEngine::Init(std::shared_ptr<ObjectStore> store,
                                                               std::string root,
                                                               WorkspaceOptions options) {
  ASSIGN_OR_RETURN(auto manifest, Manifest::Create(store, root, options.manifest));
  const std::string id = NewUlidString();
  const std::string info = json{{"format", 1}, {"owner", options.owner}, {"id", id}}.dump();
  StringSource src(info);
  RETURN_NOT_OK(store->Write(WorkspaceInfoKey(root), src, {PutCondition::kIfAbsent}).status());
  FormatStamp stamp;
  stamp.format = kWorkspaceFormat;
  stamp.stamped_by = "init";
  stamp.stamped_micros = options.manifest.dataset.clock->NowMicros();
  RETURN_NOT_OK(WriteFormatStamp(*store, root, stamp));
  std::shared_ptr<WorkspaceEngine> ws(new WorkspaceEngine(std::move(store), std::move(root),
                                                          std::move(options), std::move(manifest)));
  ws->owner_ = ws->options_.owner;
  ws->id_ = id;
  return ws;
}

Result<std::shared_ptr<WorkspaceEngine>> WorkspaceEngine::Open(std::shared_ptr<ObjectStore> store,
                                                               std::string root,
                                                               WorkspaceOptions options) {
  Result<FormatStamp> stamp = ReadFormatStamp(*store, root);
  if (!stamp.ok() && !stamp.status().IsNotFound()) return stamp.status();
  if (!options.any_format) RETURN_NOT_OK(CheckFormat(*store, root, nullptr, stamp));
  ASSIGN_OR_RETURN(auto manifest, Manifest::Open(store, root, options.manifest));
  if (!options.any_format && !stamp.ok()) {
    RETURN_NOT_OK(CheckFormat(*store, root, manifest.get(), stamp));
  }
  ASSIGN_OR_RETURN(WorkspaceInfo info, ReadInfo(*store, root));
  std::shared_ptr<WorkspaceEngine> ws(new WorkspaceEngine(std::move(store), std::move(root),
                                                          std::move(options), std::move(manifest)));
  ws->owner_ = std::move(info.owner);
  ws->id_ = std::move(info.id);
  if (ws->options_.recover_on_open) {
    RETURN_NOT_OK(ws->Recover(ws->options_.recovery_grace_micros).status());
  }
  return ws;
}

}  // namespace loam
