// Fuzz target: a control record (docs/format/control.md) of any bytes, read
// as each record the service and retention read back from `_control/`: a
// run record, a pipeline, an upload record, an idempotency (request) record,
// a source record, a cleanup entry and a deleted-branch record; then, put
// in an in-memory store, as the format stamp, the retention setting and
// horizon and the maintenance lease the engine reads. Errors are fine; a
// crash, or a record whose re-encoding does not read back to the same
// encoding, is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/clock.h"
#include "engine/format_stamp.h"
#include "engine/retention.h"
#include "engine/table_maintenance.h"
#include "ingest/run_record.h"
#include "io/memory_object_store.h"
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

// `text` as each control object the engine reads through its store.
void ReadThroughAStore(const std::string& text) {
  using namespace loam;
  auto store = std::make_shared<MemoryObjectStore>();
  for (const char* name :
       {"format.json", "retention.json", "retention-horizon.json", "maintenance-lease.json"}) {
    if (!store->Put(std::string("ws/_control/") + name, text).ok()) std::abort();
  }
  (void)ReadFormatStamp(*store, "ws");
  (void)ReadRetentionSetting(*store, "ws");
  (void)ReadTimeTravelHorizon(*store, "ws", "");
  ManualClock clock(1'000'000);
  (void)MaintenanceLease(store, "ws", "fuzz", &clock, 1'000'000).Acquire();
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
  ReadThroughAStore(text);
  return 0;
}
