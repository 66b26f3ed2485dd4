// Helpers shared by the dataset tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dataset/dataset.h"

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
