#include "dataset/version_file.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "common/coding.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "format/schema_codec.h"

namespace loam {
namespace {

constexpr std::string_view kVersionFileMagic = "LOAMVERS";

void PutFragment(std::string* out, const Fragment& f) {
  PutFixed64(out, f.id);
  PutLengthPrefixed(out, f.data_path);
  PutFixed64(out, f.data_offset);
  PutFixed64(out, f.data_size);
  PutFixed64(out, f.physical_rows);
  PutLengthPrefixed(out, f.deletion_path);
  PutFixed64(out, f.deletion_offset);
  if (f.deletion_offset > 0) PutFixed64(out, f.deletion_size);
  PutFixed64(out, f.deleted_rows);
}

Result<Fragment> GetFragment(Decoder& d, uint16_t format) {
  Fragment f;
  ASSIGN_OR_RETURN(f.id, d.U64());
  ASSIGN_OR_RETURN(std::string_view path, d.LengthPrefixed());
  f.data_path = std::string(path);
  if (format >= 2) {
    ASSIGN_OR_RETURN(f.data_offset, d.U64());
  }
  ASSIGN_OR_RETURN(f.data_size, d.U64());
  ASSIGN_OR_RETURN(f.physical_rows, d.U64());
  ASSIGN_OR_RETURN(std::string_view del, d.LengthPrefixed());
  f.deletion_path = std::string(del);
  if (format >= 2) {
    ASSIGN_OR_RETURN(f.deletion_offset, d.U64());
    if (f.deletion_offset > 0) {
      ASSIGN_OR_RETURN(f.deletion_size, d.U64());
    }
  }
  ASSIGN_OR_RETURN(f.deleted_rows, d.U64());
  if (f.deleted_rows > f.physical_rows) return d.Corrupt("more deleted rows than rows");
  return f;
}

void PutFragments(std::string* out, const std::vector<Fragment>& frags) {
  PutFixed32(out, static_cast<uint32_t>(frags.size()));
  for (const Fragment& f : frags) PutFragment(out, f);
}

Result<std::vector<Fragment>> GetFragments(Decoder& d, uint16_t format) {
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  if (n > d.remaining()) return d.Corrupt("fragment count too large");
  std::vector<Fragment> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(Fragment f, GetFragment(d, format));
    out.push_back(std::move(f));
  }
  return out;
}

void PutIndices(std::string* out, const std::vector<IndexMeta>& indices) {
  PutFixed32(out, static_cast<uint32_t>(indices.size()));
  for (const IndexMeta& m : indices) {
    PutLengthPrefixed(out, m.name);
    PutLengthPrefixed(out, m.column);
    PutFixed8(out, static_cast<uint8_t>(m.key_type.id));
    PutFixed8(out, m.key_type.precision);
    PutFixed8(out, m.key_type.scale);
    PutLengthPrefixed(out, m.path);
    PutFixed64(out, m.file_size);
    PutFixed64(out, m.root_offset);
    PutFixed32(out, m.root_size);
    PutFixed32(out, m.levels);
    PutFixed64(out, m.entries);
    PutFixed32(out, static_cast<uint32_t>(m.fragments.size()));
    for (uint64_t id : m.fragments) PutFixed64(out, id);
  }
}

Result<std::vector<IndexMeta>> GetIndices(Decoder& d) {
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  if (n > d.remaining()) return d.Corrupt("index count too large");
  std::vector<IndexMeta> out;
  for (uint32_t i = 0; i < n; ++i) {
    IndexMeta m;
    ASSIGN_OR_RETURN(std::string_view name, d.LengthPrefixed());
    ASSIGN_OR_RETURN(std::string_view column, d.LengthPrefixed());
    m.name = std::string(name);
    m.column = std::string(column);
    ASSIGN_OR_RETURN(uint8_t id, d.U8());
    ASSIGN_OR_RETURN(m.key_type.precision, d.U8());
    ASSIGN_OR_RETURN(m.key_type.scale, d.U8());
    m.key_type.id = static_cast<TypeId>(id);
    ASSIGN_OR_RETURN(std::string_view path, d.LengthPrefixed());
    m.path = std::string(path);
    ASSIGN_OR_RETURN(m.file_size, d.U64());
    ASSIGN_OR_RETURN(m.root_offset, d.U64());
    ASSIGN_OR_RETURN(m.root_size, d.U32());
    ASSIGN_OR_RETURN(m.levels, d.U32());
    ASSIGN_OR_RETURN(m.entries, d.U64());
    ASSIGN_OR_RETURN(uint32_t nf, d.U32());
    if (nf > d.remaining()) return d.Corrupt("coverage too large");
    for (uint32_t k = 0; k < nf; ++k) {
      ASSIGN_OR_RETURN(uint64_t f, d.U64());
      if (!m.fragments.empty() && f <= m.fragments.back())
        return d.Corrupt("coverage not ascending");
      m.fragments.push_back(f);
    }
    if (m.levels == 0 || m.levels > kMaxIndexLevels || m.root_size > m.file_size ||
        m.root_offset > m.file_size - m.root_size) {
      return d.Corrupt("index root out of bounds");
    }
    if (!IsIndexableType(m.key_type)) return d.Corrupt("index key type not indexable");
    out.push_back(std::move(m));
  }
  return out;
}

void PutTransaction(std::string* out, const Transaction& t) {
  PutFixed8(out, static_cast<uint8_t>(t.op));
  PutFixed64(out, t.read_version);
  PutLengthPrefixed(out, t.id);
  PutFragments(out, t.added);
  PutFixed32(out, static_cast<uint32_t>(t.deleted.size()));
  for (const FragmentDeletion& fd : t.deleted) {
    PutFixed64(out, fd.fragment_id);
    PutLengthPrefixed(out, fd.rows.EncodeSorted());
  }
  PutFixed32(out, static_cast<uint32_t>(t.removed.size()));
  for (uint64_t id : t.removed) PutFixed64(out, id);
  PutFixed32(out, static_cast<uint32_t>(t.inserted_keys.size()));
  for (const std::string& k : t.inserted_keys) PutLengthPrefixed(out, k);
  PutFixed64(out, t.restore_version);
  PutFixed8(out, t.schema ? 1 : 0);
  if (t.schema) PutSchema(out, *t.schema);
  PutIndices(out, t.indices);
}

Result<Transaction> GetTransaction(Decoder& d, uint16_t format) {
  Transaction t;
  ASSIGN_OR_RETURN(uint8_t op, d.U8());
  if (op < 1 || op > static_cast<uint8_t>(OpType::kRewrite)) return d.Corrupt("unknown operation");
  t.op = static_cast<OpType>(op);
  ASSIGN_OR_RETURN(t.read_version, d.U64());
  ASSIGN_OR_RETURN(std::string_view id, d.LengthPrefixed());
  t.id = std::string(id);
  ASSIGN_OR_RETURN(t.added, GetFragments(d, format));
  ASSIGN_OR_RETURN(uint32_t ndel, d.U32());
  if (ndel > d.remaining()) return d.Corrupt("deletion count too large");
  for (uint32_t i = 0; i < ndel; ++i) {
    FragmentDeletion fd;
    ASSIGN_OR_RETURN(fd.fragment_id, d.U64());
    ASSIGN_OR_RETURN(std::string_view dv, d.LengthPrefixed());
    ASSIGN_OR_RETURN(fd.rows, DeletionVector::Decode(dv, "transaction deletion vector"));
    t.deleted.push_back(std::move(fd));
  }
  ASSIGN_OR_RETURN(uint32_t nrem, d.U32());
  if (nrem > d.remaining()) return d.Corrupt("removed count too large");
  for (uint32_t i = 0; i < nrem; ++i) {
    ASSIGN_OR_RETURN(uint64_t id2, d.U64());
    t.removed.push_back(id2);
  }
  ASSIGN_OR_RETURN(uint32_t nkeys, d.U32());
  if (nkeys > d.remaining()) return d.Corrupt("key count too large");
  for (uint32_t i = 0; i < nkeys; ++i) {
    ASSIGN_OR_RETURN(std::string_view k, d.LengthPrefixed());
    t.inserted_keys.emplace_back(k);
  }
  ASSIGN_OR_RETURN(t.restore_version, d.U64());
  ASSIGN_OR_RETURN(uint8_t has_schema, d.U8());
  if (has_schema) {
    ASSIGN_OR_RETURN(Schema s, GetSchema(d));
    t.schema = std::move(s);
  }
  ASSIGN_OR_RETURN(t.indices, GetIndices(d));
  return t;
}

}  // namespace

