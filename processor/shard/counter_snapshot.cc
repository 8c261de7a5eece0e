#include "processor/shard/counter_snapshot.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "processor/shard/name_order.h"

namespace oncecount::shard {
namespace {

// Shards' parts of one counter are added up exactly (2^16 shards of int64 parts fit
// in 128 bits), then capped at int64's ends if the sum left them: a capped sum is
// reported as such, and parts of both signs never make a wrong one by their order.
__extension__ using WideSum = __int128;

int64_t Capped(WideSum sum, bool& saturated) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  saturated = sum > kMax || sum < kMin;
  return sum > kMax ? kMax : sum < kMin ? kMin : static_cast<int64_t>(sum);
}

bool HasPrefix(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix;
}

// How many of the first `limit` bytes of `a` and `b` are equal.
size_t CommonPrefix(std::string_view a, std::string_view b, size_t limit) {
  limit = std::min({limit, a.size(), b.size()});
  size_t i = 0;
  while (i < limit && a[i] == b[i]) ++i;
  return i;
}

// The eight bytes of `name` from `from` on as a big-endian word, zeros past its end:
// a name whose word is smaller sorts first (equal words say nothing).
uint64_t WordAt(std::string_view name, size_t from) {
  char bytes[8] = {};
  if (from < name.size()) name.copy(bytes, sizeof bytes, from);
  return name_order_detail::BigEndianWord(bytes);
}

// Sorts by name; equal names keep their order. The names a commit changed tend to
// share a long prefix ("campaign-0001..."), which a comparison of their bytes reads
// again each time, through a pointer to wherever the name lives. This sorts (word,
// position) pairs instead, the word being the eight bytes after the prefix all the
// names share: most comparisons are one of two integers held side by side, and only
// names whose words tie compare their bytes.
void SortByName(std::vector<CounterRef>& refs) {
  const size_t n = refs.size();
  if (n < 2) return;
  size_t shared = refs[0].name.size();
  for (size_t i = 1; i < n && shared > 0; ++i) {
    shared = CommonPrefix(refs[0].name, refs[i].name, shared);
  }
  struct Keyed {
    uint64_t word;
    size_t at;
  };
  std::vector<Keyed> keyed(n);
  for (size_t i = 0; i < n; ++i) keyed[i] = {WordAt(refs[i].name, shared), i};
  std::sort(keyed.begin(), keyed.end(), [&refs](const Keyed& a, const Keyed& b) {
    if (a.word != b.word) return a.word < b.word;
    const std::string_view x = refs[a.at].name;
    const std::string_view y = refs[b.at].name;
    if (x != y) return NameLess(x, y);
    return a.at < b.at;
  });
  std::vector<CounterRef> sorted;
  sorted.reserve(n);
  for (const Keyed& k : keyed) sorted.push_back(refs[k.at]);
  refs.swap(sorted);
}

}  // namespace

CounterSnapshot CounterSnapshot::From(std::vector<CounterRef> counters) {
  SortByName(counters);
  CounterSnapshot out;
  out.AppendChunks(counters);
  out.size_ = out.base_size_;
  return out;
}

CounterSnapshot CounterSnapshot::FromMap(const std::unordered_map<std::string, int64_t>& live) {
  std::vector<CounterRef> all;
  all.reserve(live.size());
  for (const auto& [name, value] : live) all.push_back({name, value});
  return From(std::move(all));
}

bool CounterSnapshot::SortedBuilder::Add(std::string_view name, int64_t value) {
  if (!pending_.empty() ? !(pending_.back().name < name)
                        : !out_.chunks_.empty() && !(out_.chunks_.back()->names->back() < name)) {
    return false;
  }
  pending_.push_back({name, value});
  if (pending_.size() == kChunk) Flush();
  return true;
}

void CounterSnapshot::SortedBuilder::Flush() {
  if (pending_.empty()) return;
  out_.chunks_.push_back(MakeChunk(pending_.data(), pending_.data() + pending_.size()));
  out_.base_size_ += pending_.size();
  pending_.clear();
}

CounterSnapshot CounterSnapshot::SortedBuilder::Finish() && {
  Flush();
  out_.size_ = out_.base_size_;
  return std::move(out_);
}

