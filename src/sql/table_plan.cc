#include "sql/table_plan.h"

#include <sstream>

namespace loam::sql {

std::string TablePlan::Encode() const {
  std::ostringstream out;
  out << columns_used << ' ' << limit_argv << ' ' << offset_argv << ' ' << (key_lookup ? 1 : 0)
      << ' ' << terms.size();
  for (const Term& t : terms) {
    out << ' ' << t.column << ' ' << static_cast<int>(t.op) << ' ' << t.argv;
  }
  return out.str();
}

std::optional<TablePlan> TablePlan::Decode(const std::string& text) {
  std::istringstream in(text);
  TablePlan p;
  int lookup = 0;
  size_t terms = 0;
  if (!(in >> p.columns_used >> p.limit_argv >> p.offset_argv >> lookup >> terms)) {
    return std::nullopt;
  }
  p.key_lookup = lookup != 0;
  for (size_t i = 0; i < terms; ++i) {
    Term t;
    int op = 0;
    if (!(in >> t.column >> op >> t.argv)) return std::nullopt;
    if (op < 0 || op > static_cast<int>(SqlOp::kIn)) return std::nullopt;
    t.op = static_cast<SqlOp>(op);
    p.terms.push_back(t);
  }
  return p;
}

}  // namespace loam::sql
