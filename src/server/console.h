// The web console (docs/console.md): the files of console/, compiled in and
// served at /console/ under a strict Content-Security-Policy. The console has
// no powers of its own: its pages call the API with the caller's token, so
// these routes serve only fixed bytes and take no token.
#pragma once

#include <string_view>

namespace loam::server {

struct ConsoleFile {
  std::string_view name;  // under /console/: "app.js"
  std::string_view type;  // its Content-Type
  std::string_view bytes;
  std::string_view etag;  // a quoted digest of `bytes`
};

// The file served at /console/<name>; "" names index.html. nullptr when the
// console has no such file.
const ConsoleFile* FindConsoleFile(std::string_view name);

// The Content-Security-Policy of every console answer: scripts, styles and
// calls from this origin only, no inline script or style, no frames, forms
// or plugins.
inline constexpr std::string_view kConsolePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace loam::server
