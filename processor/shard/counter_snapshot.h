// CounterSnapshot: an immutable, name-sorted copy of counter values, as a shard
// publishes it after a commit and as the HTTP API reads it (SPEC §4).
//
// Shards own their live counters; readers never touch them. A shard publishes a
// snapshot (shared_ptr<const CounterSnapshot>), and the API answers from the
// snapshots of all shards by summing per name (each shard is one actor of a
// per-actor counter), merging them on the fly: a lookup costs a binary search per
// shard and level, and a page of L names about L steps per shard and level, whatever
// the total.
//
// A shard with millions of counters publishes after every commit, so a new snapshot
// is made from the previous one (With), in levels as a log-structured merge tree is:
// a base of chunks of about kChunk names, and a few sorted runs of the names changed
// since the base was made (the recent runs), newest and smallest first; a run
// overrides the older runs and the base. A commit's k changed names become a new
// run, which is merged into the next older run while it holds more than 1/kGrowth of
// it (and the result into the next, and so on), so each run is at most 1/kGrowth of
// the next: about log_kGrowth(runs' names / k) levels, and a name is copied about
// kGrowth + 1 times per level it goes down. A commit thus costs O(k log k +
// k x kGrowth x levels) amortized, not the size of the runs, and shares every run
// it does not reach. Once the runs hold more than 1/kFoldFraction of the base
// together, they are folded in: the new base shares every chunk the runs did not
// touch, and a touched chunk whose names did not change shares its names too and
// copies only its values. A fold costs O(runs + chunks + touched chunks x kChunk),
// once per base/(kFoldFraction x k) commits, instead of a copy and sort of every
// counter, even when the commits' names are spread over every chunk. Names are packed
// in one buffer per chunk and run (one allocation each, not one per name).
//
// A restored shard builds its first snapshot as it decodes its snapshot's counters,
// which are stored by name: one pass, no sort (SortedBuilder).
//
// Thread-safety: immutable once built; share it freely across threads.
#pragma once

