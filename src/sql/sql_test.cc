// SQL over Loam tables against SQLite's own answers: the same rows, as SQL
// sees them (docs/sql.md, "Types"), loaded into a native SQLite table, and
// every query run on both.
#include "sql/sql.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "loam/load.h"
#include "loam/scan.h"

namespace loam::sql {
namespace {

namespace fs = std::filesystem;
using Rows = std::vector<std::vector<SqlValue>>;

struct Answer {
  std::vector<SqlColumn> columns;
  Rows rows;
  bool truncated = false;
};

class CollectingSink : public SqlSink {
 public:
  std::vector<Answer> answers;
  std::function<void()> on_first_row;  // runs once, at the first row
  Status Begin(const std::vector<SqlColumn>& columns) override {
    answers.push_back({columns, {}, false});
    return Status::OK();
  }
  Status Row(const std::vector<SqlValue>& row) override {
    if (on_first_row) std::exchange(on_first_row, nullptr)();
    answers.back().rows.push_back(row);
    return Status::OK();
  }
  Status End(int64_t rows, bool truncated) override {
    EXPECT_EQ(rows, static_cast<int64_t>(answers.back().rows.size()));
    answers.back().truncated = truncated;
    return Status::OK();
  }
};

Schema Wide() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String(), true},
                 {"city", DataType::String(), true},
                 {"score", DataType::Float64(), true},
                 {"qty", DataType::Int32(), true},
                 {"active", DataType::Bool(), true},
                 {"created_at", DataType::Timestamp(), true},
                 {"day", DataType::Date(), true},
                 {"price", DataType::Decimal(10, 2), true},
                 {"doc", DataType::Json(), true},
                 {"raw", DataType::Binary(), true}}};
}

constexpr int64_t kHour = 3'600'000'000LL;
constexpr int64_t kDay2024 = 19723;  // 2024-01-01

// Row i: every type, NULLs in every nullable column, texts that differ
// only by case, timestamps with and without fractions, and dates and
// timestamps beyond year 9999 (their text sorts before 2024's).
std::vector<Value> WideRow(int64_t i) {
  const auto null_if = [&](int64_t m, Value v) { return i % m == 0 ? Value() : std::move(v); };
  const char* cities[] = {"Oslo", "Lima", "Pune", "Kyiv", "oslo"};
  int64_t ts = (kDay2024 * 24 + i * 7) * kHour + (i % 4 == 1 ? 500'000 : 0);
  int64_t day = kDay2024 + i;
  if (i == 5) ts = (2932897LL + 200) * 24 * kHour;  // year 10000
  if (i == 8) day = 2932897 + 3;                    // 10000-01-04
  return {Value(i),
          null_if(17, Value("n" + std::to_string(i * 7 % 50))),
          null_if(23, Value(std::string(cities[i % 5]))),
          null_if(19, Value((i % 40) * 0.25 - 3)),
          null_if(29, Value(int64_t{i * 13 % 101 - 50})),
          null_if(31, Value(i % 3 == 0)),
          null_if(37, Value(ts)),
          null_if(41, Value(day)),
          null_if(11, Value(Int128::FromInt64(i * 125))),
          Value("{\"k\":" + std::to_string(i % 9) + "}"),
          Value(std::string{static_cast<char>(i % 7), 0, 'x'})};
}

// The SQL value of a Loam value, as the virtual table gives it.
SqlValue AsSql(const Column& c, int64_t row) {
  if (c.IsNull(row)) return std::monostate{};
  switch (c.type().id) {
    case TypeId::kBool:
      return int64_t{c.GetBool(row) ? 1 : 0};
    case TypeId::kInt32:
      return int64_t{c.GetInt32(row)};
    case TypeId::kInt64:
      return c.GetInt64(row);
    case TypeId::kFloat64:
      return c.GetFloat64(row);
    case TypeId::kBinary:
      return Blob{std::string(c.GetBytes(row))};
    default: {
      std::string text;
      AppendCanonicalText(c, row, &text);
      return text;
    }
  }
}

// Rows as JSON Lines, for readable failures.
std::string Show(const Rows& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (const SqlValue& v : row) {
      AppendJsonValue(v, &out);
      out += ' ';
    }
    out += '\n';
  }
  return out;
}

class SqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loam-sql-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    OpenOptions o;
    o.create_if_missing = true;
    Result<std::unique_ptr<Workspace>> ws = Workspace::Open((dir_ / "ws").string(), o);
    ASSERT_TRUE(ws.ok()) << ws.status().ToString();
    ws_ = std::move(*ws);
    ASSERT_TRUE(ws_->CreateTable("t", Wide(), {"id"}).ok());
    ASSERT_EQ(sqlite3_open(":memory:", &native_), SQLITE_OK);
    Exec(
        "CREATE TABLE t(id INTEGER, name TEXT, city TEXT, score REAL, qty INTEGER, active "
        "INTEGER, created_at TEXT, day TEXT, price TEXT, doc TEXT, raw BLOB)");
    // Three commits: three files, read in turn.
    for (int64_t first : {0, 100, 200}) {
      RecordBatch b(Wide());
      for (int64_t i = first; i < first + 100; ++i) ASSERT_TRUE(b.AppendRow(WideRow(i)).ok());
      Result<Commit> c = ws_->Write("t", b);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      if (first == 0) first_version_ = c->workspace_version;
      AddNative("t", b);
    }
    ASSERT_TRUE(ws_->CreateTable("dim",
                                 Schema{{{"city", DataType::String(), false},
                                         {"region", DataType::String(), true}}},
                                 {"city"})
                    .ok());
    RecordBatch d(
        Schema{{{"city", DataType::String(), false}, {"region", DataType::String(), true}}});
    for (auto [city, region] :
         {std::pair{"Oslo", "north"}, {"Lima", "south"}, {"Pune", "east"}, {"Kyiv", "east"}}) {
      ASSERT_TRUE(d.AppendRow({Value(std::string(city)), Value(std::string(region))}).ok());
    }
    ASSERT_TRUE(ws_->Write("dim", d).ok());
    Exec("CREATE TABLE dim(city TEXT, region TEXT)");
    AddNative("dim", d);
  }
  void TearDown() override {
    sqlite3_close(native_);
    ws_.reset();
    fs::remove_all(dir_);
  }

  void Exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(native_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
  }

  void AddNative(const std::string& table, const RecordBatch& b) {
    std::string sql = "INSERT INTO " + table + " VALUES (?";
    for (size_t i = 1; i < b.columns.size(); ++i) sql += ",?";
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(native_, (sql + ")").c_str(), -1, &stmt, nullptr), SQLITE_OK);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      for (size_t i = 0; i < b.columns.size(); ++i) {
        const SqlValue v = AsSql(b.columns[i], r);
        const int at = static_cast<int>(i) + 1;
        if (const auto* n = std::get_if<int64_t>(&v)) sqlite3_bind_int64(stmt, at, *n);
        if (const auto* d = std::get_if<double>(&v)) sqlite3_bind_double(stmt, at, *d);
        if (const auto* s = std::get_if<std::string>(&v)) {
          sqlite3_bind_text(stmt, at, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
        }
        if (const auto* x = std::get_if<Blob>(&v)) {
          sqlite3_bind_blob(stmt, at, x->bytes.data(), static_cast<int>(x->bytes.size()),
                            SQLITE_TRANSIENT);
        }
        if (std::holds_alternative<std::monostate>(v)) sqlite3_bind_null(stmt, at);
      }
      ASSERT_EQ(sqlite3_step(stmt), SQLITE_DONE);
      sqlite3_reset(stmt);
    }
    sqlite3_finalize(stmt);
  }

  Rows Native(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(native_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(native_) << " in " << sql;
    Rows rows;
    while (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<SqlValue> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        switch (sqlite3_column_type(stmt, i)) {
          case SQLITE_INTEGER:
            row.push_back(static_cast<int64_t>(sqlite3_column_int64(stmt, i)));
            break;
          case SQLITE_FLOAT:
            row.push_back(sqlite3_column_double(stmt, i));
            break;
          case SQLITE_TEXT:
            row.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                                      sqlite3_column_bytes(stmt, i)));
            break;
          case SQLITE_BLOB:
            row.push_back(Blob{std::string(static_cast<const char*>(sqlite3_column_blob(stmt, i)),
                                           sqlite3_column_bytes(stmt, i))});
            break;
          default:
            row.push_back(std::monostate{});
        }
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return rows;
  }

  Result<Answer> Loam(const std::string& sql, SqlOptions o = {}) {
    CollectingSink sink;
    Status s = RunSql(*ws_, sql, o, sink);
    if (!s.ok()) return s;
    if (sink.answers.size() != 1) return Status::Internal("not one answer");
    return sink.answers[0];
  }

  // The same rows (in the same order when `ordered`) from Loam and SQLite.
  void ExpectSame(const std::string& sql, bool ordered = false) {
    SCOPED_TRACE(sql);
    Result<Answer> loam = Loam(sql);
    ASSERT_TRUE(loam.ok()) << loam.status().ToString();
    Rows want = Native(sql), got = loam->rows;
    if (!ordered) {
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
    }
    EXPECT_EQ(Show(got), Show(want));
    EXPECT_EQ(got.size(), want.size());
  }

  // The plan SQLite chose for `sql`'s scan of a table (its idxStr).
  std::string PlanOf(const std::string& sql) {
    Result<Answer> a = Loam("EXPLAIN QUERY PLAN " + sql);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    std::string plans;
    for (const auto& row : a.ok() ? a->rows : Rows{}) plans += std::get<std::string>(row[3]) + "\n";
    return plans;
  }

  fs::path dir_;
  std::unique_ptr<Workspace> ws_;
  sqlite3* native_ = nullptr;
  uint64_t first_version_ = 0;
};

