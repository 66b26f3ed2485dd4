// The architecture of docs/architecture.md, checked: every `#include
// "<layer>/..."` in src/ goes where the layer table allows (or is a named
// exception), every directory of src/ is a layer of the table, every file of
// a layer is named by its README, none cites a document outside the
// project, the public headers (include/loam/) include only each other and
// the standard library, and no function outside tests is over 80 lines.
// Each checker runs on a small tree with a deliberate breach first, so a
// checker that finds nothing fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace loam {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names in backticks of one table cell.
std::vector<std::string> Ticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex kTicked("`([^`]+)`");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kTicked), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream s(row.substr(1));
  for (std::string cell; std::getline(s, cell, '|');) cells.push_back(cell);
  return cells;
}

struct Rules {
  std::vector<std::string> order;                         // the layers, bottom first
  std::map<std::string, std::set<std::string>> allowed;   // layer -> what it may include
  std::map<std::string, std::set<std::string>> excepted;  // file -> layers it may include
};

// The layer table (first column a layer, last its "may include") and the
// named exceptions (file, layer) of the architecture document.
Rules ParseRules(const std::string& doc) {
  Rules r;
  std::stringstream lines(doc);
  std::string section;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#", 0) == 0) section = line;
    if (line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = Cells(line);
    if (section == "## Layers, in order" && cells.size() == 4) {
      const std::string layer = Ticked(cells[0]).at(0);
      r.order.push_back(layer);
      for (const std::string& t : Ticked(cells[3])) r.allowed[layer].insert(t);
    } else if (section == "### Named exceptions" && cells.size() == 3) {
      for (const std::string& t : Ticked(cells[1])) r.excepted[Ticked(cells[0]).at(0)].insert(t);
    }
  }
  return r;
}

// Tests (`foo_test.cc`, `foo_test_util.h`), benchmarks (`foo_bench.cc`,
// `foo_bench_main.cc`) and fuzz targets (`fuzz/`) sit beside what they
// exercise and are not listed.
bool IsTestCode(const fs::path& relative) {
  static const std::regex kTest(R"((_test\.cc|_test_util\.h|_bench\.cc|_bench_main\.cc)$)");
  return relative.begin()->string() == "fuzz" ||
         std::regex_search(relative.filename().string(), kTest);
}

// A README names a file by its name (`foo.h`, `foo.h ...`), its path under
// the layer, `foo.*` or `foo.h/.cc`; a `.cc` is named with its `.h`.
bool NamedByReadme(const std::string& readme, const fs::path& relative) {
  const std::string stem = relative.stem().string();
  std::vector<std::string> names = {relative.generic_string(), relative.filename().string()};
  if (relative.extension() == ".cc") names.push_back(stem + ".h");
  for (const std::string& name : names) {
    for (const std::string& form : {"`" + name + "`", "`" + name + " ", "`" + name + "/"}) {
      if (readme.find(form) != std::string::npos) return true;
    }
  }
  return readme.find("`" + stem + ".*`") != std::string::npos;
}

