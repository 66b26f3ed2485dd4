// Branch and tag reference files under "<root>/_refs/" (docs/format/dataset.md).
// A branch ref is the authority that the branch exists.
#pragma once

#include <cstdint>
#include <string>

#include "dataset/version_file.h"
#include "loam/object_store.h"

namespace loam {

struct TagRef {
  std::string branch;  // "" = main
  uint64_t version = 0;
};

std::string BranchRefKey(const std::string& root_prefix, const std::string& name);
std::string TagRefKey(const std::string& root_prefix, const std::string& name);

// `id` is the branch's identity (a ULID), distinct for every creation.
std::string EncodeBranchRef(const BranchInfo& b, int64_t created_micros, const std::string& id);
Result<BranchInfo> DecodeBranchRef(std::string_view json, const std::string& name);

// No chain of parents from a branch to main is this long: refs that make one
// form a cycle, and every walk up the chain stops there with DataLoss.
inline constexpr int kMaxBranchDepth = 1000;
// DataLoss naming `branch` when `depth` parents were followed past the limit.
Status CheckBranchDepth(const std::string& branch, int depth);
Result<std::string> DecodeBranchRefId(std::string_view json, const std::string& name);
std::string EncodeTagRef(const TagRef& t);
// Removes branch `name` of the dataset at `root_prefix` ("" or "<root>/"):
// its versions, its own files, then its ref. FailedPrecondition while a
// child branch or a tag depends on it; NotFound when there is no such branch.
Status DeleteBranchFiles(ObjectStore& store, const std::string& root_prefix,
                         const std::string& name);
Result<TagRef> DecodeTagRef(std::string_view json, const std::string& name);

}  // namespace loam