TEST_F(SqlTest, FiltersOnEveryTypeAnswerAsSQLiteDoes) {
  for (const char* where : {"qty > 10",
                            "qty = -3",
                            "qty BETWEEN -10 AND 10",
                            "qty IN (1, 2, 3, -50)",
                            "qty IS NULL",
                            "qty IS NOT NULL",
                            "qty > 2.5",
                            "qty = '5'",
                            "qty >= 7.0",
                            "score >= 1.5",
                            "score < 0",
                            "score IS NULL",
                            "score = 2",
                            "name = 'n7'",
                            "name > 'n3'",
                            "name IN ('n1', 'n14', 'zz')",
                            "city = 'oslo' COLLATE NOCASE",
                            "city LIKE 'o%'",
                            "city < 'M'",
                            "active = 1",
                            "active IS NULL",
                            "active < 2",
                            "created_at >= '2024-02-01'",
                            "created_at < '2024-01-10T12:00:00Z'",
                            "created_at BETWEEN '2024-01-05 00:00' AND '2024-01-20'",
                            "created_at = '2024-01-01T00:00:00Z'",
                            "created_at <= '2024-01-03T07:00:00.5Z'",
                            "created_at > '2025'",
                            "created_at < '3'",
                            "day <= '2024-03-01'",
                            "day > '2024'",
                            "day = '2024-02-29'",
                            "day < '2024-01-05' OR day > '2024-10-20'",
                            "price = '12.50'",
                            "price = '12.5'",
                            "price > '100'",
                            "doc = '{\"k\":5}'",
                            "raw = x'050078'",
                            "id = 42",
                            "id = 42 AND qty > 0",
                            "id IN (1, 5, 400)",
                            "id = '42'",
                            "id > 250 AND score > 1",
                            "created_at IS NULL",
                            "day IS NULL",
                            "created_at IS NULL AND qty > 0",
                            "id = 5 AND created_at < '2024-06-01'",
                            "id = 8 AND day <= '2024-12-31'",
                            "id IN (5, 8) AND created_at > '2024'"}) {
    ExpectSame(std::string("SELECT * FROM t WHERE ") + where);
  }
  ExpectSame("SELECT count(*) FROM t");
}

