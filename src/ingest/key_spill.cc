#include "ingest/key_spill.h"

#include <algorithm>
#include <tuple>

namespace loam::ingest {
namespace spill_internal {

// Independent of Hash128 (another algorithm's seed), and never stored.
constexpr uint64_t kKeyCheckSeed = 0x6b65792d63686b31ULL;

bool HashLess(const Hash128Value& a, const Hash128Value& b) {
  return std::tie(a.lo, a.hi) < std::tie(b.lo, b.hi);
}

struct RunKey {
  Hash128Value key;
  RowPos row;
};
struct RunKeyLess {
  bool operator()(const RunKey& a, const RunKey& b) const {
    if (!(a.key == b.key)) return HashLess(a.key, b.key);
    return a.row < b.row;
  }
};

struct TableKey {
  Hash128Value key;
  uint64_t address = 0;
};
struct TableKeyLess {
  bool operator()(const TableKey& a, const TableKey& b) const {
    if (!(a.key == b.key)) return HashLess(a.key, b.key);
    return a.address < b.address;
  }
};

struct ByAddress {
  bool operator()(const KeyMatch& a, const KeyMatch& b) const { return a.address < b.address; }
};
struct ByRow {
  bool operator()(const KeyMatch& a, const KeyMatch& b) const {
    return std::tie(a.row, a.address) < std::tie(b.row, b.address);
  }
};

using RunSorter = ExternalSorter<RunKey, RunKeyLess>;
using TableSorter = ExternalSorter<TableKey, TableKeyLess>;

class TableSinkImpl final : public KeySpill::TableSink {
 public:
  TableSinkImpl(ScratchSpace* scratch, size_t budget, MemoryMeter* meter)
      : sorter(scratch, budget, meter) {}
  Status Add(const Hash128Value& key, uint64_t address) override {
    return sorter.Add({key, address});
  }
  TableSorter sorter;
};

// A sorter's share of the bound, at most 32 MiB: larger buffers sort more
// slowly (std::sort over hundreds of MiB misses the caches) than more runs
// merge (docs/benchmarks.md, "Key checks").
size_t SortBuffer(size_t share) { return std::min<size_t>(share, size_t{32} << 20); }

}  // namespace spill_internal

uint64_t KeyCheck(std::string_view key_bytes) {
  return Hash64(key_bytes, spill_internal::kKeyCheckSeed);
}

// Budget shares (B = the bound): pass 1 sorts the run's keys in B/2; the
// table's keys are sorted in B/4 meanwhile; the join reads each side in B/4
// and sorts matches in B/2; filling reads them in B/4, with chunks of B/8,
// and sorts them by row in B/2; pass 2 reads them in B/4.
struct KeySpill::Impl {
  Impl(std::unique_ptr<ScratchSpace> s, size_t b, MemoryMeter* m)
      : scratch(std::move(s)),
        budget(b),
        meter(m),
        run_keys(scratch.get(), spill_internal::SortBuffer(b / 2), m) {}

