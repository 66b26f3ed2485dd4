// Loam embedded: open a workspace, create a table, load a CSV file into it
// exactly once, scan it, change it, and read it as it was before the change.
//
//   quickstart DIR     (DIR: a directory for the workspace and the CSV file)
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "loam/load.h"
#include "loam/scan.h"
#include "loam/workspace.h"

namespace {

int Fail(const std::string& what, const loam::Status& status) {
  std::cerr << what << ": " << status.ToString() << "\n";
  return 1;
}

void Print(const std::vector<loam::RecordBatch>& batches) {
  for (const loam::RecordBatch& batch : batches) {
    for (int64_t row = 0; row < batch.num_rows(); ++row) {
      std::cout << "  " << batch.columns[0].GetInt64(row) << " " << batch.columns[1].GetBytes(row)
                << " " << batch.columns[2].GetInt64(row) << "\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: quickstart DIR\n";
    return 2;
  }
  const std::string dir = argv[1];

  // 1. Open (or make) the workspace. A local directory here; an s3:// URI
  //    opens the same workspace from a bucket.
  loam::OpenOptions open;
  open.create_if_missing = true;
  open.principal = "quickstart";
  auto ws = loam::Workspace::Open(dir + "/workspace", open);
  if (!ws.ok()) return Fail("open", ws.status());

  // 2. A table keyed by id.
  loam::Schema schema{{{"id", loam::DataType::Int64(), false},
                       {"city", loam::DataType::String(), true},
                       {"visits", loam::DataType::Int64(), true}}};
  if (auto made = (*ws)->CreateTable("visits", schema, {"id"}); !made.ok()) {
    if (!made.status().Is(loam::ErrorCode::kAlreadyExists)) return Fail("create", made.status());
  }

  // 3. Load a CSV file. The idempotency key makes the load happen once: run
  //    the program again and the same run comes back, nothing is loaded twice.
  std::ofstream(dir + "/visits.csv") << "id,city,visits\n1,Lisbon,10\n2,Oslo,7\n3,Quito,3\n";
  loam::LoadRequest load;
  load.table = "visits";
  load.files = {dir + "/visits.csv"};
  load.idempotency_key = "visits-2026-12-01";
  auto run = loam::Load(**ws, load, [](const loam::LoadProgress& p) {
    std::cout << "run " << p.run_id << ": " << p.state << ", " << p.rows_read << " rows read\n";
  });
  if (!run.ok()) return Fail("load", run.status());
  if (run->state != "succeeded") {
    std::cerr << "load " << run->state << ": " << run->error_code << ": " << run->error << "\n";
    return 1;
  }
  std::cout << (run->reused ? "loaded before, by run " : "loaded by run ") << run->run_id << ": "
            << run->inserted << " rows at workspace version " << run->workspace_version << "\n";
  // The version the load committed (an earlier run's, when reused).
  const uint64_t loaded_at = run->workspace_version;

  // 4. Scan with a filter.
  loam::ScanOptions busy;
  busy.where = {loam::Predicate::Ge("visits", int64_t{5})};
  auto rows = loam::Scan(**ws, "visits", busy);
  if (!rows.ok()) return Fail("scan", rows.status());
  std::cout << "cities with at least 5 visits:\n";
  Print(*rows);

  // 5. Change a row (an upsert by key), then read the table as it was.
  loam::RecordBatch change(schema);
  if (auto s = change.AppendRow({int64_t{2}, std::string("Oslo"), int64_t{8}}); !s.ok()) {
    return Fail("row", s);
  }
  loam::WriteOptions upsert;
  upsert.mode = loam::LoadMode::kUpsert;
  auto changed = (*ws)->Write("visits", change, upsert);
  if (!changed.ok()) return Fail("upsert", changed.status());
  auto now = loam::Lookup(**ws, "visits", {int64_t{2}});
  loam::ReadOptions before;
  before.version = loaded_at;
  auto then = loam::Lookup(**ws, "visits", {int64_t{2}}, before);
  if (!now.ok() || !then.ok() || !now->has_value() || !then->has_value()) {
    return Fail("lookup", now.ok() ? then.status() : now.status());
  }
  std::cout << "Oslo's visits: " << (**now).columns[2].GetInt64(0) << " now, "
            << (**then).columns[2].GetInt64(0) << " at version " << loaded_at << "\n";
  return 0;
}
