// CounterSnapshot: an immutable, name-sorted copy of counter values, as a shard
// publishes it after a commit and as the HTTP API reads it (SPEC §4).
//
// Shards own their live counters; readers never touch them. A shard publishes a
// snapshot (shared_ptr<const CounterSnapshot>), and the API answers from the
// snapshots of all shards by summing per name (each shard is one actor of a
// per-actor counter), merging them on the fly: a lookup costs a binary search per
// shard and a page of L names about L steps per shard, whatever the total.
//
// A shard with millions of counters publishes after every commit, so a new snapshot
// is made from the previous one (With), in two levels as a log-structured merge
// tree is: a base of chunks of about kChunk names, and a sorted run of the names
// changed since the base was made (the recent run), which overrides the base. A
// commit merges its k changed names into the recent run and shares the base
// whole; once the run outgrows 1/kFoldFraction of the base, it is folded in: the
// new base shares every chunk the run did not touch, and a touched chunk whose
// names did not change shares its names too and copies only its values. So a
// commit costs O(run + k log k) and a fold O(chunks + touched chunks x kChunk),
// once per base/(kFoldFraction x k) commits, instead of a copy and sort of every
// counter, even when the commits' names are spread over every chunk. Names are
// packed in one buffer per chunk (one allocation per chunk, not per name).
//
// Thread-safety: immutable once built; share it freely across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oncecount::shard {

struct CounterValue {
  std::string name;
  int64_t value = 0;
  friend bool operator==(const CounterValue&, const CounterValue&) = default;
};

// A counter by reference: the name lives elsewhere, for as long as the call.
struct CounterRef {
  std::string_view name;
  int64_t value = 0;
};

struct CounterPage {
  std::vector<CounterValue> counters;
  std::optional<std::string> next;  // pass as `after` for the next page; nullopt: done
};

class CounterSnapshot;
using CountersPtr = std::shared_ptr<const CounterSnapshot>;

class CounterSnapshot {
 public:
  // Names per chunk: a chunk splits in two above twice this.
  static constexpr size_t kChunk = 256;
  // The recent run is folded into the base when it holds more than
  // max(kChunk, base names / kFoldFraction) names.
  static constexpr size_t kFoldFraction = 8;

  CounterSnapshot() = default;
  // From counters with distinct names, in any order (the names are copied).
  static CounterSnapshot From(std::vector<CounterRef> counters);
  static CounterSnapshot FromMap(const std::unordered_map<std::string, int64_t>& live);
  // This snapshot with `updates` applied: new values of existing names, and new
  // names (copied). Any order; a name given twice takes its last value. A caller
  // that knows how many of the names are new (a shard does: it inserted them)
  // passes `new_names` and spares With a lookup per name to find out.
  CounterSnapshot With(std::vector<CounterRef> updates,
                       std::optional<size_t> new_names = std::nullopt) const;

  std::optional<int64_t> Find(std::string_view name) const;
  // Up to `limit` counters whose names start with `prefix` and sort after `after`.
  CounterPage List(std::string_view prefix, size_t limit,
                   std::optional<std::string_view> after) const;
  size_t size() const { return size_; }
  // Every counter, by name (a copy: for tests and small snapshots).
  std::vector<CounterValue> counters() const;
  // Calls visit(name, value) for every counter, by name.
  template <class Visit>
  void ForEach(Visit&& visit) const {
    for (Cursor c; !AtEnd(c); Next(c)) visit(NameAt(c), ValueAt(c));
  }

  // Across shards (null snapshots are skipped), summing per name. A sum that would
  // leave int64 saturates (shards reject updates that overflow their own counter,
  // but their sum can still exceed the type).
  static std::optional<int64_t> FindSum(const std::vector<CountersPtr>& shards,
                                        std::string_view name);
  static CounterPage ListSum(const std::vector<CountersPtr>& shards, std::string_view prefix,
                             size_t limit, std::optional<std::string_view> after);
  // How many distinct names the shards hold together (a pass over all of them).
  static size_t DistinctNames(const std::vector<CountersPtr>& shards);

