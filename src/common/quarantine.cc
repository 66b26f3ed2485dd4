#include "common/quarantine.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace loam {

Status CheckQuarantineSwitch(std::optional<std::string_view> value) {
  if (!value) return Status::OK();
  std::string v(*value);
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return Status::OK();
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    return Status::PermissionDenied(
        "LOAM_QUARANTINE=" + std::string(*value) +
        " is set, and Loam refuses to run in quarantine mode: it never keeps rejected rows. "
        "Unset LOAM_QUARANTINE.");
  }
  return Status::InvalidArgument(
      "LOAM_QUARANTINE has the unrecognised value '" + std::string(*value) +
      "'; Loam refuses to start. Unset it (quarantine is not supported)");
}

Status CheckQuarantineSwitch() {
  const char* v = std::getenv("LOAM_QUARANTINE");
  return CheckQuarantineSwitch(v == nullptr ? std::nullopt : std::optional<std::string_view>(v));
}

}  // namespace loam
