// Fuzz target: a control record (docs/format/control.md) of any bytes, read
// as each record the service and retention read back from `_control/`: a
// run record, a pipeline, an upload record, an idempotency (request) record,
// a source record, a cleanup entry and a deleted-branch record. Errors are
// fine; a crash, or a record whose re-encoding does not read back to the
// same encoding, is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/retention.h"
#include "ingest/run_record.h"
#include "service/cleanup.h"
#include "service/pipeline.h"
#include "service/request_store.h"
#include "service/upload_store.h"

namespace {

// Encode(Decode(x)) is a fixed point: decoding it and encoding again gives
// the same bytes.
template <typename Record, typename Decode, typename Encode>
void CheckRoundTrip(const std::string& text, Decode decode, Encode encode) {
  loam::Result<Record> r = decode(text);
  if (!r.ok()) return;
  const std::string once = encode(*r);
  loam::Result<Record> again = decode(once);
  if (!again.ok() || encode(*again) != once) std::abort();
}

template <typename Record, typename Encode>
void CheckRoundTrip(const std::string& text, Encode encode) {
  CheckRoundTrip<Record>(
      text, [](const std::string& t) { return Record::FromJson(t); }, encode);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip<ingest::RunRecord>(text, [](const auto& r) { return r.ToJson(); });
  CheckRoundTrip<service::Pipeline>(text, [](const auto& p) { return p.ToJson().dump(); });
  CheckRoundTrip<service::UploadRecord>(text, [](const auto& u) { return u.ToJson(); });
  CheckRoundTrip<service::RequestRecord>(text, service::DecodeRequestRecord,
                                         service::EncodeRequestRecord);
  CheckRoundTrip<service::SourceRecord>(text, service::DecodeSourceRecord,
                                        service::EncodeSourceRecord);
  CheckRoundTrip<service::CleanupEntry>(text, service::DecodeCleanupEntry,
                                        service::EncodeCleanupEntry);
  (void)ParseDeletedBranch("_control/deleted-branches/fuzz.json", text);
  return 0;
}