// Every breach of `rules` in the tree `root` (its src/), one line each.
std::vector<std::string> Violations(const fs::path& root, const Rules& rules) {
  std::vector<std::string> out;
  std::set<std::string> layers(rules.order.begin(), rules.order.end());
  for (size_t i = 0; i < rules.order.size(); ++i) {
    for (const std::string& a : rules.allowed.at(rules.order[i])) {
      const auto at = std::find(rules.order.begin(), rules.order.end(), a);
      if (a != "loam" && at - rules.order.begin() >= static_cast<long>(i))
        out.push_back("table: " + rules.order[i] + " may include " + a + ", which is not below it");
    }
  }
  std::set<std::pair<std::string, std::string>> used;
  static const std::regex kInclude(R"(^\s*#\s*include\s+"([a-z_]+)/)");
  for (const auto& dir : fs::directory_iterator(root / "src")) {
    const std::string layer = dir.path().filename().string();
    if (!dir.is_directory() || layer[0] == '.') continue;
    if (!layers.count(layer)) {
      out.push_back("src/" + layer + " is not a layer of docs/architecture.md");
      continue;
    }
    const std::string readme = Slurp(dir.path() / "README.md");
    for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
      if (!e.is_regular_file() || e.path().filename().string()[0] == '.') continue;  // editors'
      const fs::path relative = fs::relative(e.path(), dir.path());
      const std::string file = "src/" + layer + "/" + relative.generic_string();
      const std::string name = relative.filename().string();
      if (name != "README.md" && name != "CMakeLists.txt" && !IsTestCode(relative) &&
          !NamedByReadme(readme, relative))
        out.push_back(file + " is not named by src/" + layer + "/README.md");
      const std::string body = Slurp(e.path());
      if (body.find("DESIGN.md") != std::string::npos)
        out.push_back(file + " cites a DESIGN.md the project does not have");
      std::stringstream text(body);
      for (std::string line; std::getline(text, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, kInclude)) continue;
        const std::string target = m[1];
        if (target == layer || (!layers.count(target) && target != "loam")) continue;
        if (rules.allowed.at(layer).count(target)) continue;
        const auto ex = rules.excepted.find(file);
        if (ex != rules.excepted.end() && ex->second.count(target)) {
          used.insert({file, target});
          continue;
        }
        out.push_back(file + " includes " + target + ", which " + layer + " may not: " + line);
      }
    }
  }
  // The public headers reach only each other and the standard library, so
  // an installed Loam needs nothing of src/ nor any third-party header.
  static const std::regex kPublicInclude(R"(^\s*#\s*include\s+("loam/[a-z_]+\.h"|<[a-z_]+>))");
  if (fs::is_directory(root / "include/loam")) {
    for (const auto& e : fs::directory_iterator(root / "include/loam")) {
      std::stringstream text(Slurp(e.path()));
      for (std::string line; std::getline(text, line);) {
        if (line.find("#include") == std::string::npos || std::regex_search(line, kPublicInclude))
          continue;
        out.push_back("include/loam/" + e.path().filename().string() +
                      " includes what an installed Loam lacks: " + line);
      }
    }
  }
  for (const auto& [file, targets] : rules.excepted) {
    for (const std::string& t : targets) {
      if (!used.count({file, t}))
        out.push_back("named exception " + file + " -> " + t + " matches no include");
    }
  }
  return out;
}

