// Branches over the service (docs/branches.md): listed and read by any
// caller, created and deleted by the workspace owner, merged by whoever holds
// the grants the merge needs (checked by the engine inside its commit).
#include "common/status_macros.h"
#include "service/service.h"

namespace loam::service {
namespace {

std::string PublicName(const std::string& branch) { return branch.empty() ? "main" : branch; }

}  // namespace

Result<BranchState> Service::BranchOf(const std::string& name) const {
  const std::string engine = EngineBranchName(name);
  if (!engine.empty()) RETURN_NOT_OK(ValidateRefName("branch", engine));
  BranchState b;
  b.name = PublicName(engine);
  ASSIGN_OR_RETURN(WorkspaceEngine::BranchTip tip, ws_->Tip(engine));
  b.version = tip.manifest_version;
  b.protected_branch = tip.graph_head && tip.graph_head->protected_branch;
  if (!engine.empty()) {
    ASSIGN_OR_RETURN(BranchInfo info, ws_->manifest().BranchParent(engine));
    b.parent = PublicName(info.parent);
    b.parent_version = info.parent_version;
  }
  return b;
}

Result<std::vector<BranchState>> Service::ListBranches(const CallContext& ctx) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(std::vector<std::string> names, ws_->ListBranches());
  names.insert(names.begin(), "main");  // the engine lists the others
  std::vector<BranchState> out;
  for (const std::string& name : names) {
    Result<BranchState> b = BranchOf(PublicName(name));
    if (b.status().IsNotFound()) continue;  // deleted since it was listed
    RETURN_NOT_OK(b.status());
    out.push_back(*std::move(b));
  }
  return out;
}

Result<BranchState> Service::DescribeBranch(const CallContext& ctx, const std::string& name) {
  RETURN_NOT_OK(CheckContext(ctx));
  return BranchOf(name);
}

Status Service::OwnerOnly(const CallContext& ctx, const std::string& what) const {
  if (ctx.principal == ws_->owner()) return Status::OK();
  return Status::PermissionDenied("only the workspace owner " + what + "; '" + ctx.principal +
                                  "' is not the owner");
}

Result<BranchState> Service::CreateBranch(const CallContext& ctx, const std::string& name,
                                          const std::string& from,
                                          std::optional<uint64_t> version) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(OwnerOnly(ctx, "creates branches"));
  if (name == "main") return Status::InvalidArgument("'main' always exists");
  RETURN_NOT_OK(ws_->CreateBranch(name, EngineBranchName(from), version));
  return BranchOf(name);
}

Status Service::DeleteBranch(const CallContext& ctx, const std::string& name) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(OwnerOnly(ctx, "deletes branches"));
  if (EngineBranchName(name).empty())
    return Status::InvalidArgument("the main branch cannot be deleted");
  RETURN_NOT_OK(BranchOf(name).status());  // NotFound for a branch that is not there
  return ws_->DeleteBranch(name);
}

Result<BranchState> Service::ProtectBranch(const CallContext& ctx, const std::string& name,
                                           bool on) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(OwnerOnly(ctx, "protects branches"));
  RETURN_NOT_OK(BranchOf(name).status());
  RETURN_NOT_OK(ws_->SetBranchProtected(EngineBranchName(name), on, ctx.principal));
  return BranchOf(name);
}

Result<uint64_t> Service::BranchVersion(const CallContext& ctx, const std::string& name) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(BranchState b, BranchOf(name));
  return b.version;
}

Result<std::optional<MergeResult>> Service::FindMerge(const CallContext& ctx,
                                                      const std::string& branch,
                                                      const std::string& merge_id,
                                                      const std::string& into) {
  RETURN_NOT_OK(CheckContext(ctx));
  return ws_->FindMerge(EngineBranchName(into), merge_id, EngineBranchName(branch));
}

Result<MergeResult> Service::MergeBranch(const CallContext& ctx, MergeRequest request) {
  RETURN_NOT_OK(CheckContext(ctx));
  request.source = EngineBranchName(request.source);
  request.into = EngineBranchName(request.into);
  request.principal = ctx.principal;
  return ws_->Merge(request);
}

Result<MergeRevertResult> Service::RevertMerge(const CallContext& ctx, const std::string& merge_id,
                                               const std::string& into) {
  RETURN_NOT_OK(CheckContext(ctx));
  MergeRevertRequest r;
  r.into = EngineBranchName(into);
  r.merge_id = merge_id;
  r.principal = ctx.principal;
  return ws_->RevertMerge(r);
}

}  // namespace loam::service
