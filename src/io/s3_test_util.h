// Connects tests to the Ceph RGW that `scripts/s3-test-server start` runs
// (scripts/test starts it and exports its environment for `s3` tests).
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "io/s3_object_store.h"

namespace loam::testing {

// Options for a store under a fresh, unique prefix of the test bucket.
inline Result<S3Options> S3TestOptions() {
  const char* bucket = std::getenv("LOAM_S3_TEST_BUCKET");
  if (bucket == nullptr || *bucket == '\0') {
    return Status::FailedPrecondition(
        "no S3 test server: run `scripts/s3-test-server start` and "
        "`eval \"$(scripts/s3-test-server env)\"` (scripts/test does both)");
  }
  return S3Options::FromUri(std::string("s3://") + bucket + "/t/" + NewUlidString());
}

inline Result<std::shared_ptr<S3ObjectStore>> OpenS3TestStore() {
  ASSIGN_OR_RETURN(S3Options options, S3TestOptions());
  return S3ObjectStore::Open(std::move(options));
}

// Removes every object under the store's prefix (the server's memory is finite).
inline void DeleteEverything(ObjectStore& store) {
  Result<std::vector<ObjectInfo>> all = store.ListAll("");
  if (!all.ok()) return;
  for (const ObjectInfo& o : *all) (void)store.Delete(o.key);
}

}  // namespace loam::testing
