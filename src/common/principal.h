// Principals: the names of who acts (a token's `sub`, a grantee,
// LOAM_PRINCIPAL). One definition, checked wherever a principal enters Loam,
// so a name that cannot be granted can never act, and no two names that
// print alike differ in a byte that does not print.
#pragma once

#include <cstddef>
#include <string_view>

#include "loam/status.h"

namespace loam {

// A valid principal is 1 to kMaxPrincipalBytes bytes of UTF-8 holding no
// control character (U+0000–U+001F, U+007F–U+009F) and no line or paragraph
// separator (U+2028, U+2029), with no space at either end, and is not "." or
// "..". Any other printable character is allowed ('/', '@', ':', '|' appear in
// real identity providers' subjects).
inline constexpr size_t kMaxPrincipalBytes = 127;

// OK, or InvalidArgument saying which rule `principal` breaks.
Status CheckPrincipal(std::string_view principal);

}  // namespace loam
