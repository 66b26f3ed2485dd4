// The LOAM_QUARANTINE switch. Loam never keeps rejected rows aside, so a
// deployment that asks for quarantine is refused at startup rather than
// silently given something else. Every entry point (the CLI, the server)
// calls CheckQuarantineSwitch before it does anything.
#pragma once

#include <optional>
#include <string_view>

#include "loam/status.h"

namespace loam {

// `value` is LOAM_QUARANTINE's value (nullopt when unset). Unset, empty, 0,
// false, no and off pass; 1, true, yes and on (any case) are PermissionDenied;
// any other value is InvalidArgument (refused rather than guessed at).
Status CheckQuarantineSwitch(std::optional<std::string_view> value);
// As above, for this process's environment.
Status CheckQuarantineSwitch();

}  // namespace loam
