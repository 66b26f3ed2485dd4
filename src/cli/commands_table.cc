// table create | list | describe | rename | drop | grant.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

// NAME:TYPE[:not-null]; the type may contain commas (decimal(10,2)).
Result<Field> ParseColumnFlag(const std::string& flag) {
  const size_t first = flag.find(':');
  if (first == std::string::npos || first == 0) {
    return Status::InvalidArgument("--column takes NAME:TYPE[:not-null], e.g. id:int64:not-null");
  }
  Field f;
  f.name = flag.substr(0, first);
  std::string type = flag.substr(first + 1);
  const std::string suffix = ":not-null";
  if (type.size() > suffix.size() && type.substr(type.size() - suffix.size()) == suffix) {
    f.nullable = false;
    type.resize(type.size() - suffix.size());
  }
  Result<DataType> t = DataType::Parse(type);
  if (!t.ok()) {
    return Status::InvalidArgument("column '" + f.name + "': " + t.status().message() +
                                   " (types: bool int32 int64 float64 string binary date timestamp "
                                   "decimal(P,S) json)");
  }
  f.type = *t;
  return f;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read '" + path + "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Status Create(const Context& ctx, const std::string& name, const std::vector<std::string>& columns,
              std::vector<std::string> keys, const std::string& schema_file) {
  Schema schema;
  if (!schema_file.empty()) {
    if (!columns.empty()) return Status::InvalidArgument("give --column or --schema, not both");
    ASSIGN_OR_RETURN(std::string text, ReadFile(schema_file));
    std::string problem;
    json j = ParseJson(text, &problem);
    if (j.is_discarded()) return Status::InvalidArgument(schema_file + ": " + problem);
    if (!j.is_object() || !j.contains("columns")) {
      return Status::InvalidArgument(
          schema_file +
          R"(: expected {"columns":[{"name":"id","type":"int64","nullable":false}],"keys":["id"]})");
    }
    ASSIGN_OR_RETURN(schema, SchemaFromJson(j["columns"].dump()));
    if (j.contains("keys")) {
      if (!keys.empty())
        return Status::InvalidArgument("give keys in --key or in the schema file, not both");
      if (!j["keys"].is_array())
        return Status::InvalidArgument(schema_file + ": keys must be an array of names");
      for (const json& k : j["keys"]) {
        if (!k.is_string())
          return Status::InvalidArgument(schema_file + ": keys must be an array of names");
        keys.push_back(k.get<std::string>());
      }
    }
  } else {
    if (columns.empty())
      return Status::InvalidArgument("declare columns with --column NAME:TYPE or --schema FILE");
    for (const std::string& c : columns) {
      ASSIGN_OR_RETURN(Field f, ParseColumnFlag(c));
      schema.fields.push_back(std::move(f));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(Commit c, ws->CreateTable(name, schema, keys));
  if (ctx.json) {
    std::cout << json{{"table", name},
                      {"tableId", c.table_id},
                      {"manifestVersion", c.workspace_version}}
                     .dump()
              << "\n";
  } else {
    std::cout << "created table " << name << " (id " << c.table_id << ") " << schema.ToString()
              << "\n";
  }
  return Status::OK();
}

Status List(const Context& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<TableInfo> tables, ws->ListTables());
  json out = json::array();
  TextTable t({"name", "id", "rows", "version", "schema version", "keys"});
  for (const TableInfo& s : tables) {
    std::string keys;
    for (const auto& k : s.keys) keys += (keys.empty() ? "" : ",") + k;
    t.Add({s.name, std::to_string(s.id), std::to_string(s.row_count), std::to_string(s.version),
           std::to_string(s.schema_version), keys});
    out.push_back({{"name", s.name},
                   {"tableId", s.id},
                   {"rows", s.row_count},
                   {"tableVersion", s.version},
                   {"schemaVersion", s.schema_version},
                   {"keys", s.keys}});
  }
  if (ctx.json) {
    std::cout << out.dump() << "\n";
  } else {
    t.Print(std::cout);
  }
  return Status::OK();
}

Status Describe(const Context& ctx, const std::string& name) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(TableInfo s, ws->DescribeTable(name));
  json grants = json::array();
  for (const TableGrant& g : s.grants) {
    grants.push_back({{"principal", g.principal}, {"role", RoleName(g.role)}});
  }
  if (ctx.json) {
    std::cout << json{{"name", name},
                      {"tableId", s.id},
                      {"incarnation", s.incarnation},
                      {"columns", json::parse(SchemaToJson(s.schema))},
                      {"keys", s.keys},
                      {"schemaVersion", s.schema_version},
                      {"schemaHash", s.schema_hash},
                      {"tableVersion", s.version},
                      {"rows", s.row_count},
                      {"owner", ws->owner()},
                      {"grants", grants}}
                     .dump()
              << "\n";
    return Status::OK();
  }
  std::cout << "table " << name << " (id " << s.id << ", incarnation " << s.incarnation << ")\n"
            << "version " << s.version << ", " << s.row_count << " rows, schema version "
            << s.schema_version << "\n";
  TextTable cols({"column", "type", "nullable", "key"});
  for (const Field& f : s.schema.fields) {
    const bool key = std::find(s.keys.begin(), s.keys.end(), f.name) != s.keys.end();
    cols.Add({f.name, f.type.ToString(), f.nullable ? "yes" : "no", key ? "yes" : ""});
  }
  cols.Print(std::cout);
  std::cout << "owner " << (ws->owner().empty() ? "(none)" : ws->owner()) << "; grants:";
  if (grants.empty()) std::cout << " none";
  for (const auto& g : grants)
    std::cout << " " << g["principal"].get<std::string>() << "=" << g["role"].get<std::string>();
  std::cout << "\n";
  return Status::OK();
}

