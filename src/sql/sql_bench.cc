// Statements timed side by side, in one process, warm: through `RunSql`
// on a Loam workspace and through SQLite on its native table holding the
// same rows (bench/sql-vs-peers builds both). Each answer is checked equal
// before its times count.
//
//   sql_bench WORKSPACE SQLITE_DB REPEAT NAME=STATEMENT...
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "sql/sql.h"

namespace loam::sql {
namespace {

using Clock = std::chrono::steady_clock;

// The answer as text, in order, so that two systems' answers compare.
class TextSink : public SqlSink {
 public:
  std::string text;
  Status Begin(const std::vector<SqlColumn>&) override { return Status::OK(); }
  Status Row(const std::vector<SqlValue>& row) override {
    for (const SqlValue& v : row) {
      AppendJsonValue(v, &text);
      text += ' ';
    }
    text += '\n';
    return Status::OK();
  }
  Status End(int64_t, bool) override { return Status::OK(); }
};

std::string NativeAnswer(sqlite3* db, const std::string& statement) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, statement.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return std::string("error: ") + sqlite3_errmsg(db);
  }
  std::string text;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      SqlValue v;
      switch (sqlite3_column_type(stmt, i)) {
        case SQLITE_INTEGER:
          v = static_cast<int64_t>(sqlite3_column_int64(stmt, i));
          break;
        case SQLITE_FLOAT:
          v = sqlite3_column_double(stmt, i);
          break;
        case SQLITE_TEXT:
          v = std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                          sqlite3_column_bytes(stmt, i));
          break;
        default:
          break;
      }
      AppendJsonValue(v, &text);
      text += ' ';
    }
    text += '\n';
  }
  sqlite3_finalize(stmt);
  return text;
}

double MillisSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: sql_bench WORKSPACE SQLITE_DB REPEAT NAME=STATEMENT...\n");
    return 2;
  }
  Result<std::unique_ptr<Workspace>> ws = Workspace::Open(argv[1]);
  if (!ws.ok()) {
    std::fprintf(stderr, "%s\n", ws.status().ToString().c_str());
    return 1;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[2], &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return 1;
  const int repeat = std::max(1, std::atoi(argv[3]));
  std::printf("%-10s %12s %12s %8s  (median of %d warm runs, one process)\n", "query", "loam ms",
              "sqlite ms", "ratio", repeat);
  int failed = 0;
  for (int q = 4; q < argc; ++q) {
    const std::string arg = argv[q];
    const std::string name = arg.substr(0, arg.find('='));
    const std::string statement = arg.substr(arg.find('=') + 1);
    TextSink first;
    Status s = RunSql(**ws, statement, {}, first);  // warms both, and checks the answers
    const std::string native = NativeAnswer(db, statement);
    if (!s.ok() || first.text != native) {
      std::printf("%-10s answers differ: %s\n", name.c_str(), s.ToString().c_str());
      ++failed;
      continue;
    }
    std::vector<double> loam_ms, sqlite_ms;
    for (int i = 0; i < repeat; ++i) {
      TextSink sink;
      auto t0 = Clock::now();
      if (!RunSql(**ws, statement, {}, sink).ok()) return 1;
      loam_ms.push_back(MillisSince(t0));
      t0 = Clock::now();
      NativeAnswer(db, statement);
      sqlite_ms.push_back(MillisSince(t0));
    }
    const double l = Median(loam_ms), n = Median(sqlite_ms);
    std::printf("%-10s %12.3f %12.3f %8.2f\n", name.c_str(), l, n, l / n);
  }
  sqlite3_close(db);
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace loam::sql

int main(int argc, char** argv) { return loam::sql::Run(argc, argv); }
