// Branches of the `__manifest` dataset (manifest.h), and the withdrawal of a
// version of a branch that must not stand.
#include "common/status_macros.h"
#include "manifest/manifest.h"

namespace loam {

Status Manifest::CreateBranch(const std::string& name, const std::string& from, uint64_t version) {
  ASSIGN_OR_RETURN(Dataset src, OpenDataset(from, version));
  return src.CreateBranch(name).status();
}

Status Manifest::DeleteBranch(const std::string& name) {
  ASSIGN_OR_RETURN(Dataset main, OpenDataset(""));
  RETURN_NOT_OK(main.DeleteBranch(name));
  std::lock_guard<std::mutex> lock(mu_);
  writer_base_.erase(name);
  return Status::OK();
}

Result<std::vector<std::string>> Manifest::ListBranches() const {
  ASSIGN_OR_RETURN(Dataset main, OpenDataset(""));
  return main.ListBranches();
}

Result<std::string> Manifest::BranchId(const std::string& name) const {
  if (name.empty()) return std::string();
  ASSIGN_OR_RETURN(Dataset main, OpenDataset(""));
  return main.BranchId(name);
}

Result<BranchInfo> Manifest::BranchParent(const std::string& name) const {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(name));
  return ds.state().branch;
}

Result<std::optional<std::string>> Manifest::OwnVersionTxn(const std::string& branch,
                                                           uint64_t version) const {
  ASSIGN_OR_RETURN(Dataset main, OpenDataset(""));
  ASSIGN_OR_RETURN(std::optional<DatasetVersion> v, main.OwnVersionFile(branch, version));
  if (!v) return std::optional<std::string>();
  return std::optional<std::string>(std::move(v->txn.id));
}

Status Manifest::WithdrawVersion(const std::string& branch, uint64_t version,
                                 const std::string& txn) {
  if (branch.empty()) return Status::InvalidArgument("main's versions are never withdrawn");
  ASSIGN_OR_RETURN(Dataset main, OpenDataset(""));
  // Its files are left unreferenced, for retention's cleanup as an aborted
  // commit's are; a latest-version hint naming it is ignored once it is gone.
  RETURN_NOT_OK(main.RemoveOwnVersion(branch, version, txn));
  std::lock_guard<std::mutex> lock(mu_);
  writer_base_.erase(branch);
  return Status::OK();
}

}  // namespace loam
