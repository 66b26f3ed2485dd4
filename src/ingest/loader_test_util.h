// The fixture of the loader's tests (loader_test.cc, loader_resume_test.cc,
// loader_rules_test.cc): a workspace in memory with a keyed table
// `accounts`, inputs read from a map.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ingest/loader.h"
#include "io/memory_object_store.h"

namespace loam::ingest {

inline Schema Accounts() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String()},
                 {"balance", DataType::Decimal(10, 2)}}};
}

// A workspace in `store` owned by "owner", whose recovery takes over a
// write at once (no grace).
inline std::shared_ptr<WorkspaceEngine> NewLoaderWorkspace(std::shared_ptr<ObjectStore> store) {
  WorkspaceOptions o;
  o.owner = "owner";
  o.recovery_grace_micros = 0;
  return WorkspaceEngine::Init(std::move(store), "ws", o).value();
}

// Runs `r`: its record, or an empty one (and a test failure) when the
// loader could not run it at all.
inline RunRecord RunLoader(const std::shared_ptr<WorkspaceEngine>& ws, const RunRequest& r,
                           LoaderOptions options) {
  Result<RunRecord> rec = Loader(ws, std::move(options)).Run(r);
  EXPECT_TRUE(rec.ok()) << rec.status();
  return rec.ok() ? *rec : RunRecord{};
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = NewLoaderWorkspace(store_);
    ASSERT_TRUE(ws_->CreateTable("accounts", Accounts(), {"id"}).ok());
  }

  // Input files live in a map: the opener reads them through a StringSource.
  LoaderOptions Options() {
    LoaderOptions o;
    o.open_input = [this](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      auto it = files_.find(file);
      if (it == files_.end()) return Status::NotFound("no input " + file);
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(it->second));
    };
    return o;
  }

  void ExpectExactlyOnceAfterCrashes(bool power_loss);

  RunRequest Request(LoadMode mode, std::vector<std::string> files) {
    RunRequest r;
    r.table = "accounts";
    r.mode = mode;
    r.files = std::move(files);
    r.principal = "owner";
    return r;
  }

  RunRecord Load(const RunRequest& r, LoaderOptions opts) {
    return RunLoader(ws_, r, std::move(opts));
  }
  RunRecord Load(const RunRequest& r) { return Load(r, Options()); }

  // Every row as "id:name:balance", sorted by id.
  std::string Contents() {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, "accounts").value().ReadAll().value();
    std::map<int64_t, std::string> rows;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      std::string line =
          all.columns[1].IsNull(r) ? "null" : std::string(all.columns[1].GetBytes(r));
      const Int128 b = all.columns[2].GetInt128(r);
      line += ":" + (all.columns[2].IsNull(r) ? std::string("null")
                                              : std::to_string(static_cast<int64_t>(b.lo)));
      rows[all.columns[0].GetInt64(r)] = line;
    }
    std::string out;
    for (const auto& [id, line] : rows) out += std::to_string(id) + ":" + line + " ";
    return out;
  }
  // Every object of the workspace but run records and idempotency entries.
  std::vector<std::string> Objects() {
    std::vector<std::string> out;
    for (const ObjectInfo& o : store_->ListAll("ws/").value()) {
      if (o.key.find("_control/runs/") == std::string::npos &&
          o.key.find("_control/idempotency/") == std::string::npos) {
        out.push_back(o.key);
      }
    }
    return out;
  }
  int64_t Version() { return ws_->Current().value().Find("accounts")->head.table_version; }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
};

}  // namespace loam::ingest
