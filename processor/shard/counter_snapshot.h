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
// is made from the previous one (With): counters live in chunks of about kChunk
// names, and the new snapshot shares every chunk the commit did not touch; a touched
// chunk whose names did not change shares its names too and copies only its values.
// Publishing costs O(chunks + touched chunks x kChunk) integers, not a copy and sort
// of every counter. A chunk's names are packed in one buffer (one allocation per
// chunk, not per name), so a touched chunk that gained names is copied with a few
// memcpy calls.
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

  CounterSnapshot() = default;
  // From counters with distinct names, in any order (the names are copied).
  static CounterSnapshot From(std::vector<CounterRef> counters);
  static CounterSnapshot FromMap(const std::unordered_map<std::string, int64_t>& live);
  // This snapshot with `updates` applied: new values of existing names, and new
  // names (copied). Any order; a name given twice takes its last value.
  CounterSnapshot With(std::vector<CounterRef> updates) const;

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
    for (const ChunkPtr& chunk : chunks_) {
      for (size_t i = 0; i < chunk->values.size(); ++i) visit((*chunk->names)[i], chunk->values[i]);
    }
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

  // How many chunks `b` shares with `a`, and how many `s` has: the cost of With.
  static size_t SharedChunks(const CounterSnapshot& a, const CounterSnapshot& b);
  static size_t ChunkCount(const CounterSnapshot& s) { return s.chunks_.size(); }

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

  // A position: chunk index and index inside it (chunk == chunks_.size(): the end).
  struct Cursor {
    size_t chunk = 0;
    size_t index = 0;
  };
  Cursor LowerBound(std::string_view name) const;  // the first name >= `name`
  Cursor UpperBound(std::string_view name) const;  // the first name > `name`
  // The first name that starts with `prefix` and sorts after `after`.
  Cursor Start(std::string_view prefix, std::optional<std::string_view> after) const;
  bool AtEnd(const Cursor& c) const { return c.chunk >= chunks_.size(); }
  std::string_view NameAt(const Cursor& c) const { return (*chunks_[c.chunk]->names)[c.index]; }
  int64_t ValueAt(const Cursor& c) const { return chunks_[c.chunk]->values[c.index]; }
  void Next(Cursor& c) const;
  static CounterPage ListAcross(const std::vector<const CounterSnapshot*>& shards,
                                std::string_view prefix, size_t limit,
                                std::optional<std::string_view> after);

  // Appends chunks holding `sorted` (by name, unique), split to kChunk names.
  void AppendChunks(const std::vector<CounterRef>& sorted);
  // Appends `old` with the `updates` that fall in it applied (sorted, unique).
  void AppendUpdated(const ChunkPtr& old, const CounterRef* from, const CounterRef* to);

  std::vector<ChunkPtr> chunks_;  // chunk i's names all sort before chunk i+1's
  size_t size_ = 0;
};

}  // namespace oncecount::shard
