// Fuzz target: a control record (docs/format/control.md) of any bytes, read
// as a run record, a pipeline and an upload record, as the service reads
// them back from `_control/`. Errors are fine; a crash, or a record whose
// re-encoding does not read back to the same encoding, is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ingest/run_record.h"
#include "service/pipeline.h"
#include "service/upload_store.h"

namespace {

// Encode(Decode(x)) is a fixed point: decoding it and encoding again gives
// the same bytes.
template <typename Record, typename Encode>
void CheckRoundTrip(const std::string& text, Encode encode) {
  loam::Result<Record> r = Record::FromJson(text);
  if (!r.ok()) return;
  const std::string once = encode(*r);
  loam::Result<Record> again = Record::FromJson(once);
  if (!again.ok() || encode(*again) != once) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip<ingest::RunRecord>(text, [](const auto& r) { return r.ToJson(); });
  CheckRoundTrip<service::Pipeline>(text, [](const auto& p) { return p.ToJson().dump(); });
  CheckRoundTrip<service::UploadRecord>(text, [](const auto& u) { return u.ToJson(); });
  return 0;
}