  std::unique_ptr<ScratchSpace> scratch;
  const size_t budget;
  MemoryMeter* meter;
  spill_internal::RunSorter run_keys;
  std::vector<std::unique_ptr<spill_internal::TableSinkImpl>> table;
  std::unique_ptr<ExternalSorter<KeyMatch, spill_internal::ByAddress>> by_address;
  std::unique_ptr<SortedStream<KeyMatch>> by_row;
};

KeySpill::KeySpill(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KeySpill::~KeySpill() = default;

Result<std::unique_ptr<KeySpill>> KeySpill::Create(const std::string& scratch_dir, size_t budget,
                                                   MemoryMeter* meter) {
  ASSIGN_OR_RETURN(std::unique_ptr<ScratchSpace> scratch, ScratchSpace::Create(scratch_dir));
  return std::unique_ptr<KeySpill>(
      new KeySpill(std::make_unique<Impl>(std::move(scratch), budget, meter)));
}

Status KeySpill::AddRunKey(const Hash128Value& key, RowPos row) {
  return impl_->run_keys.Add({key, row});
}

std::vector<KeySpill::TableSink*> KeySpill::TableSinks(size_t shards) {
  std::vector<TableSink*> out;
  const size_t share = spill_internal::SortBuffer(impl_->budget / 4 / std::max<size_t>(shards, 1));
  for (size_t i = 0; i < shards; ++i) {
    impl_->table.push_back(
        std::make_unique<spill_internal::TableSinkImpl>(impl_->scratch.get(), share, impl_->meter));
    out.push_back(impl_->table.back().get());
  }
  return out;
}

Result<KeySpill::Joined> KeySpill::Join(bool keep_matches, size_t first_few) {
  Impl& m = *impl_;
  const size_t quarter = m.budget / 4;
  ASSIGN_OR_RETURN(std::unique_ptr<SortedStream<spill_internal::RunKey>> run,
                   m.run_keys.Finish(quarter));
  std::vector<std::unique_ptr<SortedStream<spill_internal::TableKey>>> shards;
  for (auto& t : m.table) {
    ASSIGN_OR_RETURN(auto s, t->sorter.Finish(quarter / m.table.size()));
    shards.push_back(std::move(s));
  }
  sorter_internal::MergeStream<spill_internal::TableKey, spill_internal::TableKeyLess> table(
      std::move(shards), spill_internal::TableKeyLess());
  if (keep_matches) {
    m.by_address = std::make_unique<ExternalSorter<KeyMatch, spill_internal::ByAddress>>(
        m.scratch.get(), spill_internal::SortBuffer(m.budget / 2), m.meter);
  }
  Joined out;
  auto note_match = [&](RowPos row) {
    ++out.matched;
    // The first few in input order: a sorted list of at most first_few.
    auto at = std::lower_bound(out.first_few.begin(), out.first_few.end(), row);
    if (out.first_few.size() < first_few || at != out.first_few.end()) {
      out.first_few.insert(at, row);
      if (out.first_few.size() > first_few) out.first_few.pop_back();
    }
  };
  while (run->Valid()) {
    const spill_internal::RunKey first = run->Get();
    RETURN_NOT_OK(run->Next());
    // Later rows with the key: only the earliest second occurrence counts.
    if (run->Valid() && run->Get().key == first.key) {
      const RowPos again = run->Get().row;
      if (!out.duplicate || again < out.duplicate->second) out.duplicate = {{first.row, again}};
      while (run->Valid() && run->Get().key == first.key) RETURN_NOT_OK(run->Next());
    }
    while (table.Valid() && spill_internal::HashLess(table.Get().key, first.key))
      RETURN_NOT_OK(table.Next());
    bool matched = false;
    while (table.Valid() && table.Get().key == first.key) {
      matched = true;
      if (m.by_address) RETURN_NOT_OK(m.by_address->Add({first.row, table.Get().address, {}, 0}));
      RETURN_NOT_OK(table.Next());
    }
    if (matched) note_match(first.row);
  }
  m.table.clear();
  return out;
}

Status KeySpill::FillMatches(size_t chunk,
                             const std::function<Status(std::vector<KeyMatch>&)>& fill) {
  Impl& m = *impl_;
  if (!m.by_address) return Status::Internal("FillMatches without a join that kept matches");
  const size_t quarter = m.budget / 4;
  ASSIGN_OR_RETURN(std::unique_ptr<SortedStream<KeyMatch>> in, m.by_address->Finish(quarter));
  ExternalSorter<KeyMatch, spill_internal::ByRow> by_row(
      m.scratch.get(), spill_internal::SortBuffer(m.budget / 2), m.meter);
  chunk = std::max<size_t>(1, std::min(chunk, m.budget / 8 / sizeof(KeyMatch)));
  std::vector<KeyMatch> part;
  part.reserve(chunk);
  m.meter->Add(chunk * sizeof(KeyMatch));
  Status s;
  while (s.ok() && in->Valid()) {
    part.clear();
    for (; in->Valid() && part.size() < chunk && s.ok(); s = in->Next()) part.push_back(in->Get());
    if (s.ok()) s = fill(part);
    for (size_t i = 0; i < part.size() && s.ok(); ++i) s = by_row.Add(part[i]);
  }
  m.meter->Sub(chunk * sizeof(KeyMatch));
  RETURN_NOT_OK(s);
  in.reset();
  m.by_address.reset();
  ASSIGN_OR_RETURN(m.by_row, by_row.Finish(quarter));
  return Status::OK();
}

Status KeySpill::MatchesOf(RowPos row, std::vector<KeyMatch>* out) {
  out->clear();
  SortedStream<KeyMatch>* s = impl_->by_row.get();
  if (s == nullptr) return Status::Internal("MatchesOf before FillMatches");
  if (s->Valid() && s->Get().row < row) {
    return Status::InvalidArgument(
        "the input changed while the run read it a second time (a row of the first read is "
        "gone); keep input files unchanged during a load, and run it again");
  }
  while (s->Valid() && s->Get().row == row) {
    out->push_back(s->Get());
    RETURN_NOT_OK(s->Next());
  }
  return Status::OK();
}

bool KeySpill::AllMatchesUsed() const { return impl_->by_row && !impl_->by_row->Valid(); }

}  // namespace loam::ingest