TEST_F(SqlTest, AggregatesJoinsOrderingAndLimitsAnswerAsSQLiteDoes) {
  ExpectSame(
      "SELECT city, count(*), sum(qty), avg(score), min(created_at), max(day), count(price) "
      "FROM t GROUP BY city ORDER BY city",
      true);
  ExpectSame("SELECT d.region, count(*) FROM t JOIN dim d ON d.city = t.city GROUP BY 1 ORDER BY 1",
             true);
  ExpectSame("SELECT t.id, d.region FROM t LEFT JOIN dim d USING (city) WHERE t.id < 20 ORDER BY 1",
             true);
  ExpectSame("SELECT id, name FROM t ORDER BY name, id LIMIT 7 OFFSET 3", true);
  ExpectSame("SELECT id FROM t LIMIT 5", true);
  ExpectSame("SELECT id FROM t WHERE qty > 0 LIMIT 4 OFFSET 2", true);
  ExpectSame("SELECT id FROM t WHERE qty > 0 LIMIT 9223372036854775807 OFFSET 3", true);
  ExpectSame("SELECT count(*) FROM t WHERE qty > (SELECT avg(qty) FROM t)");
  ExpectSame("SELECT a.id, b.id FROM t a JOIN t b ON a.id = b.qty ORDER BY 1, 2", true);
  ExpectSame("WITH big AS (SELECT id FROM t WHERE qty > 40) SELECT count(*) FROM big");
}

TEST_F(SqlTest, TypesAndColumnHeadersAreThoseDocumented) {
  Result<Answer> a = Loam("SELECT id, score, name, raw, 1 + 1, NULL FROM t WHERE id = 3");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::vector<std::string> types;
  for (const SqlColumn& c : a->columns) types.push_back(c.name + ":" + c.type);
  EXPECT_EQ(types, (std::vector<std::string>{"id:INTEGER", "score:REAL", "name:TEXT", "raw:BLOB",
                                             "1 + 1:INTEGER", "NULL:NULL"}));
  Result<Answer> text = Loam("SELECT created_at, day, price, doc, active FROM t WHERE id = 1");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rows[0],
            (std::vector<SqlValue>{std::string("2024-01-01T07:00:00.5Z"), std::string("2024-01-02"),
                                   std::string("1.25"), std::string("{\"k\":1}"), int64_t{0}}));
}

TEST_F(SqlTest, ComparisonsArePushedDownAndAWholeKeyIsALookUp) {
  // The plan is "colUsed limit offset lookup terms (column op argv)...".
  EXPECT_NE(PlanOf("SELECT name FROM t WHERE qty > 10").find(":18 -1 -1 0 1 4 3 0"),
            std::string::npos)
      << PlanOf("SELECT name FROM t WHERE qty > 10");
  EXPECT_NE(PlanOf("SELECT * FROM t WHERE id = 42").find(":2047 -1 -1 1 1 0 0 0"),
            std::string::npos)
      << PlanOf("SELECT * FROM t WHERE id = 42");
  // LIMIT reaches the scan only when every comparison is exact.
  EXPECT_NE(PlanOf("SELECT id FROM t WHERE qty = 3 LIMIT 2").find(":17 1 -1 0 1 4 0 0"),
            std::string::npos)
      << PlanOf("SELECT id FROM t WHERE qty = 3 LIMIT 2");
  EXPECT_NE(PlanOf("SELECT id FROM t WHERE day > '2024' LIMIT 2").find(":129 -1 -1 0 1 7 3 0"),
            std::string::npos)
      << PlanOf("SELECT id FROM t WHERE day > '2024' LIMIT 2");
  // A join looks each row up by the other table's key.
  EXPECT_NE(PlanOf("SELECT * FROM t JOIN dim USING (city)")
                .find("dim VIRTUAL TABLE INDEX 0:3 -1 -1 1 1 0 0 0"),
            std::string::npos)
      << PlanOf("SELECT * FROM t JOIN dim USING (city)");
}

