// ExpectNoRows: a merge check written as SQL (docs/branches.md).
#include "common/status_macros.h"
#include "sql/sql.h"

namespace loam::sql {
namespace {

// Keeps the first row of the answer as a JSON array.
class FirstRowSink final : public SqlSink {
 public:
  Status Begin(const std::vector<SqlColumn>& columns) override {
    columns_ = columns;
    return Status::OK();
  }
  Status Row(const std::vector<SqlValue>& row) override {
    if (rows_++ > 0) return Status::OK();
    first_ = "{";
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) first_ += ", ";
      first_ += (i < columns_.size() ? columns_[i].name : "?") + ": ";
      AppendJsonValue(row[i], &first_);
    }
    first_ += "}";
    return Status::OK();
  }
  Status End(int64_t, bool) override { return Status::OK(); }

  int64_t rows() const { return rows_; }
  const std::string& first() const { return first_; }

 private:
  std::vector<SqlColumn> columns_;
  int64_t rows_ = 0;
  std::string first_;
};

}  // namespace

Status ExpectNoRows(const Workspace& ws, const std::string& name, const std::string& statement,
                    SqlOptions options) {
  options.single_statement = true;
  options.max_rows = 1;
  FirstRowSink sink;
  Status s = RunSql(ws, statement, options, sink);
  if (!s.ok()) return s.WithMessage("merge check '" + name + "': " + s.message());
  if (sink.rows() == 0) return Status::OK();
  return Status::FailedPrecondition("merge check '" + name +
                                    "' failed: the statement returned a row, " + sink.first() +
                                    "; nothing was merged")
      .WithErrorCode(ErrorCode::kMergeCheckFailed)
      .WithDetail("check", name);
}

}  // namespace loam::sql
