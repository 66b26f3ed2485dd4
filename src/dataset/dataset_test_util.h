// Helpers shared by the dataset tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "dataset/dataset.h"
#include "io/test_store.h"

namespace loam::testing {

inline Schema PeopleSchema() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String()},
                 {"score", DataType::Float64()}}};
}

// Rows (id, "name-<id>-<tag>", id * 1.5).
inline RecordBatch People(const std::vector<int64_t>& ids, const std::string& tag = "v1") {
  RecordBatch b(PeopleSchema());
  for (int64_t id : ids) {
    b.AppendRow({id, "name-" + std::to_string(id) + "-" + tag, static_cast<double>(id) * 1.5})
        .CheckOK();
  }
  return b;
}

// lo, lo + 1, ..., hi - 1.
inline std::vector<int64_t> Range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

// id -> name for every live row; fails the test on a duplicate id.
inline std::map<int64_t, std::string> Contents(const Dataset& ds) {
  std::map<int64_t, std::string> out;
  RecordBatch all = ds.ReadAll().value();
  const int id_col = all.schema.IndexOf("id"), name_col = all.schema.IndexOf("name");
  for (int64_t r = 0; r < all.num_rows(); ++r) {
    const int64_t id = all.columns[id_col].GetInt64(r);
    const std::string name = all.columns[name_col].IsNull(r)
                                 ? std::string("<null>")
                                 : std::string(all.columns[name_col].GetBytes(r));
    EXPECT_TRUE(out.emplace(id, name).second) << "duplicate live row for id " << id;
  }
  return out;
}

}  // namespace loam::testing

namespace loam {

// A dataset of People at "tables/people" in a test store, on a manual clock.
class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.clock = &clock_;
    ds_ = Dataset::Create(store_, "tables/people", testing::PeopleSchema(), options_).value();
  }
  Dataset Reopen(const OpenSpec& spec = {}) {
    return Dataset::Open(store_, "tables/people", spec, options_).value();
  }

  ManualClock clock_{1'000'000};
  DatasetOptions options_;
  std::shared_ptr<ObjectStore> store_ = testing::NewTestStore();
  Dataset ds_ = Dataset::Create(testing::NewTestStore(), "x", testing::PeopleSchema()).value();
};

}  // namespace loam
