// Seeded randomized test: random schemas and input files (CSV and JSON
// Lines, some with a bad value), loaded in random modes, compared after every
// run with a model of what the table must hold. LOAM_LOADER_MODEL_RUNS sets
// the number of runs per table; LOAM_MODEL_SEED replays a seed a failure printed.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "ingest/loader.h"
#include "ingest/text_value.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

struct Gen {
  std::mt19937_64 rng;
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(int percent) { return Int(1, 100) <= percent; }
};

// A random value of `type` in its canonical text form (small domains so
// upserts meet existing keys and equal rows recur).
std::string RandomText(Gen& g, const DataType& t) {
  switch (t.id) {
    case TypeId::kBool:
      return g.Chance(50) ? "true" : "false";
    case TypeId::kInt32:
      return std::to_string(g.Int(-50, 50));
    case TypeId::kInt64:
      return std::to_string(g.Int(0, 40));
    case TypeId::kFloat64:
      return std::to_string(g.Int(-9, 9)) + "." + std::to_string(g.Int(0, 9)) + "5";
    case TypeId::kString: {
      static const char* kWords[] = {"a", "b,c", "d\"e", "ü", "new\nline", ""};
      return kWords[g.Int(0, 5)];
    }
    case TypeId::kDate:
      return "2026-0" + std::to_string(g.Int(1, 9)) + "-1" + std::to_string(g.Int(0, 9));
    case TypeId::kTimestamp:
      return "2026-11-30T0" + std::to_string(g.Int(0, 9)) + ":00:00Z";
    case TypeId::kDecimal:
      return std::to_string(g.Int(-999, 999)) + "." + std::to_string(g.Int(10, 99));
    default:
      return "";
  }
}

std::string CsvField(const std::string& v) {
  if (v.empty()) return "\"\"";  // an empty string, not a missing value
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string JsonField(const DataType& t, const std::string& v) {
  switch (t.id) {
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kFloat64:
    case TypeId::kDecimal:
      return v;
    default: {
      std::string out = "\"";
      for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
          out += "\\n";
          continue;
        }
        out += c;
      }
      return out + "\"";
    }
  }
}

using Row = std::vector<std::optional<std::string>>;  // canonical text; nullopt = null

std::string RowText(const Row& r) {
  std::string s;
  for (const auto& v : r) s += (v ? "=" + *v : std::string("~")) + "|";
  return s;
}

class LoaderModel : public ::testing::TestWithParam<int> {};

