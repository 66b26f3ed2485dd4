#include "ingest/external_sorter.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/local_object_store.h"

namespace loam::ingest {

Result<std::unique_ptr<ScratchSpace>> ScratchSpace::Create(const std::string& parent) {
  std::error_code ec;
  const std::filesystem::path base =
      parent.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(parent);
  if (ec) return Status::Unavailable("no temporary directory for spilled keys: " + ec.message());
  std::string pattern = (base / "loam-keys-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Status::Unavailable("cannot create a scratch directory for spilled keys under " +
                               base.string() + ": " + std::strerror(errno));
  }
  Result<std::shared_ptr<LocalObjectStore>> store = LocalObjectStore::Open(pattern);
  if (!store.ok()) {
    std::filesystem::remove_all(pattern, ec);
    return store.status();
  }
  return std::unique_ptr<ScratchSpace>(new ScratchSpace(pattern, std::move(*store)));
}

ScratchSpace::~ScratchSpace() {
  std::error_code ec;  // best effort: a leftover directory holds only scratch runs
  std::filesystem::remove_all(dir_, ec);
}

Status ScratchSpace::Put(const std::string& key, std::string_view bytes) {
  StringSource source(bytes);
  return Put(key, source);
}

Status ScratchSpace::Put(const std::string& key, ByteSource& source) {
  PutOptions o;
  o.durable = false;  // lives for one run; a crash restarts the run
  return store_->Write(key, source, o).status();
}

Result<std::string> ScratchSpace::Read(const std::string& key, uint64_t offset, uint64_t length) {
  return store_->GetRange(key, offset, length);
}

void ScratchSpace::Delete(const std::string& key) {
  static_cast<void>(store_->DeleteRelaxed(key));  // the directory goes with the space anyway
}

std::string ScratchSpace::NewKey() { return "run-" + std::to_string(next_.fetch_add(1)); }

}  // namespace loam::ingest