#include <array>
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
  // A sum over shards (ListSum) that left int64 and was capped at its end: each shard
  // refuses an update that overflows its own part (SPEC §1's overflow), but the
  // shards' parts of one counter are not added up until a reader asks.
  bool saturated = false;
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
  // The recent runs are folded into the base when they hold more than
  // max(kChunk, base names / kFoldFraction) names together.
  static constexpr size_t kFoldFraction = 8;
  // A run is merged into the next older one while it holds more than 1/kGrowth of it.
  static constexpr size_t kGrowth = 4;
  // The most recent runs. Each is at least kGrowth times the one before, so 2^32
  // names fit in 17; were a commit to make more, the runs would be folded.
  static constexpr size_t kMaxRuns = 24;

  CounterSnapshot() = default;
  // From counters with distinct names, in any order (the names are copied).
  static CounterSnapshot From(std::vector<CounterRef> counters);
  static CounterSnapshot FromMap(const std::unordered_map<std::string, int64_t>& live);
  // This snapshot with `updates` applied: new values of existing names, and new
  // names (copied). Any order; a name given twice takes its last value. A caller
  // that knows how many of the names are new (a shard does: it inserted them)
  // passes `new_names` and spares With a lookup per name and level to find out.
  CounterSnapshot With(std::vector<CounterRef> updates,
                       std::optional<size_t> new_names = std::nullopt) const;

  // Builds a snapshot from counters given in name order, without a sort (below).
  class SortedBuilder;

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
    Cursor c = First();
    for (std::optional<std::string_view> name = Peek(c); name; name = Peek(c)) {
      visit(*name, ValueOf(c, *name));
      Advance(c, *name);
    }
  }

  // Across shards (null snapshots are skipped), summing per name. A sum that would
  // leave int64 saturates (shards reject updates that overflow their own counter,
  // but their sum can still exceed the type).
  // `saturated`, when given, tells whether the sum left int64 and was capped.
  static std::optional<int64_t> FindSum(const std::vector<CountersPtr>& shards,
                                        std::string_view name, bool* saturated = nullptr);
  static CounterPage ListSum(const std::vector<CountersPtr>& shards, std::string_view prefix,
                             size_t limit, std::optional<std::string_view> after);
  // How many distinct names the shards hold together (a pass over all of them).
  static size_t DistinctNames(const std::vector<CountersPtr>& shards);

  // Test hooks, the costs of With: how many base chunks `b` shares with `a`, and how
  // many `s` has; how many names `s`'s recent runs hold together, and each (newest
  // first); how many of `b`'s runs it shares with `a`; and how many names and values
  // the With that made `s` copied (0 when something else made it).
  static size_t SharedChunks(const CounterSnapshot& a, const CounterSnapshot& b);
  static size_t ChunkCount(const CounterSnapshot& s) { return s.chunks_.size(); }
  static size_t RecentNames(const CounterSnapshot& s) { return s.RunNames(); }
  static std::vector<size_t> RunSizes(const CounterSnapshot& s);
  static size_t SharedRuns(const CounterSnapshot& a, const CounterSnapshot& b);
  static size_t CopiedByWith(const CounterSnapshot& s) { return s.copied_; }

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
  // A base chunk or a recent run.
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

  size_t RunSize(size_t run) const { return runs_[run]->values.size(); }
  std::string_view RunName(size_t run, size_t i) const { return (*runs_[run]->names)[i]; }
  size_t RunNames() const;  // in all runs together

  // A position in the merged order of the base and the recent runs.
  struct Cursor {
    BasePosition base;
    std::array<uint32_t, kMaxRuns> run{};  // run[i]: the position in runs_[i]
  };
  Cursor First() const { return {}; }
  // The first name that starts with `prefix` and sorts after `after`.
  Cursor Start(std::string_view prefix, std::optional<std::string_view> after) const;
  // The smallest name any level is at; nullopt: at the end. A pass over the levels,
  // so a caller finds it once per step and hands it to ValueOf and Advance.
  std::optional<std::string_view> Peek(const Cursor& c) const;
  // The value of `name` (Peek's) from the newest level that is at it.
  int64_t ValueOf(const Cursor& c, std::string_view name) const;
  // Past `name` (Peek's) in every level.
  void Advance(Cursor& c, std::string_view name) const;
  static CounterPage ListAcross(const std::vector<const CounterSnapshot*>& shards,
                                std::string_view prefix, size_t limit,
                                std::optional<std::string_view> after);

  // A chunk of `sorted` (by name, unique, not empty).
  static ChunkPtr MakeChunk(const CounterRef* from, const CounterRef* to);
  // `newer` (sorted, unique) merged with run `run`: sorted and unique, newer's values
  // winning.
  std::vector<CounterRef> MergeRun(const std::vector<CounterRef>& newer, size_t run) const;
  // Whether a run or the base holds `name`.
  bool Has(std::string_view name) const;
  // This snapshot's base with `sorted` (by name, unique) folded in, and no recent run.
  CounterSnapshot Fold(const std::vector<CounterRef>& sorted) const;
  // Appends chunks holding `sorted` (by name, unique) to the base, split to kChunk names.
  void AppendChunks(const std::vector<CounterRef>& sorted);
  // Appends `old` with the `updates` that fall in it applied (sorted, unique).
  void AppendUpdated(const ChunkPtr& old, const CounterRef* from, const CounterRef* to);

  std::vector<ChunkPtr> chunks_;  // the base: chunk i's names all sort before chunk i+1's
  size_t base_size_ = 0;          // names in the base
  // The recent runs, newest first, each sorted and at most 1/kGrowth of the next: a
  // run's values override those of the runs after it and of the base.
  std::vector<ChunkPtr> runs_;
  size_t size_ = 0;    // distinct names in the base and the runs together
  size_t copied_ = 0;  // names and values the With that made this copied (CopiedByWith)
};

// Builds a snapshot from counters given in name order (a shard snapshot's), in one
// pass and without a sort. Owned by one thread; use once.
class CounterSnapshot::SortedBuilder {
 public:
  // Adds a counter whose name sorts after every name added before. False, and
  // nothing added, when it does not (the input is not sorted, or a name repeats):
  // the caller makes the snapshot another way (From). `name` must stay valid until
  // Finish.
  bool Add(std::string_view name, int64_t value);
  CounterSnapshot Finish() &&;

 private:
  void Flush();
  CounterSnapshot out_;
  std::vector<CounterRef> pending_;  // the next chunk's counters
};

}  // namespace oncecount::shard
