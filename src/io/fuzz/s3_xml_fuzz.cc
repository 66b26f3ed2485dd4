// Fuzz target: an S3 response body of any bytes, read as each request reads
// its answer (a listing, an error, a multipart upload's creation and
// completion). Errors are fine; a crash, a hang or a listing entry without a
// key is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string body(reinterpret_cast<const char*>(data), size);
  Result<s3::ListObjectsResult> list = s3::ParseListObjects(body, "fuzz");
  if (list.ok()) {
    for (const s3::ListedObject& o : list->objects) {
      if (o.key.empty()) std::abort();
    }
  }
  (void)s3::ParseError(body);
  (void)s3::ParseUploadId(body, "fuzz");
  (void)s3::ParseCompletedEtag(body, "fuzz");
  (void)s3::ParseIso8601Micros(body);
  (void)s3::ParseHttpDateMicros(body);
  return 0;
}