std::string_view OpTypeName(OpType op) {
  switch (op) {
    case OpType::kCreate:
      return "create";
    case OpType::kAppend:
      return "append";
    case OpType::kDelete:
      return "delete";
    case OpType::kMergeInsert:
      return "merge_insert";
    case OpType::kOverwrite:
      return "overwrite";
    case OpType::kRestore:
      return "restore";
    case OpType::kAddColumn:
      return "add_column";
    case OpType::kCompact:
      return "compact";
    case OpType::kCreateIndex:
      return "create_index";
    case OpType::kRewrite:
      return "rewrite";
  }
  return "unknown";
}

uint64_t DatasetVersion::live_rows() const {
  uint64_t n = 0;
  for (const Fragment& f : fragments) n += f.live_rows();
  return n;
}

const IndexMeta* DatasetVersion::FindIndex(std::string_view name) const {
  for (const IndexMeta& m : indices) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const Fragment* DatasetVersion::FindFragment(uint64_t id) const {
  for (const Fragment& f : fragments) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

namespace {

// Where inline fragments start: right after the header when there is no
// application section, else after the section's padding.
uint64_t InlineStart(size_t app_size) {
  return app_size == 0 ? kVersionHeaderSize : kHeaderReadBytes;
}

}  // namespace

void PlaceInlineFragments(DatasetVersion* v, const std::string& own_path) {
  uint64_t at = InlineStart(v->app_section.size());
  for (Fragment& added : v->txn.added) {
    if (!added.inline_bytes) continue;
    added.data_path = own_path;
    added.data_offset = at;
    added.data_size = added.inline_bytes->size();
    at += added.data_size;
    for (Fragment& f : v->fragments) {
      if (f.inline_bytes != added.inline_bytes) continue;
      f.data_path = added.data_path;
      f.data_offset = added.data_offset;
      f.data_size = added.data_size;
    }
  }
  for (Fragment& f : v->fragments) {
    if (!f.inline_deletion) continue;
    f.deletion_path = own_path;
    f.deletion_offset = at;
    f.deletion_size = f.inline_deletion->size();
    at += f.deletion_size;
  }
}

std::vector<std::pair<uint64_t, uint64_t>> InlinePartsOf(const DatasetVersion& v) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const Fragment& f : v.txn.added) {
    if (f.data_offset > 0) out.emplace_back(f.data_offset, f.data_size);
  }
  std::set<uint64_t> deleted_from;
  for (const FragmentDeletion& fd : v.txn.deleted) deleted_from.insert(fd.fragment_id);
  for (const Fragment& f : v.fragments) {
    if (f.deletion_offset > 0 && deleted_from.count(f.id)) {
      out.emplace_back(f.deletion_offset, f.deletion_size);
    }
  }
  return out;
}