  // How many base chunks `b` shares with `a`, and how many `s` has, and how many
  // names its recent run holds: the cost of With.
  static size_t SharedChunks(const CounterSnapshot& a, const CounterSnapshot& b);
  static size_t ChunkCount(const CounterSnapshot& s) { return s.chunks_.size(); }
  static size_t RecentNames(const CounterSnapshot& s) { return s.RecentSize(); }

 private:
  // A chunk's names, sorted, unique and non-empty, packed one after the other.
  struct Names {
    std::string bytes;
    std::vector<uint32_t> ends;  // name i is bytes[ends[i - 1], ends[i])
    size_t size() const { return ends.size(); }
    std::string_view operator[](size_t i) const {
      const uint32_t from = i == 0 ? 0 : ends[i - 1];
      return std::string_view(bytes).substr(from, ends[i] - from);
    }
    std::string_view back() const { return (*this)[size() - 1]; }
    size_t LowerBound(std::string_view name) const;  // the first index whose name >= name
    size_t UpperBound(std::string_view name) const;  // the first index whose name > name
  };
  struct Chunk {
    std::shared_ptr<const Names> names;
    std::vector<int64_t> values;  // values[i] is names[i]'s
  };
  using ChunkPtr = std::shared_ptr<const Chunk>;

  // A position in the base: chunk and index inside it (chunk == chunks_.size(): the end).
  struct BasePosition {
    size_t chunk = 0;
    size_t index = 0;
  };
  BasePosition BaseLowerBound(std::string_view name) const;  // the first name >= `name`
  BasePosition BaseUpperBound(std::string_view name) const;  // the first name > `name`
  bool BaseAtEnd(const BasePosition& p) const { return p.chunk >= chunks_.size(); }
  std::string_view BaseName(const BasePosition& p) const {
    return (*chunks_[p.chunk]->names)[p.index];
  }
  bool BaseHas(std::string_view name) const;

  size_t RecentSize() const { return recent_ ? recent_->values.size() : 0; }
  std::string_view RecentName(size_t i) const { return (*recent_->names)[i]; }

  // A position in the merged order of the base and the recent run.
  struct Cursor {
    BasePosition base;
    size_t recent = 0;
  };
  // The first name that starts with `prefix` and sorts after `after`.
  Cursor Start(std::string_view prefix, std::optional<std::string_view> after) const;
  bool AtEnd(const Cursor& c) const { return BaseAtEnd(c.base) && c.recent >= RecentSize(); }
  std::string_view NameAt(const Cursor& c) const;
  int64_t ValueAt(const Cursor& c) const;
  void Next(Cursor& c) const;
  static CounterPage ListAcross(const std::vector<const CounterSnapshot*>& shards,
                                std::string_view prefix, size_t limit,
                                std::optional<std::string_view> after);

  // A chunk of `sorted` (by name, unique, not empty).
  static ChunkPtr MakeChunk(const CounterRef* from, const CounterRef* to);
  // This snapshot's base with `sorted` (by name, unique) folded in, and no recent run.
  CounterSnapshot Fold(const std::vector<CounterRef>& sorted) const;
  // Appends chunks holding `sorted` (by name, unique) to the base, split to kChunk names.
  void AppendChunks(const std::vector<CounterRef>& sorted);
  // Appends `old` with the `updates` that fall in it applied (sorted, unique).
  void AppendUpdated(const ChunkPtr& old, const CounterRef* from, const CounterRef* to);

  std::vector<ChunkPtr> chunks_;  // the base: chunk i's names all sort before chunk i+1's
  size_t base_size_ = 0;          // names in the base
  ChunkPtr recent_;               // the recent run (null: none); its values override the base's
  size_t size_ = 0;               // distinct names in the base and the run together
};

}  // namespace oncecount::shard