// Every function of the non-test sources of src/ longer than `limit` lines
// (signature to closing brace), one line each. A function starts at a line
// in column 0 that is no declaration keyword, holds '(' and, with up to
// seven more lines, ends in '{'.
std::vector<std::string> LongFunctions(const fs::path& root, size_t limit) {
  std::vector<std::string> out;
  static const std::regex kNotAFunction(
      R"(^(namespace|struct|class|enum|extern|using|template|static_assert|#|//|\}))");
  for (const auto& e : fs::recursive_directory_iterator(root / "src")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.ends_with(".cc") || name.ends_with("_test.cc")) continue;
    std::vector<std::string> lines;
    std::stringstream text(Slurp(e.path()));
    for (std::string line; std::getline(text, line);) lines.push_back(line);
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (l.empty() || std::isspace(static_cast<unsigned char>(l[0])) ||
          std::regex_search(l, kNotAFunction) || l.find('(') == std::string::npos) {
        continue;
      }
      size_t k = i;
      std::string sig = l;
      while (sig.back() != '{' && sig.back() != ';' && k < i + 7 && k + 1 < lines.size()) {
        sig += " " + lines[++k];
        while (!sig.empty() && std::isspace(static_cast<unsigned char>(sig.back()))) sig.pop_back();
      }
      if (sig.back() != '{' || sig.substr(0, sig.find('(')).find('=') != std::string::npos)
        continue;
      int depth = 0;
      size_t j = i;
      for (; j < lines.size(); ++j) {
        depth += static_cast<int>(std::count(lines[j].begin(), lines[j].end(), '{')) -
                 static_cast<int>(std::count(lines[j].begin(), lines[j].end(), '}'));
        if (depth == 0 && j >= k) break;
      }
      if (j - i + 1 > limit) {
        out.push_back(fs::relative(e.path(), root).generic_string() + ":" + std::to_string(i + 1) +
                      ": " + std::to_string(j - i + 1) + " lines: " + l);
      }
      i = j;
    }
  }
  return out;
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(LayersTest, TheCheckerFindsWrongIncludesAnUnnamedFileAStrayDirectoryAndAStaleCitation) {
  const fs::path root = fs::temp_directory_path() / ("loam-layers-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string doc =
      "## Layers, in order\n\n| layer | library | owns | may include |\n|---|---|---|---|\n"
      "| `low` | l | x | `loam` |\n| `high` | h | y | `loam`, `low` |\n\n"
      "### Named exceptions\n\n| file | includes | why |\n|---|---|---|\n"
      "| `src/low/b_test.cc` | `high` | a test |\n";
  Write(root / "src/low/README.md", "`a.*`, `b_test.cc`");
  Write(root / "src/low/a.h", "#include \"loam/status.h\"\n#include \"low/x.h\"\n");
  Write(root / "src/low/a.cc", "#include \"high/h.h\"\n");  // the wrong include
  Write(root / "src/low/b_test.cc", "#include \"high/h.h\"\n");
  Write(root / "src/high/README.md", "`h.h`");
  Write(root / "src/high/h.h", "#include \"low/a.h\"\n");
  Write(root / "src/high/unlisted.cc", "// As DESIGN.md says.\n");
  Write(root / "src/stray/README.md", "");
  Write(root / "include/loam/api.h",
        "#include <string>\n#include \"loam/status.h\"\n#include \"engine/workspace.h\"\n"
        "#include <nlohmann/json.hpp>\n");
  const std::vector<std::string> found = Violations(root, ParseRules(doc));
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 6u) << ::testing::PrintToString(found);
  std::string all;
  for (const std::string& f : found) all += f + "\n";
  EXPECT_NE(all.find("src/high/unlisted.cc cites a DESIGN.md"), std::string::npos) << all;
  EXPECT_NE(all.find("src/stray is not a layer"), std::string::npos) << all;
  EXPECT_NE(all.find("src/low/a.cc includes high, which low may not"), std::string::npos) << all;
  EXPECT_NE(all.find("src/high/unlisted.cc is not named by src/high/README.md"), std::string::npos)
      << all;
  EXPECT_NE(all.find("include/loam/api.h includes what an installed Loam lacks: #include "
                     "\"engine/workspace.h\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("lacks: #include <nlohmann/json.hpp>"), std::string::npos) << all;
}

TEST(LayersTest, TheSourceTreeKeepsTheLayersOfTheArchitectureDocument) {
  const fs::path root = LOAM_SOURCE_DIR;
  const Rules rules = ParseRules(Slurp(root / "docs/architecture.md"));
  ASSERT_EQ(rules.order.size(), 13u) << "the layer table of docs/architecture.md did not parse";
  EXPECT_EQ(rules.order.front(), "common");
  EXPECT_EQ(rules.order.back(), "cli");
  const std::vector<std::string> found = Violations(root, rules);
  std::string all;
  for (const std::string& v : found) all += v + "\n";
  EXPECT_TRUE(found.empty()) << found.size() << " breaches of docs/architecture.md:\n" << all;
}

TEST(LayersTest, TheLengthCheckerFindsALongFunction) {
  const fs::path root = fs::temp_directory_path() / ("loam-lengths-" + std::to_string(::getpid()));
  fs::remove_all(root);
  std::string body = "Status Short() {\n  return Status::OK();\n}\n\nint Long(int x) {\n";
  for (int i = 0; i < 80; ++i) body += "  x += " + std::to_string(i) + ";\n";
  body += "  return x;\n}\n";
  Write(root / "src/low/a.cc", body);
  Write(root / "src/low/a_test.cc", body);  // tests may be longer
  const std::vector<std::string> found = LongFunctions(root, 80);
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 1u) << ::testing::PrintToString(found);
  EXPECT_EQ(found[0], "src/low/a.cc:5: 83 lines: int Long(int x) {");
}

// No function of the project's own code (tests aside) is over 80 lines.
TEST(LayersTest, NoFunctionOutsideTestsIsLongerThan80Lines) {
  const std::vector<std::string> found = LongFunctions(LOAM_SOURCE_DIR, 80);
  std::string all;
  for (const std::string& v : found) all += v + "\n";
  EXPECT_TRUE(found.empty()) << found.size() << " functions over 80 lines:\n" << all;
}

}  // namespace
}  // namespace loam
