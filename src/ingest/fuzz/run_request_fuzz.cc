// Fuzz target: RunRequest::FromJson never crashes, never throws, and what it
// accepts round-trips through ToJson exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ingest/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  loam::Result<loam::ingest::RunRequest> r = loam::ingest::RunRequest::FromJson(text);
  if (!r.ok()) return 0;
  const std::string once = r->ToJson();
  loam::Result<loam::ingest::RunRequest> again = loam::ingest::RunRequest::FromJson(once);
  if (!again.ok() || again->ToJson() != once) {
    std::fprintf(stderr, "round trip failed for %s\n", once.c_str());
    std::abort();
  }
  return 0;
}