TEST_P(LoaderModel, RandomRunsMatchTheModel) {
  const char* runs_env = std::getenv("LOAM_LOADER_MODEL_RUNS");
  const int runs = runs_env ? std::atoi(runs_env) : 40;
  const char* seed_env = std::getenv("LOAM_MODEL_SEED");
  const uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10)
                                 : std::random_device{}() ^ static_cast<uint64_t>(GetParam()) << 32;
  SCOPED_TRACE("seed " + std::to_string(seed));
  Gen g{std::mt19937_64(seed)};

  static const DataType kTypes[] = {
      DataType::Bool(), DataType::Int32(),     DataType::Float64(),    DataType::String(),
      DataType::Date(), DataType::Timestamp(), DataType::Decimal(6, 2)};
  Schema schema;
  schema.fields.push_back({"k", DataType::Int64(), false});
  const int extra = g.Int(1, 5);
  for (int i = 0; i < extra; ++i) {
    schema.fields.push_back({"c" + std::to_string(i), kTypes[g.Int(0, 6)], g.Chance(70)});
  }
  auto store = std::make_shared<MemoryObjectStore>();
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  wo.system_actor = true;  // runs without a principal
  auto ws = WorkspaceEngine::Init(store, "", wo).value();
  ASSERT_TRUE(ws->CreateTable("t", schema, {"k"}).ok());
  std::map<std::string, std::string> files;
  LoaderOptions lo;
  lo.batch_rows = 7;  // many batches per run
  // Upserts keep their parsed input between passes, or (budget 0) parse twice.
  lo.retain_bytes = GetParam() % 2 == 0 ? 0 : size_t{64} << 20;
  // Seeds 4 and 5: the key checks spill from the ninth key on (no bound).
  if (GetParam() >= 4) lo.key_memory_bytes = 0;
  lo.open_input = [&](const std::string& f) -> Result<std::unique_ptr<ByteSource>> {
    return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(files.at(f)));
  };
  Loader loader(ws, lo);
  std::vector<Row> model;
  // Canonical text of each parsed value (e.g. 1.50 -> 1.5 for floats).
  auto Canonical = [&](Row row) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (!row[c]) continue;
      Column col(schema.fields[c].type);
      EXPECT_TRUE(AppendCanonical(schema.fields[c], *row[c], true, &col).ok());
      std::string v;
      FormatCanonical(col, 0, &v);
      row[c] = v;
    }
    return row;
  };

  // The table, as canonical text, equals the model (as multisets).
  auto ExpectTableIsModel = [&](const std::string& after) {
    Snapshot snap = ws->Current().value();
    RecordBatch all = ws->OpenTable(snap, "t").value().ReadAll().value();
    std::multiset<std::string> got, want;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      Row row;
      for (const Column& c : all.columns) {
        std::string v;
        FormatCanonical(c, r, &v);
        row.push_back(c.IsNull(r) ? std::nullopt : std::optional<std::string>(v));
      }
      got.insert(RowText(row));
    }
    for (const Row& r : model) want.insert(RowText(Canonical(r)));
    ASSERT_EQ(got, want) << "after " << after;
  };
  // A delete run of a keys file: some of the table's keys, some it does not
  // hold; poisoned, it fails and deletes nothing.
  auto DeleteSome = [&](int run, bool jsonl, bool poison) {
    std::vector<std::string> keys;
    for (const Row& m : model) {
      if (g.Chance(30)) keys.push_back(*m[0]);
    }
    for (int i = g.Int(0, 3); i > 0; --i) keys.push_back(RandomText(g, schema.fields[0].type));
    if (poison) keys.push_back("k");  // not an int64
    std::string text = jsonl ? "" : "k\n";
    for (const std::string& k : keys) {
      text += jsonl ? "{\"k\":" + (k == "k" ? "\"k\"" : JsonField(schema.fields[0].type, k)) + "}\n"
                    : CsvField(k) + "\n";
    }
    const std::string name = "d" + std::to_string(run) + (jsonl ? ".jsonl" : ".csv");
    files[name] = text;
    RunRequest req;
    req.table = "t";
    req.mode = LoadMode::kDelete;
    req.files = {name};
    RunRecord rec = loader.Run(req).value();
    ASSERT_EQ(rec.state, poison ? RunState::kFailed : RunState::kSucceeded) << rec.error << text;
    if (poison) return ExpectTableIsModel("a failed delete of\n" + text);
    std::set<std::string> wanted;
    for (const std::string& k : keys) wanted.insert(*Canonical({k})[0]);
    const auto gone = std::erase_if(
        model, [&](const Row& m) { return wanted.count(*Canonical({m[0]})[0]) != 0; });
    EXPECT_EQ(rec.counters.deleted, static_cast<int64_t>(gone));
    ExpectTableIsModel("a delete of\n" + text);
  };

  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const LoadMode mode = static_cast<LoadMode>(g.Int(0, 3));
    const bool jsonl = g.Chance(50);
    const bool poison = g.Chance(15);
    if (mode == LoadMode::kDelete) {
      DeleteSome(run, jsonl, poison);
      if (::testing::Test::HasFatalFailure()) return;
      continue;
    }
    // Rows: in upserts each key once. The table's key is unique, so appends
    // and replaces mostly use keys new to the run (and appends to the
    // table); now and then one repeats, and the run must fail duplicate_key.
    std::vector<Row> rows;
    std::set<std::string> keys, table_keys;
    for (const Row& m : model) table_keys.insert(*Canonical(m)[0]);
    bool duplicate = false;
    const bool allow_duplicate = mode != LoadMode::kUpsert && g.Chance(10);
    const int n = g.Int(0, 25);
    for (int i = 0; i < n; ++i) {
      Row r;
      r.push_back(RandomText(g, schema.fields[0].type));
      const std::string key = *Canonical({r[0]})[0];
      const bool again = keys.count(key) || (mode == LoadMode::kAppend && table_keys.count(key));
      if (again && !allow_duplicate) continue;
      duplicate = duplicate || again;
      keys.insert(key);
      for (size_t c = 1; c < schema.fields.size(); ++c) {
        const Field& f = schema.fields[c];
        if (f.nullable && g.Chance(20)) {
          r.push_back(std::nullopt);
        } else {
          r.push_back(RandomText(g, f.type));
        }
      }
      rows.push_back(std::move(r));
    }
    std::string text;
    if (!jsonl) {
      for (size_t c = 0; c < schema.fields.size(); ++c)
        text += (c ? "," : "") + schema.fields[c].name;
      text += "\n";
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const bool bad = poison && i + 1 == rows.size();
      std::string line;
      for (size_t c = 0; c < schema.fields.size(); ++c) {
        const auto& v = rows[i][c];
        std::string field;
        if (bad && c == 0) {
          field = jsonl ? "\"k\"" : "k";  // not an int64
        } else if (!v) {
          field = jsonl ? "null" : "";
        } else {
          field = jsonl ? JsonField(schema.fields[c].type, *v) : CsvField(*v);
        }
        line += jsonl ? std::string(c ? "," : "{") + "\"" + schema.fields[c].name + "\":" + field
                      : std::string(c ? "," : "") + field;
      }
      text += line + (jsonl ? "}\n" : "\n");
    }
    const std::string name = "f" + std::to_string(run) + (jsonl ? ".jsonl" : ".csv");
    files[name] = text;
    RunRequest req;
    req.table = "t";
    req.mode = mode;
    req.files = {name};
    RunRecord rec = loader.Run(req).value();
    const bool expect_fail = (poison && !rows.empty()) || duplicate;
    ASSERT_EQ(rec.state, expect_fail ? RunState::kFailed : RunState::kSucceeded)
        << rec.error << "\n"
        << text;
    if (!expect_fail) {
      switch (mode) {
        case LoadMode::kAppend:
          model.insert(model.end(), rows.begin(), rows.end());
          break;
        case LoadMode::kReplace:
          model = rows;
          break;
        case LoadMode::kDelete:  // DeleteSome
          break;
        case LoadMode::kUpsert: {
          RunCounters want;
          for (const Row& r : rows) {
            std::vector<const Row*> same_key;
            for (const Row& m : model) {
              if (m[0] == r[0]) same_key.push_back(&m);
            }
            if (same_key.empty()) {
              want.inserted++;
            } else if (same_key.size() == 1 && Canonical(*same_key[0]) == Canonical(r)) {
              want.unchanged++;
            } else {
              want.updated++;
            }
            std::erase_if(model, [&](const Row& m) { return m[0] == r[0]; });
            model.push_back(r);
          }
          EXPECT_EQ(rec.counters.inserted, want.inserted);
          EXPECT_EQ(rec.counters.updated, want.updated);
          EXPECT_EQ(rec.counters.unchanged, want.unchanged);
          break;
        }
      }
    }
    ExpectTableIsModel(std::string(LoadModeName(mode)) + " of\n" + text);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_TRUE(ws->VerifyHeads("").value().ok());
}

INSTANTIATE_TEST_SUITE_P(Seeds, LoaderModel, ::testing::Range(0, 6));

}  // namespace
}  // namespace loam::ingest
