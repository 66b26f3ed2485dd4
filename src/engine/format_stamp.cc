#include "engine/format_stamp.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "manifest/manifest.h"

namespace loam {
namespace {

using json = nlohmann::json;

constexpr std::string_view kMagic = "loam-workspace-format";

std::string Under(const std::string& root, std::string_view key) {
  return (root.empty() ? "" : root + "/") + std::string(key);
}

// The checksum covers the JSON text of every other field (keys sorted, no
// spaces), so a torn or edited stamp never passes for another format.
std::string Checksum(const json& fields) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Hash64(fields.dump())));
  return hex;
}

json Fields(const FormatStamp& s) {
  return json{{"magic", std::string(kMagic)},
              {"format", s.format},
              {"stamped_by", s.stamped_by},
              {"migration", s.migration},
              {"stamped_micros", s.stamped_micros}};
}

std::string Where(const std::string& root) { return root.empty() ? "the workspace" : root; }

const char* kStopFirst =
    "stop every writer (servers, loads, maintenance), then run 'loam migrate' "
    "(docs/operations.md, \"Migrating a workspace\")";

}  // namespace

std::string FormatStampKey(const std::string& root) { return Under(root, "_control/format.json"); }
std::string MigrationPrefix(const std::string& root) { return Under(root, "_migration/"); }
std::string MigrationClaimKey(const std::string& root) {
  return Under(root, "_migration/claim.json");
}

Result<FormatStamp> ReadFormatStamp(ObjectStore& store, const std::string& root) {
  ASSIGN_OR_RETURN(std::string text, store.Get(FormatStampKey(root)));
  return DecodeFormatStamp(FormatStampKey(root), text);
}

Result<FormatStamp> DecodeFormatStamp(const std::string& key, const std::string& text) {
  json j = ParseJson(text);
  const std::optional<int64_t> format = IntegerAt(j, "format");
  if (!j.is_object() || StringAt(j, "magic") != kMagic || !format || *format < 0 ||
      *format > std::numeric_limits<int>::max() || !j.contains("checksum") ||
      !j["checksum"].is_string()) {
    return Status::DataLoss(key + " is not a workspace format stamp");
  }
  FormatStamp s;
  s.format = static_cast<int>(*format);
  if (s.format > kWorkspaceFormat) return s;
  const std::string checksum = j["checksum"].get<std::string>();
  j.erase("checksum");
  if (VerifyChecksums() && checksum != Checksum(j))
    return Status::DataLoss(key + " fails its checksum");
  s.stamped_by = StringAt(j, "stamped_by");
  s.migration = StringAt(j, "migration");
  s.stamped_micros = IntegerAt(j, "stamped_micros").value_or(0);
  return s;
}

Status WriteFormatStamp(ObjectStore& store, const std::string& root, const FormatStamp& stamp) {
  json j = Fields(stamp);
  j["checksum"] = Checksum(j);
  const std::string body = j.dump();
  StringSource src(body);
  return store.Write(FormatStampKey(root), src, {PutCondition::kIfAbsent}).status();
}

FormatFinding FindingOf(const FormatStamp& stamp) {
  FormatFinding f;
  f.stamped_format = stamp.format;
  f.found = stamp.format > kWorkspaceFormat   ? FoundFormat::kNewer
            : stamp.format < kWorkspaceFormat ? FoundFormat::kOlderStamped
                                              : FoundFormat::kCurrent;
  return f;
}

Result<FormatFinding> FindFormat(ObjectStore& store, const std::string& root,
                                 const Manifest& manifest) {
  FormatFinding f;
  Result<FormatStamp> stamp = ReadFormatStamp(store, root);
  if (stamp.ok()) return FindingOf(*stamp);
  if (!stamp.status().IsNotFound()) return stamp.status();
  Result<std::string> claim = store.Get(MigrationClaimKey(root));
  if (claim.ok()) {
    f.found = FoundFormat::kPartiallyMigrated;
    json j = ParseJson(*claim);
    f.migration_token = j.is_object() ? StringAt(j, "token") : "";
    return f;
  }
  if (!claim.status().IsNotFound()) return claim.status();
  ASSIGN_OR_RETURN(ManifestVersion main, manifest.Current(""));
  // Every publish since format 5 of the head directory writes one; a version
  // past the first without any is the journal-only predecessor.
  if (IsJournalOnly(main)) {
    f.found = FoundFormat::kJournalOnly;
  } else {
    f.found = FoundFormat::kUnstampedHeads;
    f.head_directory = main.version > 1 ? main.dir.format : 0;  // 0: never written to
  }
  return f;
}

namespace {

// Head directories after kLastFormatBeforeStamp are written only once a
// stamp exists: without one, it was lost or `loam init` stopped before it.
std::string UnstampedWhy(uint32_t head_directory) {
  if (head_directory == 0) {
    return "no commit yet: made by an earlier Loam, or its init stopped before the stamp";
  }
  const std::string format = "head directory format " + std::to_string(head_directory);
  if (head_directory > kLastFormatBeforeStamp) {
    return format + ": its stamp was lost, or its init stopped before writing it";
  }
  return "written by an earlier Loam, " + format;
}

}  // namespace

Status ServableOrRefusal(const FormatFinding& f, const std::string& root) {
  const std::string needs =
      "this Loam serves workspace format " + std::to_string(kWorkspaceFormat) + " only";
  auto migrate = [](std::string what) {
    return Status::FailedPrecondition(std::move(what)).WithErrorCode(ErrorCode::kMigrationRequired);
  };
  switch (f.found) {
    case FoundFormat::kCurrent:
      return Status::OK();
    case FoundFormat::kNewer:
      return Status::FailedPrecondition(
                 Where(root) + " is in workspace format " + std::to_string(f.stamped_format) +
                 ", written by a newer Loam; " + needs + ": use a Loam that supports format " +
                 std::to_string(f.stamped_format))
          .WithErrorCode(ErrorCode::kUnsupportedFormat);
    case FoundFormat::kOlderStamped:
      return Status::DataLoss(FormatStampKey(root) + " says workspace format " +
                              std::to_string(f.stamped_format) +
                              ", which no Loam stamps (the stamp begins with format " +
                              std::to_string(kWorkspaceFormat) + "): the stamp is damaged");
    case FoundFormat::kPartiallyMigrated:
      return migrate(Where(root) + " is partially migrated (migration " + f.migration_token +
                     " did not finish); " + needs +
                     ": make sure that migration's process is gone, then run 'loam migrate "
                     "--take-over " +
                     f.migration_token + "'");
    case FoundFormat::kJournalOnly:
      return migrate(Where(root) + " is in workspace format " + std::to_string(kPredecessorFormat) +
                     " (a journal-only manifest, no format stamp); " + needs + ": " + kStopFirst);
    case FoundFormat::kUnstampedHeads:
      return migrate(Where(root) + " has no format stamp (" + UnstampedWhy(f.head_directory) +
                     "); " + needs + ": " + kStopFirst);
  }
  return Status::Internal("unknown workspace format finding");
}

}  // namespace loam