Status Grant(const Context& ctx, const std::string& table, const std::string& principal,
             const std::string& role_name) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  std::optional<Role> role;
  if (role_name != "none") {
    ASSIGN_OR_RETURN(role, ParseRole(role_name));
  }
  RETURN_NOT_OK(ws->SetGrant(table, principal, role));
  if (!ctx.json) std::cout << table << ": " << principal << " = " << role_name << "\n";
  if (ctx.json)
    std::cout << json{{"table", table}, {"principal", principal}, {"role", role_name}}.dump()
              << "\n";
  return Status::OK();
}

// Allows or forbids additive loads (service pipelines) on a table: admin only.
Status Additive(const Context& ctx, const std::string& table, const std::string& setting) {
  if (setting != "on" && setting != "off") {
    return Status::InvalidArgument("table additive takes on or off, not '" + setting + "'");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  RETURN_NOT_OK(ws->SetAdditiveSchema(table, setting == "on"));
  if (ctx.json) {
    std::cout << json{{"table", table}, {"additiveSchema", setting == "on"}}.dump() << "\n";
  } else {
    std::cout << table << ": additive schema changes " << (setting == "on" ? "allowed" : "off")
              << "\n";
  }
  return Status::OK();
}

// Renames and drops need the admin grant (or the owner): the API checks.
Status Rename(const Context& ctx, const std::string& from, const std::string& to) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  RETURN_NOT_OK(ws->RenameTable(from, to).status());
  if (!ctx.json) std::cout << "renamed " << from << " to " << to << "\n";
  return Status::OK();
}

Status Drop(const Context& ctx, const std::string& name) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(Commit c, ws->DropTable(name));
  if (ctx.json) {
    std::cout << json{{"dropped", name},
                      {"manifestVersion", c.workspace_version},
                      {"commit", c.commit_id}}
                     .dump()
              << "\n";
  } else {
    std::cout << "dropped " << name << "\n";
  }
  return Status::OK();
}

}  // namespace

void AddTableCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto* table = app.add_subcommand("table", "declare and manage tables");
  table->require_subcommand(1);

  auto* create =
      table->add_subcommand("create", "declare a table (no inference: loads must match it)");
  auto* name = create->add_option("NAME", "table name")->required();
  auto* columns = create->add_option("--column", "NAME:TYPE[:not-null], repeatable")
                      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* keys = create->add_option("--key", "key column for upserts, repeatable")
                   ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* schema = create->add_option("--schema", "JSON file: {\"columns\":[...],\"keys\":[...]}");
  create->callback([&ctx, name, columns, keys, schema, run] {
    // An option given no value reads as {""}: count() tells.
    const auto list = [](CLI::Option* o) {
      return o->count() ? o->as<std::vector<std::string>>() : std::vector<std::string>();
    };
    run(Create(ctx, name->as<std::string>(), list(columns), list(keys),
               schema->count() ? schema->as<std::string>() : ""));
  });

  table->add_subcommand("list", "tables with row counts")->callback([&ctx, run] {
    run(List(ctx));
  });

  auto* describe = table->add_subcommand("describe", "columns, keys, identity and grants");
  auto* d_name = describe->add_option("NAME", "table name")->required();
  describe->callback([&ctx, d_name, run] { run(Describe(ctx, d_name->as<std::string>())); });

  auto* rename = table->add_subcommand("rename", "rename; the table keeps its id, data and grants");
  auto* from = rename->add_option("OLD", "current name")->required();
  auto* to = rename->add_option("NEW", "new name")->required();
  rename->callback(
      [&ctx, from, to, run] { run(Rename(ctx, from->as<std::string>(), to->as<std::string>())); });

  auto* drop = table->add_subcommand("drop", "drop; history stays readable, the name becomes free");
  auto* drop_name = drop->add_option("NAME", "table name")->required();
  drop->callback([&ctx, drop_name, run] { run(Drop(ctx, drop_name->as<std::string>())); });

  auto* grant =
      table->add_subcommand("grant", "give a principal reader, writer or admin (or none)");
  auto* g_table = grant->add_option("NAME", "table name")->required();
  auto* g_who = grant->add_option("PRINCIPAL", "who")->required();
  auto* g_role = grant->add_option("ROLE", "reader | writer | admin | none")->required();
  grant->callback([&ctx, g_table, g_who, g_role, run] {
    run(Grant(ctx, g_table->as<std::string>(), g_who->as<std::string>(),
              g_role->as<std::string>()));
  });

  auto* additive = table->add_subcommand(
      "additive", "allow (on) or forbid (off) additive schema changes by service pipelines");
  auto* a_table = additive->add_option("NAME", "table name")->required();
  auto* a_setting = additive->add_option("SETTING", "on | off")->required();
  additive->callback([&ctx, a_table, a_setting, run] {
    run(Additive(ctx, a_table->as<std::string>(), a_setting->as<std::string>()));
  });
}

}  // namespace loam::cli