void ForgetInlineBytes(DatasetVersion* v) {
  for (Fragment& f : v->txn.added) f.inline_bytes = nullptr;
  for (Fragment& f : v->fragments) {
    f.inline_bytes = nullptr;
    f.inline_deletion = nullptr;
  }
}

std::string EncodeVersionFile(const DatasetVersion& v) {
  std::string body;
  PutSchema(&body, v.schema);
  PutFragments(&body, v.fragments);
  PutFixed64(&body, v.next_fragment_id);
  PutLengthPrefixed(&body, v.branch.name);
  PutLengthPrefixed(&body, v.branch.parent);
  PutFixed64(&body, v.branch.parent_version);
  PutTransaction(&body, v.txn);
  PutIndices(&body, v.indices);
  PutFixed32(&body, static_cast<uint32_t>(v.metadata.size()));
  for (const auto& [k, val] : v.metadata) {
    PutLengthPrefixed(&body, k);
    PutLengthPrefixed(&body, val);
  }
  // A file with an application section pads it to kHeaderReadBytes, so the
  // range request that reads the section returns the same bytes whatever the
  // size of the body. Inline fragments follow, then the body.
  const uint64_t inline_start = InlineStart(v.app_section.size());
  std::string inline_bytes;
  auto append_placed = [&](const std::string& bytes, uint64_t offset, const std::string& path) {
    if (offset != inline_start + inline_bytes.size() || path.empty()) {
      LOAM_LOG_ERROR("version {}: inline bytes not placed before encoding", v.version);
      std::abort();  // a caller skipped PlaceInlineFragments: never write a bad file
    }
    inline_bytes += bytes;
  };
  for (const Fragment& f : v.txn.added) {
    if (f.inline_bytes) append_placed(*f.inline_bytes, f.data_offset, f.data_path);
  }
  for (const Fragment& f : v.fragments) {
    if (f.inline_deletion) append_placed(*f.inline_deletion, f.deletion_offset, f.deletion_path);
  }
  const uint64_t body_offset = inline_start + inline_bytes.size();
  std::string out(kVersionFileMagic);
  out.reserve(body_offset + body.size() + 8);
  PutFixed16(&out, kVersionFileFormat);
  PutFixed16(&out, 0);
  PutFixed32(&out, static_cast<uint32_t>(v.app_section.size()));
  PutFixed64(&out, v.version);
  PutFixed64(&out, static_cast<uint64_t>(v.timestamp_micros));
  PutFixed64(&out, body_offset);
  PutFixed64(&out, body.size());
  PutFixed64(&out, v.live_rows());
  PutFixed64(&out, Hash64(out + v.app_section));
  out += v.app_section;
  out.resize(inline_start, '\0');
  out += inline_bytes;
  out += body;
  PutFixed64(&out, Hash64(body));
  return out;
}