TEST_F(SqlTest, EveryTableOfAStatementIsReadAtOnePinnedState) {
  Result<Answer> then = Loam("SELECT count(*) FROM t", [&] {
    SqlOptions o;
    o.at.version = first_version_;
    return o;
  }());
  ASSERT_TRUE(then.ok()) << then.status().ToString();
  EXPECT_EQ(then->rows[0][0], SqlValue(int64_t{100}));
  SqlOptions at_first;
  at_first.at.version = first_version_;
  Result<Answer> no_dim = Loam("SELECT * FROM dim", at_first);
  EXPECT_TRUE(no_dim.status().Is(ErrorCode::kInvalidArgument)) << no_dim.status().ToString();
  EXPECT_NE(no_dim.status().message().find("no such table: dim"), std::string::npos);

  // A commit made while a statement streams its answer is not seen by it.
  CollectingSink sink;
  sink.on_first_row = [&] {
    RecordBatch more(Wide());
    ASSERT_TRUE(more.AppendRow(WideRow(1000)).ok());
    ASSERT_TRUE(ws_->Write("t", more).ok());
  };
  ASSERT_TRUE(RunSql(*ws_, "SELECT 1 UNION ALL SELECT count(*) FROM t", {}, sink).ok());
  EXPECT_EQ(sink.answers[0].rows[1][0], SqlValue(int64_t{300}));
  Result<Answer> now = Loam("SELECT count(*) FROM t");
  EXPECT_EQ(now->rows[0][0], SqlValue(int64_t{301}));
}

TEST_F(SqlTest, ABranchIsReadWithItsOwnRows) {
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  RecordBatch more(Wide());
  ASSERT_TRUE(more.AppendRow(WideRow(500)).ok());
  WriteOptions on_dev;
  on_dev.branch = "dev";
  ASSERT_TRUE(ws_->Write("t", more, on_dev).ok());
  SqlOptions dev;
  dev.at.branch = "dev";
  EXPECT_EQ(Loam("SELECT max(id), count(*) FROM t", dev)->rows[0],
            (std::vector<SqlValue>{int64_t{500}, int64_t{301}}));
  EXPECT_EQ(Loam("SELECT max(id), count(*) FROM t")->rows[0],
            (std::vector<SqlValue>{int64_t{299}, int64_t{300}}));
  SqlOptions nowhere;
  nowhere.at.branch = "nope";
  EXPECT_TRUE(Loam("SELECT 1", nowhere).status().Is(ErrorCode::kNotFound));
}

TEST_F(SqlTest, RunsAndTheLogAreTables) {
  const std::string csv = (dir_ / "d.csv").string();
  std::ofstream(csv) << "city,region\nRome,south\n";
  LoadRequest load;
  load.table = "dim";
  load.files = {csv};
  Result<LoadResult> run = Load(*ws_, load);
  ASSERT_TRUE(run.ok() && run->state == "succeeded") << run.status().ToString();
  Result<Answer> runs = Loam(
      "SELECT run_id, table_name, mode, state, inserted, workspace_version, principal, "
      "pipeline_id FROM loam_runs");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->rows.size(), 1u);
  EXPECT_EQ(runs->rows[0],
            (std::vector<SqlValue>{run->run_id, std::string("dim"), std::string("append"),
                                   std::string("succeeded"), int64_t{1},
                                   static_cast<int64_t>(run->workspace_version), ws_->principal(),
                                   std::monostate{}}));
  Result<Answer> log = Loam("SELECT count(*), max(workspace_version) FROM loam_log");
  Result<std::vector<LogEntry>> entries = ws_->Log();
  ASSERT_TRUE(log.ok() && entries.ok());
  EXPECT_EQ(log->rows[0], (std::vector<SqlValue>{static_cast<int64_t>(entries->size()),
                                                 static_cast<int64_t>(run->workspace_version)}));
  // Which rows did the run add: those of its commit that the version
  // before it did not hold.
  Result<Answer> added = Loam(
      "SELECT run_ids FROM loam_log WHERE workspace_version = (SELECT workspace_version FROM "
      "loam_runs WHERE table_name = 'dim')");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->rows[0][0], SqlValue(run->run_id));
}

