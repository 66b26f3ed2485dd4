#include "format/fragment_footer.h"

#include "common/coding.h"
#include "common/hash.h"
#include "common/status_macros.h"
#include "format/schema_codec.h"

namespace loam {
namespace {

enum StatFlags : uint8_t { kHasMin = 1, kHasMax = 2 };

void EncodePage(const DataType& type, const PageEntry& p, std::string* out) {
  PutFixed64(out, p.offset);
  PutFixed32(out, p.stored_size);
  PutFixed32(out, p.raw_size);
  PutFixed8(out, static_cast<uint8_t>(p.codec));
  PutFixed64(out, p.checksum);
  PutFixed32(out, static_cast<uint32_t>(p.stats.null_count));
  const bool has_min = !std::holds_alternative<std::monostate>(p.stats.min);
  const bool has_max = !std::holds_alternative<std::monostate>(p.stats.max);
  PutFixed8(out, (has_min ? kHasMin : 0) | (has_max ? kHasMax : 0));
  if (has_min) PutLengthPrefixed(out, EncodeStatValue(type, p.stats.min));
  if (has_max) PutLengthPrefixed(out, EncodeStatValue(type, p.stats.max));
}

Result<PageEntry> DecodePage(Decoder& d, const DataType& type, uint32_t rows, uint64_t limit) {
  PageEntry p;
  ASSIGN_OR_RETURN(p.offset, d.U64());
  ASSIGN_OR_RETURN(p.stored_size, d.U32());
  ASSIGN_OR_RETURN(p.raw_size, d.U32());
  ASSIGN_OR_RETURN(uint8_t codec, d.U8());
  ASSIGN_OR_RETURN(p.checksum, d.U64());
  ASSIGN_OR_RETURN(uint32_t nulls, d.U32());
  ASSIGN_OR_RETURN(uint8_t flags, d.U8());
  if (codec > static_cast<uint8_t>(Codec::kLz4)) return d.Corrupt("unknown page codec");
  if (p.offset + p.stored_size > limit || p.offset + p.stored_size < p.offset) {
    return d.Corrupt("page extends past the data region");
  }
  if (nulls > rows || (flags & ~(kHasMin | kHasMax))) return d.Corrupt("bad page statistics");
  p.codec = static_cast<Codec>(codec);
  p.stats.null_count = nulls;
  if (flags & kHasMin) {
    ASSIGN_OR_RETURN(std::string_view b, d.LengthPrefixed());
    ASSIGN_OR_RETURN(p.stats.min, DecodeStatValue(type, b));
  }
  if (flags & kHasMax) {
    ASSIGN_OR_RETURN(std::string_view b, d.LengthPrefixed());
    ASSIGN_OR_RETURN(p.stats.max, DecodeStatValue(type, b));
  }
  return p;
}

void EncodeTrailerPrefix(uint64_t footer_offset, uint32_t footer_size, std::string* out) {
  PutFixed64(out, footer_offset);
  PutFixed32(out, footer_size);
  PutFixed16(out, kFragmentFormatVersion);
  PutFixed16(out, 0);  // flags, reserved
}

}  // namespace

std::string EncodeFooterAndTrailer(const FragmentFooter& f, uint64_t footer_offset) {
  std::string out;
  PutSchema(&out, f.schema);
  PutFixed64(&out, f.num_rows);
  PutFixed32(&out, static_cast<uint32_t>(f.groups.size()));
  for (const RowGroupEntry& g : f.groups) {
    PutFixed32(&out, g.rows);
    for (size_t c = 0; c < g.pages.size(); ++c)
      EncodePage(f.schema.fields[c].type, g.pages[c], &out);
  }
  PutFixed32(&out, static_cast<uint32_t>(f.metadata.size()));
  for (const auto& [k, v] : f.metadata) {
    PutLengthPrefixed(&out, k);
    PutLengthPrefixed(&out, v);
  }
  const uint32_t footer_size = static_cast<uint32_t>(out.size());
  std::string prefix;
  EncodeTrailerPrefix(footer_offset, footer_size, &prefix);
  Hasher64 h;
  h.Update(out);
  h.Update(prefix);
  out += prefix;
  PutFixed64(&out, h.Digest());
  out += kFragmentMagic;
  return out;
}

Result<Trailer> DecodeTrailer(std::string_view bytes, const std::string& file) {
  if (bytes.size() != kFragmentTrailerSize || bytes.substr(24) != kFragmentMagic) {
    return Status::DataLoss("'" + file + "' is not a Loam fragment file (bad trailer magic)");
  }
  Decoder d(bytes, "fragment trailer of '" + file + "'");
  Trailer t;
  ASSIGN_OR_RETURN(t.footer_offset, d.U64());
  ASSIGN_OR_RETURN(t.footer_size, d.U32());
  ASSIGN_OR_RETURN(t.version, d.U16());
  ASSIGN_OR_RETURN(uint16_t flags, d.U16());
  ASSIGN_OR_RETURN(t.checksum, d.U64());
  (void)flags;  // covered by the checksum; must be zero in version 1 (checked in DecodeFooter)
  return t;
}

Result<FragmentFooter> DecodeFooter(std::string_view footer, std::string_view trailer_bytes,
                                    const Trailer& t, uint64_t file_size, const std::string& file) {
  const std::string what = "fragment footer of '" + file + "'";
  Hasher64 h;
  h.Update(footer);
  h.Update(trailer_bytes.substr(0, 16));
  if (VerifyChecksums() && h.Digest() != t.checksum)
    return Status::DataLoss(what + ": checksum mismatch");
  if (t.footer_offset + t.footer_size + kFragmentTrailerSize != file_size) {
    return Status::DataLoss(what + ": footer position disagrees with the file size");
  }
  if (t.version != kFragmentFormatVersion || DecodeFixed(trailer_bytes.data() + 14, 2) != 0) {
    return Status::FailedPrecondition("'" + file + "' has fragment format version " +
                                      std::to_string(t.version) + ", this build reads version " +
                                      std::to_string(kFragmentFormatVersion) +
                                      "; upgrade Loam to read it")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  Decoder d(footer, what);
  FragmentFooter f;
  ASSIGN_OR_RETURN(f.schema, GetSchema(d));
  const uint32_t ncols = static_cast<uint32_t>(f.schema.fields.size());
  ASSIGN_OR_RETURN(f.num_rows, d.U64());
  ASSIGN_OR_RETURN(uint32_t ngroups, d.U32());
  if (ngroups > d.remaining()) return d.Corrupt("row group count too large");
  uint64_t rows = 0;
  for (uint32_t g = 0; g < ngroups; ++g) {
    RowGroupEntry group;
    ASSIGN_OR_RETURN(group.rows, d.U32());
    rows += group.rows;
    for (uint32_t c = 0; c < ncols; ++c) {
      ASSIGN_OR_RETURN(PageEntry p,
                       DecodePage(d, f.schema.fields[c].type, group.rows, t.footer_offset));
      group.pages.push_back(std::move(p));
    }
    f.groups.push_back(std::move(group));
  }
  if (rows != f.num_rows) return d.Corrupt("row groups do not add up to the row count");
  ASSIGN_OR_RETURN(uint32_t nmeta, d.U32());
  for (uint32_t i = 0; i < nmeta; ++i) {
    ASSIGN_OR_RETURN(std::string_view k, d.LengthPrefixed());
    ASSIGN_OR_RETURN(std::string_view v, d.LengthPrefixed());
    f.metadata.emplace_back(std::string(k), std::string(v));
  }
  if (!d.done()) return d.Corrupt("trailing bytes");
  return f;
}

}  // namespace loam