size_t CounterSnapshot::Names::LowerBound(std::string_view name) const {
  size_t lo = 0, hi = size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (NameLess((*this)[mid], name)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

size_t CounterSnapshot::Names::UpperBound(std::string_view name) const {
  size_t lo = 0, hi = size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (!NameLess(name, (*this)[mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

CounterSnapshot::ChunkPtr CounterSnapshot::MakeChunk(const CounterRef* from, const CounterRef* to) {
  auto names = std::make_shared<Names>();
  Chunk chunk;
  size_t bytes = 0;
  for (const CounterRef* c = from; c != to; ++c) bytes += c->name.size();
  names->bytes.reserve(bytes);
  names->ends.reserve(static_cast<size_t>(to - from));
  chunk.values.reserve(static_cast<size_t>(to - from));
  for (const CounterRef* c = from; c != to; ++c) {
    names->bytes.append(c->name);
    names->ends.push_back(static_cast<uint32_t>(names->bytes.size()));
    chunk.values.push_back(c->value);
  }
  chunk.names = std::move(names);
  return std::make_shared<const Chunk>(std::move(chunk));
}

void CounterSnapshot::AppendChunks(const std::vector<CounterRef>& sorted) {
  const size_t n = sorted.size();
  if (n == 0) return;
  // Up to 2 x kChunk names stay one chunk (an updated chunk that gained a few names
  // does not split into a full one and a tiny one); more split into equal parts.
  const size_t parts = n <= 2 * kChunk ? 1 : (n + kChunk - 1) / kChunk;
  size_t from = 0;
  for (size_t p = 0; p < parts; ++p) {
    const size_t to = n * (p + 1) / parts;
    chunks_.push_back(MakeChunk(sorted.data() + from, sorted.data() + to));
    from = to;
  }
  base_size_ += n;
  copied_ += n;
}

void CounterSnapshot::AppendUpdated(const ChunkPtr& old, const CounterRef* from,
                                    const CounterRef* to) {
  const Names& names = *old->names;
  Chunk updated;
  updated.values = old->values;
  bool new_names = false;
  for (const CounterRef* u = from; u != to; ++u) {
    const size_t at = names.LowerBound(u->name);
    if (at == names.size() || names[at] != u->name) {
      new_names = true;
      break;
    }
    updated.values[at] = u->value;
  }
  if (!new_names) {
    // The common case: known counters changed. Share the names, copy the values.
    updated.names = old->names;
    base_size_ += names.size();
    copied_ += names.size();
    chunks_.push_back(std::make_shared<const Chunk>(std::move(updated)));
    return;
  }
  std::vector<CounterRef> merged;
  merged.reserve(names.size() + static_cast<size_t>(to - from));
  size_t i = 0;
  for (const CounterRef* u = from; u != to; ++u) {
    while (i < names.size() && NameLess(names[i], u->name)) {
      merged.push_back({names[i], old->values[i]});
      ++i;
    }
    if (i < names.size() && names[i] == u->name) ++i;  // replaced
    merged.push_back(*u);
  }
  for (; i < names.size(); ++i) merged.push_back({names[i], old->values[i]});
  AppendChunks(merged);
}

CounterSnapshot CounterSnapshot::With(std::vector<CounterRef> updates,
                                      std::optional<size_t> new_names) const {
  SortByName(updates);
  // A name given twice keeps its last value.
  size_t unique = 0;
  for (const CounterRef& u : updates) {
    if (unique > 0 && updates[unique - 1].name == u.name) {
      updates[unique - 1].value = u.value;
    } else {
      updates[unique++] = u;
    }
  }
  updates.resize(unique);
  CounterSnapshot out;
  if (updates.empty()) {
    out = *this;
    out.copied_ = 0;
    return out;
  }
  size_t added = 0;
  if (new_names) {
    added = *new_names;
  } else {
    for (const CounterRef& u : updates) added += Has(u.name) ? 0 : 1;
  }
  // The new run goes down while it holds more than 1/kGrowth of the next: each run
  // stays at most 1/kGrowth of the one after it, whatever the commits' sizes.
  std::vector<CounterRef> run = std::move(updates);
  size_t copied = run.size();
  size_t next = 0;
  for (; next < runs_.size() && run.size() * kGrowth > RunSize(next); ++next) {
    copied += RunSize(next);
    run = MergeRun(run, next);
  }
  size_t run_names = run.size();
  for (size_t i = next; i < runs_.size(); ++i) run_names += RunSize(i);
  if (run_names > std::max(kChunk, base_size_ / kFoldFraction) ||
      runs_.size() - next + 1 > kMaxRuns) {
    for (; next < runs_.size(); ++next) {
      copied += RunSize(next);
      run = MergeRun(run, next);
    }
    out = Fold(run);
    out.copied_ += copied;
    return out;
  }
  out.chunks_ = chunks_;
  out.base_size_ = base_size_;
  out.runs_.reserve(1 + runs_.size() - next);
  out.runs_.push_back(MakeChunk(run.data(), run.data() + run.size()));
  out.runs_.insert(out.runs_.end(), runs_.begin() + static_cast<std::ptrdiff_t>(next), runs_.end());
  out.size_ = size_ + added;
  out.copied_ = copied;
  return out;
}

std::vector<CounterRef> CounterSnapshot::MergeRun(const std::vector<CounterRef>& newer,
                                                  size_t run) const {
  const Chunk& older = *runs_[run];
  const size_t n = older.values.size();
  std::vector<CounterRef> merged;
  merged.reserve(newer.size() + n);
  size_t i = 0;
  for (const CounterRef& u : newer) {
    for (; i < n && NameLess(RunName(run, i), u.name); ++i)
      merged.push_back({RunName(run, i), older.values[i]});
    if (i < n && RunName(run, i) == u.name) ++i;  // overridden
    merged.push_back(u);
  }
  for (; i < n; ++i) merged.push_back({RunName(run, i), older.values[i]});
  return merged;
}

bool CounterSnapshot::Has(std::string_view name) const {
  for (size_t r = 0; r < runs_.size(); ++r) {
    const size_t i = runs_[r]->names->LowerBound(name);
    if (i < RunSize(r) && RunName(r, i) == name) return true;
  }
  const BasePosition p = BaseLowerBound(name);
  return !BaseAtEnd(p) && BaseName(p) == name;
}

CounterSnapshot CounterSnapshot::Fold(const std::vector<CounterRef>& sorted) const {
  CounterSnapshot out;
  if (chunks_.empty()) {
    out.AppendChunks(sorted);
    out.size_ = out.base_size_;
    return out;
  }
  out.chunks_.reserve(chunks_.size() + 1);
  const CounterRef* u = sorted.data();
  const CounterRef* const end = u + sorted.size();
  for (size_t i = 0; i < chunks_.size(); ++i) {
    // Names up to this chunk's last (and, for the last chunk, any later) go in it.
    const CounterRef* stop = end;
    if (i + 1 < chunks_.size()) {
      const std::string_view last = chunks_[i]->names->back();
      stop = std::partition_point(u, end,
                                  [&](const CounterRef& c) { return !NameLess(last, c.name); });
    }
    if (stop == u) {
      out.chunks_.push_back(chunks_[i]);
      out.base_size_ += chunks_[i]->names->size();
    } else {
      out.AppendUpdated(chunks_[i], u, stop);
    }
    u = stop;
  }
  out.size_ = out.base_size_;
  return out;
}

CounterSnapshot::BasePosition CounterSnapshot::BaseLowerBound(std::string_view name) const {
  const auto chunk = std::partition_point(
      chunks_.begin(), chunks_.end(), [&](const ChunkPtr& c) { return c->names->back() < name; });
  BasePosition p{static_cast<size_t>(chunk - chunks_.begin()), 0};
  if (!BaseAtEnd(p)) p.index = chunks_[p.chunk]->names->LowerBound(name);
  return p;
}

CounterSnapshot::BasePosition CounterSnapshot::BaseUpperBound(std::string_view name) const {
  const auto chunk = std::partition_point(
      chunks_.begin(), chunks_.end(), [&](const ChunkPtr& c) { return c->names->back() <= name; });
  BasePosition p{static_cast<size_t>(chunk - chunks_.begin()), 0};
  if (!BaseAtEnd(p)) p.index = chunks_[p.chunk]->names->UpperBound(name);
  return p;
}

CounterSnapshot::Cursor CounterSnapshot::Start(std::string_view prefix,
                                               std::optional<std::string_view> after) const {
  Cursor c;
  c.base = BaseLowerBound(prefix);
  for (size_t r = 0; r < runs_.size(); ++r) {
    c.run[r] = static_cast<uint32_t>(runs_[r]->names->LowerBound(prefix));
  }
  if (after) {
    const BasePosition past = BaseUpperBound(*after);
    if (std::pair(past.chunk, past.index) > std::pair(c.base.chunk, c.base.index)) c.base = past;
    for (size_t r = 0; r < runs_.size(); ++r) {
      c.run[r] = std::max(c.run[r], static_cast<uint32_t>(runs_[r]->names->UpperBound(*after)));
    }
  }
  return c;
}

std::optional<std::string_view> CounterSnapshot::Peek(const Cursor& c) const {
  std::optional<std::string_view> name;
  if (!BaseAtEnd(c.base)) name = BaseName(c.base);
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (c.run[r] < RunSize(r) && (!name || RunName(r, c.run[r]) < *name)) {
      name = RunName(r, c.run[r]);
    }
  }
  return name;
}

int64_t CounterSnapshot::ValueOf(const Cursor& c, std::string_view name) const {
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (c.run[r] < RunSize(r) && RunName(r, c.run[r]) == name) return runs_[r]->values[c.run[r]];
  }
  return chunks_[c.base.chunk]->values[c.base.index];
}

void CounterSnapshot::Advance(Cursor& c, std::string_view name) const {
  if (!BaseAtEnd(c.base) && BaseName(c.base) == name &&
      ++c.base.index == chunks_[c.base.chunk]->names->size()) {
    ++c.base.chunk;
    c.base.index = 0;
  }
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (c.run[r] < RunSize(r) && RunName(r, c.run[r]) == name) ++c.run[r];
  }
}

std::vector<CounterValue> CounterSnapshot::counters() const {
  std::vector<CounterValue> all;
  all.reserve(size_);
  ForEach([&all](std::string_view name, int64_t value) {
    all.push_back({std::string(name), value});
  });
  return all;
}

std::optional<int64_t> CounterSnapshot::Find(std::string_view name) const {
  for (size_t r = 0; r < runs_.size(); ++r) {  // the newest run that holds it wins
    const size_t i = runs_[r]->names->LowerBound(name);
    if (i < RunSize(r) && RunName(r, i) == name) return runs_[r]->values[i];
  }
  const BasePosition p = BaseLowerBound(name);
  if (BaseAtEnd(p) || BaseName(p) != name) return std::nullopt;
  return chunks_[p.chunk]->values[p.index];
}

CounterPage CounterSnapshot::List(std::string_view prefix, size_t limit,
                                  std::optional<std::string_view> after) const {
  return ListAcross({this}, prefix, limit, after);
}

std::optional<int64_t> CounterSnapshot::FindSum(const std::vector<CountersPtr>& shards,
                                                std::string_view name, bool* saturated) {
  WideSum sum = 0;
  bool found = false;
  for (const CountersPtr& shard : shards) {
    if (!shard) continue;
    if (const std::optional<int64_t> v = shard->Find(name)) {
      sum += *v;
      found = true;
    }
  }
  if (!found) return std::nullopt;
  bool capped = false;
  const int64_t value = Capped(sum, capped);
  if (saturated != nullptr) *saturated = capped;
  return value;
}

CounterPage CounterSnapshot::ListSum(const std::vector<CountersPtr>& shards,
                                     std::string_view prefix, size_t limit,
                                     std::optional<std::string_view> after) {
  std::vector<const CounterSnapshot*> present;
  for (const CountersPtr& shard : shards) {
    if (shard) present.push_back(shard.get());
  }
  return ListAcross(present, prefix, limit, after);
}

CounterPage CounterSnapshot::ListAcross(const std::vector<const CounterSnapshot*>& shards,
                                        std::string_view prefix, size_t limit,
                                        std::optional<std::string_view> after) {
  // Each reader's name is found once per step (a pass over its levels), not at every
  // comparison.
  struct Reader {
    const CounterSnapshot* snapshot;
    Cursor at;
    std::optional<std::string_view> name;  // where it is; nullopt: past the prefix
    void Settle(std::string_view prefix) {
      name = snapshot->Peek(at);
      if (name && !HasPrefix(*name, prefix)) name.reset();
    }
  };
  std::vector<Reader> readers;
  for (const CounterSnapshot* shard : shards) {
    readers.push_back({shard, shard->Start(prefix, after), std::nullopt});
    readers.back().Settle(prefix);
  }
  CounterPage page;
  while (true) {
    // The smallest name any shard is at, summed over the shards that hold it.
    std::optional<std::string_view> smallest;
    for (const Reader& r : readers) {
      if (r.name && (!smallest || *r.name < *smallest)) smallest = r.name;
    }
    if (!smallest) break;
    if (page.counters.size() == limit) {
      if (!page.counters.empty()) page.next = page.counters.back().name;
      break;
    }
    CounterValue c{std::string(*smallest), 0};
    WideSum sum = 0;
    for (Reader& r : readers) {
      if (r.name && *r.name == c.name) {
        sum += r.snapshot->ValueOf(r.at, c.name);
        r.snapshot->Advance(r.at, c.name);
        r.Settle(prefix);
      }
    }
    c.value = Capped(sum, c.saturated);
    page.counters.push_back(std::move(c));
  }
  return page;
}

size_t CounterSnapshot::SharedChunks(const CounterSnapshot& a, const CounterSnapshot& b) {
  std::unordered_set<const Chunk*> of_a;
  for (const ChunkPtr& c : a.chunks_) of_a.insert(c.get());
  size_t shared = 0;
  for (const ChunkPtr& c : b.chunks_) shared += of_a.count(c.get());
  return shared;
}

size_t CounterSnapshot::SharedRuns(const CounterSnapshot& a, const CounterSnapshot& b) {
  size_t shared = 0;
  for (const ChunkPtr& run : b.runs_) {
    shared += static_cast<size_t>(std::count(a.runs_.begin(), a.runs_.end(), run));
  }
  return shared;
}

std::vector<size_t> CounterSnapshot::RunSizes(const CounterSnapshot& s) {
  std::vector<size_t> sizes;
  for (size_t r = 0; r < s.runs_.size(); ++r) sizes.push_back(s.RunSize(r));
  return sizes;
}

size_t CounterSnapshot::RunNames() const {
  size_t names = 0;
  for (size_t r = 0; r < runs_.size(); ++r) names += RunSize(r);
  return names;
}

size_t CounterSnapshot::DistinctNames(const std::vector<CountersPtr>& shards) {
  std::vector<const CounterSnapshot*> present;
  for (const CountersPtr& shard : shards) {
    if (shard && shard->size() > 0) present.push_back(shard.get());
  }
  if (present.size() == 1) return present[0]->size();
  // A k-way merge through a min-heap of each shard's next name: O(N log shards)
  // comparisons for N names in all (this runs on the HTTP thread, at 1e6 counters).
  struct Head {
    std::string_view name;
    size_t shard;
  };
  const auto later = [](const Head& a, const Head& b) { return a.name > b.name; };
  std::vector<Cursor> at(present.size());  // beside the heap: a cursor is large to move
  std::vector<Head> heap;
  for (size_t i = 0; i < present.size(); ++i) {
    at[i] = present[i]->First();
    heap.push_back({*present[i]->Peek(at[i]), i});
  }
  std::make_heap(heap.begin(), heap.end(), later);
  size_t distinct = 0;
  std::string_view last;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Head& head = heap.back();
    if (distinct == 0 || head.name != last) ++distinct;
    last = head.name;  // chunks are immutable: it outlives Next
    const CounterSnapshot& shard = *present[head.shard];
    Cursor& cursor = at[head.shard];
    shard.Advance(cursor, head.name);
    if (const std::optional<std::string_view> next = shard.Peek(cursor)) {
      head.name = *next;
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
    }
  }
  return distinct;
}

}  // namespace oncecount::shard
