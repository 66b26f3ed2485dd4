// The byte encoding of a Schema, shared by fragment footers and dataset
// version files: u32 n; n x { str name; u8 type_id; u8 precision; u8 scale;
// u8 nullable (0|1) }.
#pragma once

#include <string>

#include "common/coding.h"
#include "loam/types.h"

namespace loam {

void PutSchema(std::string* out, const Schema& schema);
// Malformed bytes or an invalid schema are DataLoss.
Result<Schema> GetSchema(Decoder& d);

}  // namespace loam
