#include "io/curl_api.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "common/status_macros.h"

namespace loam {

Result<CurlApi> LoadCurlLibrary(const char* soname) {
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);  // never closed
  if (lib == nullptr) {
    return Status::FailedPrecondition(std::string("cannot load ") + soname + " (" + ::dlerror() +
                                      "); the S3 backend needs it: apt-get install libcurl4");
  }
  CurlApi api;
  Status missing;
  auto bind = [&](auto* fn, const char* name) {
    void* sym = ::dlsym(lib, name);
    if (sym == nullptr && missing.ok()) {
      missing = Status::FailedPrecondition(std::string(soname) + " has no symbol " + name);
    }
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(sym);
  };
  bind(&api.global_init, "curl_global_init");
  bind(&api.easy_init, "curl_easy_init");
  bind(&api.easy_cleanup, "curl_easy_cleanup");
  bind(&api.easy_reset, "curl_easy_reset");
  bind(&api.easy_setopt, "curl_easy_setopt");
  bind(&api.easy_getinfo, "curl_easy_getinfo");
  bind(&api.easy_perform, "curl_easy_perform");
  bind(&api.easy_strerror, "curl_easy_strerror");
  bind(&api.slist_append, "curl_slist_append");
  bind(&api.slist_free_all, "curl_slist_free_all");
  RETURN_NOT_OK(missing);
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return Status::FailedPrecondition(std::string("curl_global_init failed in ") + soname);
  }
  return api;
}

Result<const CurlApi*> LoadCurl() {
  // Never destroyed: HTTP clients held by other statics release their curl
  // handles during exit, possibly after this function's statics are gone.
  static const Result<CurlApi>* loaded = new Result<CurlApi>(LoadCurlLibrary("libcurl.so.4"));
  RETURN_NOT_OK(loaded->status());
  return &**loaded;
}

}  // namespace loam
