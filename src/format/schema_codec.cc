#include "format/schema_codec.h"

#include "common/status_macros.h"

namespace loam {

void PutSchema(std::string* out, const Schema& schema) {
  PutFixed32(out, static_cast<uint32_t>(schema.fields.size()));
  for (const Field& f : schema.fields) {
    PutLengthPrefixed(out, f.name);
    PutFixed8(out, static_cast<uint8_t>(f.type.id));
    PutFixed8(out, f.type.precision);
    PutFixed8(out, f.type.scale);
    PutFixed8(out, f.nullable ? 1 : 0);
  }
}

Result<Schema> GetSchema(Decoder& d) {
  Schema s;
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  if (n > d.remaining()) return d.Corrupt("column count too large");
  for (uint32_t i = 0; i < n; ++i) {
    Field f;
    ASSIGN_OR_RETURN(std::string_view name, d.LengthPrefixed());
    f.name = std::string(name);
    ASSIGN_OR_RETURN(uint8_t id, d.U8());
    ASSIGN_OR_RETURN(f.type.precision, d.U8());
    ASSIGN_OR_RETURN(f.type.scale, d.U8());
    ASSIGN_OR_RETURN(uint8_t nullable, d.U8());
    if (nullable > 1) return d.Corrupt("bad nullable flag");
    f.type.id = static_cast<TypeId>(id);
    f.nullable = nullable == 1;
    s.fields.push_back(std::move(f));
  }
  if (Status st = s.Validate(); !st.ok()) return d.Corrupt(st.message());
  return s;
}

}  // namespace loam