TEST_F(SqlTest, StatementsThatWouldChangeAnythingAreRefused) {
  for (const char* sql : {"INSERT INTO t(id) VALUES (1)", "DELETE FROM t", "UPDATE t SET qty = 1",
                          "CREATE TABLE x(a)", "DROP TABLE t", "ATTACH ':memory:' AS other",
                          "PRAGMA writable_schema = 1", "SELECT load_extension('x')", "BEGIN",
                          "CREATE TEMP VIEW v AS SELECT 1", "ANALYZE"}) {
    SCOPED_TRACE(sql);
    Result<Answer> a = Loam(sql);
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(a.status().Is(ErrorCode::kPermissionDenied) ||
                a.status().Is(ErrorCode::kInvalidArgument))
        << a.status().ToString();
  }
  EXPECT_TRUE(Loam("DELETE FROM t").status().Is(ErrorCode::kPermissionDenied));
  EXPECT_EQ(Loam("SELECT count(*) FROM t")->rows[0][0], SqlValue(int64_t{300}));
  EXPECT_TRUE(Loam("SELECT nonsense FROM").status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Loam("  -- nothing\n").status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Loam(std::string("SELECT 1;\0", 10)).status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Loam(std::string("\0", 1)).status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Loam("SELECT fts3_tokenizer('simple')").status().Is(ErrorCode::kPermissionDenied));
  Result<Answer> columns = Loam("PRAGMA table_info(t)");
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  EXPECT_EQ(columns->rows.size(), 11u);
}

TEST_F(SqlTest, AFloatKeyIsScannedSoEqualKeysAreAllFound) {
  const Schema fk{{{"k", DataType::Float64(), false}, {"v", DataType::Int64(), true}}};
  ASSERT_TRUE(ws_->CreateTable("fk", fk, {"k"}).ok());
  RecordBatch rows(fk);
  ASSERT_TRUE(rows.AppendRow({Value(0.0), Value(int64_t{1})}).ok());
  ASSERT_TRUE(rows.AppendRow({Value(-0.0), Value(int64_t{2})}).ok());
  ASSERT_TRUE(ws_->Write("fk", rows).ok());
  Exec("CREATE TABLE fk(k REAL, v INTEGER)");
  AddNative("fk", rows);
  ExpectSame("SELECT v FROM fk WHERE k = 0");
  ExpectSame("SELECT v FROM fk WHERE k = -0.0");
}

TEST_F(SqlTest, TablesSQLiteCannotNameAreLeftOutAndTheRestAnswer) {
  const Schema one{{{"a", DataType::Int64(), true}}};
  ASSERT_TRUE(ws_->CreateTable("Dim", one).ok());  // "dim" in SQLite's eyes
  ASSERT_TRUE(ws_->CreateTable("sqlite_stat9", one).ok());
  ASSERT_TRUE(ws_->CreateTable("LOAM_RUNS", one).ok());
  ASSERT_TRUE(ws_->CreateTable("twins", Schema{{{"id", DataType::Int64(), true},
                                                {"ID", DataType::Int64(), true}}})
                  .ok());
  EXPECT_EQ(Loam("SELECT count(*) FROM t")->rows[0][0], SqlValue(int64_t{300}));
  EXPECT_EQ(Loam("SELECT count(*) FROM Dim")->rows[0][0], SqlValue(int64_t{0}));  // first by name
  EXPECT_EQ(Loam("SELECT count(*) FROM LOAM_RUNS")->rows[0][0], SqlValue(int64_t{0}));
  EXPECT_TRUE(Loam("SELECT * FROM twins").status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Loam("SELECT * FROM sqlite_stat9").status().Is(ErrorCode::kInvalidArgument));
}

TEST_F(SqlTest, TheLogIsReadAtThePinnedVersionToo) {
  SqlOptions then;
  then.at.version = first_version_;
  Result<Answer> log = Loam("SELECT max(workspace_version), count(*) FROM loam_log", then);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->rows[0][0], SqlValue(static_cast<int64_t>(first_version_)));
  int64_t older = 0;
  for (const LogEntry& e : ws_->Log().value()) older += e.workspace_version <= first_version_;
  EXPECT_EQ(log->rows[0][1], SqlValue(older));
}

