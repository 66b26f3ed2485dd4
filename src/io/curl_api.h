// libcurl, loaded on first use with dlopen. Linking it outright would make
// every `loam` command load curl and its TLS, Kerberos and LDAP libraries,
// whose constructors cost ~15 ms per process start, although only the S3
// backend ever speaks HTTP.
#pragma once

#include <curl/curl.h>

#include "loam/result.h"

namespace loam {

struct CurlApi {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

// The process's libcurl (libcurl.so.4, loaded and globally initialised
// once), or FailedPrecondition naming the library to install.
Result<const CurlApi*> LoadCurl();

// Loads `soname` and binds the API (not cached; LoadCurl's worker).
Result<CurlApi> LoadCurlLibrary(const char* soname);

}  // namespace loam