namespace {

struct ParsedHeader {
  VersionHeader header;
  uint16_t format = 0;
  uint64_t pad_end = 0;  // end of the zero padding: inline fragments or the body follow
  uint64_t body_offset = 0;
  uint64_t body_size = 0;
};

Result<ParsedHeader> ParseHeader(std::string_view bytes, const std::string& what) {
  if (bytes.size() < kVersionHeaderSize || bytes.substr(0, 8) != kVersionFileMagic) {
    return Status::DataLoss(what + " is not a Loam version file");
  }
  Decoder d(bytes.substr(8, kVersionHeaderSize - 8), what);
  ParsedHeader p;
  ASSIGN_OR_RETURN(p.format, d.U16());
  ASSIGN_OR_RETURN(uint16_t flags, d.U16());
  ASSIGN_OR_RETURN(uint32_t app_size, d.U32());
  ASSIGN_OR_RETURN(p.header.version, d.U64());
  ASSIGN_OR_RETURN(uint64_t ts, d.U64());
  p.header.timestamp_micros = static_cast<int64_t>(ts);
  ASSIGN_OR_RETURN(p.body_offset, d.U64());
  ASSIGN_OR_RETURN(p.body_size, d.U64());
  ASSIGN_OR_RETURN(p.header.live_rows, d.U64());
  ASSIGN_OR_RETURN(uint64_t checksum, d.U64());
  if (app_size > kMaxAppSection || kVersionHeaderSize + app_size > bytes.size()) {
    return Status::DataLoss(what + ": application section out of bounds");
  }
  const std::string_view app = bytes.substr(kVersionHeaderSize, app_size);
  Hasher64 h;
  h.Update(bytes.substr(0, kVersionHeaderSize - 8));
  h.Update(app);
  if (VerifyChecksums() && h.Digest() != checksum)
    return Status::DataLoss(what + ": header checksum mismatch");
  if (p.format < kOldestVersionFileFormat || p.format > kVersionFileFormat || flags != 0) {
    return Status::FailedPrecondition(
               what + " has version file format " + std::to_string(p.format) +
               ", this build reads " + std::to_string(kOldestVersionFileFormat) + " to " +
               std::to_string(kVersionFileFormat) + "; upgrade Loam to read it")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  bool valid;
  if (p.format == 1) {
    // Unpadded (app_size 0, or files written before padding) or padded.
    const bool unpadded = p.body_offset == kVersionHeaderSize + app_size;
    const bool padded = app_size > 0 && p.body_offset == kHeaderReadBytes;
    valid = unpadded || padded;
    p.pad_end = p.body_offset;
  } else {
    p.pad_end = InlineStart(app_size);
    valid = p.body_offset >= p.pad_end;
  }
  if (!valid) return Status::DataLoss(what + ": body offset disagrees with the header");
  p.header.app_section = std::string(app);
  return p;
}

// The inline parts of `v` must tile [start, end) of the file in order.
Status CheckInlineFragments(const DatasetVersion& v, uint64_t start, uint64_t end,
                            const std::string& what) {
  uint64_t at = start;
  for (const auto& [offset, size] : InlinePartsOf(v)) {
    if (offset != at || size > end - at) {
      return Status::DataLoss(what + ": inline part at byte " + std::to_string(offset) +
                              " is outside the inline region");
    }
    at += size;
  }
  if (at != end) return Status::DataLoss(what + ": inline region holds unreferenced bytes");
  return Status::OK();
}

}  // namespace

Result<VersionHeader> DecodeVersionHeader(std::string_view prefix, const std::string& what) {
  ASSIGN_OR_RETURN(ParsedHeader p, ParseHeader(prefix, what));
  return std::move(p.header);
}

Result<DatasetVersion> DecodeVersionFile(std::string_view bytes, const std::string& what) {
  ASSIGN_OR_RETURN(ParsedHeader p, ParseHeader(bytes, what));
  // Overflow-safe: a body offset near 2^64 must not wrap the sum around.
  if (p.body_offset > bytes.size() || bytes.size() - p.body_offset < 8 ||
      p.body_size != bytes.size() - p.body_offset - 8) {
    return Status::DataLoss(what + ": size disagrees with the header");
  }
  const size_t pad_from = kVersionHeaderSize + p.header.app_section.size();
  if (bytes.substr(pad_from, p.pad_end - pad_from).find_first_not_of('\0') !=
      std::string_view::npos) {
    return Status::DataLoss(what + ": padding after the application section is not zero");
  }
  const std::string_view body = bytes.substr(p.body_offset, p.body_size);
  if (VerifyChecksums() &&
      Hash64(body) != DecodeFixed(bytes.data() + p.body_offset + p.body_size, 8)) {
    return Status::DataLoss(what + ": body checksum mismatch");
  }
  Decoder d(body, what);
  DatasetVersion v;
  v.version = p.header.version;
  v.timestamp_micros = p.header.timestamp_micros;
  v.app_section = std::move(p.header.app_section);
  ASSIGN_OR_RETURN(v.schema, GetSchema(d));
  ASSIGN_OR_RETURN(v.fragments, GetFragments(d, p.format));
  ASSIGN_OR_RETURN(v.next_fragment_id, d.U64());
  ASSIGN_OR_RETURN(std::string_view bname, d.LengthPrefixed());
  ASSIGN_OR_RETURN(std::string_view bparent, d.LengthPrefixed());
  v.branch.name = std::string(bname);
  v.branch.parent = std::string(bparent);
  ASSIGN_OR_RETURN(v.branch.parent_version, d.U64());
  ASSIGN_OR_RETURN(v.txn, GetTransaction(d, p.format));
  ASSIGN_OR_RETURN(v.indices, GetIndices(d));
  ASSIGN_OR_RETURN(uint32_t nmeta, d.U32());
  for (uint32_t i = 0; i < nmeta; ++i) {
    ASSIGN_OR_RETURN(std::string_view k, d.LengthPrefixed());
    ASSIGN_OR_RETURN(std::string_view val, d.LengthPrefixed());
    v.metadata.emplace_back(std::string(k), std::string(val));
  }
  if (!d.done()) return d.Corrupt("trailing bytes in body");
  if (v.live_rows() != p.header.live_rows) return d.Corrupt("row count disagrees with header");
  RETURN_NOT_OK(CheckInlineFragments(v, p.pad_end, p.body_offset, what));
  return v;
}

std::string VersionFileName(uint64_t version) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%020" PRIu64 ".lver",
                std::numeric_limits<uint64_t>::max() - version);
  return buf;
}

Status CheckVersionNumber(const std::string& key, uint64_t named, uint64_t held) {
  if (named == held) return Status::OK();
  return Status::DataLoss("'" + key + "' is named for version " + std::to_string(named) +
                          " but holds version " + std::to_string(held));
}

std::optional<uint64_t> ParseVersionFileName(std::string_view name) {
  if (name.size() != 25 || !name.ends_with(".lver")) return std::nullopt;
  uint64_t inv = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(name[i] - '0');
    if (inv > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    inv = inv * 10 + digit;
  }
  return std::numeric_limits<uint64_t>::max() - inv;
}

}  // namespace loam