TEST_F(SqlTest, LimitsEndAStatementWithTheirOwnCode) {
  SqlOptions o;
  o.time_budget_millis = 200;
  Result<Answer> forever = Loam(
      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r", o);
  ASSERT_TRUE(forever.status().Is(ErrorCode::kLimitExceeded)) << forever.status().ToString();
  EXPECT_EQ(forever.status().detail("limit"), "sqlTimeBudgetMillis");

  SqlOptions small;
  small.max_value_bytes = 1 << 20;
  Result<Answer> huge = Loam("SELECT zeroblob(2000000)", small);
  ASSERT_TRUE(huge.status().Is(ErrorCode::kLimitExceeded)) << huge.status().ToString();
  EXPECT_EQ(huge.status().detail("limit"), "sqlValueBytes");

  SqlOptions few;
  few.max_rows = 10;
  Result<Answer> cut = Loam("SELECT id FROM t", few);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->rows.size(), 10u);
  EXPECT_TRUE(cut->truncated);

  SqlOptions one;
  one.single_statement = true;
  EXPECT_TRUE(Loam("SELECT 1; SELECT 2", one).status().Is(ErrorCode::kInvalidArgument));
  SqlOptions short_text;
  short_text.max_sql_bytes = 10;
  EXPECT_EQ(Loam("SELECT 1 + 1 + 1", short_text).status().detail("limit"), "sqlTextBytes");
}

TEST_F(SqlTest, APrincipalReadsOnlyTheTablesItHoldsAGrantOn) {
  ASSERT_TRUE(ws_->SetGrant("t", "bob", Role::kReader).ok());
  SqlOptions bob;
  bob.principal = "bob";
  EXPECT_EQ(Loam("SELECT count(*) FROM t", bob)->rows[0][0], SqlValue(int64_t{300}));
  for (const char* sql : {"SELECT * FROM dim", "SELECT count(*) FROM dim",
                          "SELECT t.id FROM t JOIN dim USING (city)"}) {
    Result<Answer> refused = Loam(sql, bob);
    ASSERT_TRUE(refused.status().Is(ErrorCode::kPermissionDenied)) << sql;
    EXPECT_EQ(refused.status().detail("table"), "dim");
    EXPECT_NE(refused.status().message().find("'dim'"), std::string::npos);
  }
  EXPECT_EQ(Loam("SELECT * FROM loam_log", bob).status().detail("table"), "loam_log");
  EXPECT_TRUE(Loam("SELECT * FROM sqlite_schema", bob).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(Loam("PRAGMA table_list", bob).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(
      Loam("SELECT * FROM pragma_table_list", bob).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(Loam("PRAGMA table_info(dim)", bob).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_EQ(Loam("PRAGMA table_info(t)", bob)->rows.size(), 11u);
  SqlOptions owner;
  owner.principal = ws_->owner();
  EXPECT_EQ(Loam("SELECT count(*) FROM dim", owner)->rows[0][0], SqlValue(int64_t{4}));
}

TEST_F(SqlTest, ScriptsRunEveryStatementInTurn) {
  CollectingSink sink;
  ASSERT_TRUE(RunSql(*ws_, "SELECT 1; -- a comment\nSELECT count(*) FROM dim;", {}, sink).ok());
  ASSERT_EQ(sink.answers.size(), 2u);
  EXPECT_EQ(sink.answers[1].rows[0][0], SqlValue(int64_t{4}));
  std::string json;
  AppendJsonValue(SqlValue(std::string("a\"b")), &json);
  AppendJsonValue(SqlValue(2.0), &json);
  AppendJsonValue(SqlValue(Blob{"\x01\x02"}), &json);
  EXPECT_EQ(json, "\"a\\\"b\"2.0\"AQI=\"");
}

}  // namespace
}  // namespace loam::sql
