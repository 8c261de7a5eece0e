// CounterTable: a shard's live counters by name, for the shard's hot path.
//
// A shard with millions of counters looks one up for every event it applies, and
// most of those lookups miss the CPU's caches. A node-based hash map costs three
// dependent misses (bucket, previous node, node); this table costs two: its index
// is one array of slots (a tag of the name's hash and an entry number, linear
// probing) and the entries are one array in insertion order. Entries are never
// erased, so an entry's number stays valid for the table's life: callers keep
// numbers, not pointers (the entries move when the array grows).
//
// A caller with many names to look up at once hashes them first (Hash) and asks for
// their slots (PrefetchSlot), then, once those have arrived, for their entries
// (PrefetchEntry): the misses of a batch then overlap instead of following each other.
//
// Each entry carries a mark that its owner may use to note it once per some period
// (ShardState: once per changelog batch) without a second lookup structure.
//
// Thread-safety: none; owned by the shard's owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "processor/filter/id_hash.h"  // PrefetchLine

namespace oncecount::shard {

class CounterTable {
 public:
  using Index = uint32_t;

  struct Entry {
    std::string name;
    int64_t value = 0;
    uint32_t mark = 0;  // the owner's; 0 when inserted
  };

  // The entry named `name`, if any.
  std::optional<Index> Find(std::string_view name) const;
  // The entry named `name`, inserted with value 0 when missing (second: inserted).
  std::pair<Index, bool> FindOrInsert(std::string&& name) {
    const uint64_t hash = Hash(name);
    return FindOrInsert(std::move(name), hash);
  }
  // The same, for a name whose Hash the caller has already taken.
  std::pair<Index, bool> FindOrInsert(std::string&& name, uint64_t hash);
  // Sets `name` to `value`, inserting it when missing (second: inserted).
  std::pair<Index, bool> Assign(std::string_view name, int64_t value);

  // The hash the table files `name` under.
  static uint64_t Hash(std::string_view name);
  // Hints only: bring into cache the first slot a name with this hash probes, and the
  // entry that slot names when its tag matches. Neither changes the table.
  void PrefetchSlot(uint64_t hash) const {
    if (!slots_.empty()) filter::PrefetchLine(&slots_[hash & (slots_.size() - 1)]);
  }
  void PrefetchEntry(uint64_t hash) const {
    if (slots_.empty()) return;
    const uint64_t slot = slots_[hash & (slots_.size() - 1)];
    if (slot != 0 && TagMatches(slot, hash)) filter::PrefetchLine(&entries_[EntryOf(slot)]);
  }

  Entry& operator[](Index i) { return entries_[i]; }
  const Entry& operator[](Index i) const { return entries_[i]; }
  // The value of `name`; throws std::out_of_range when it is missing (for tests).
  int64_t at(std::string_view name) const;

  // Sets every entry's mark to 0 (for owners whose marks wrap around).
  void ClearMarks();

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void reserve(size_t n);

  // The entries in insertion order.
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  // Same names with the same values, whatever the insertion order.
  friend bool operator==(const CounterTable& a, const CounterTable& b);

 private:
  // A slot: the hash's high 32 bits, then the entry number + 1 (0: an empty slot).
  static uint64_t Slot(uint64_t hash, Index i) { return (hash >> 32 << 32) | (uint64_t{i} + 1); }
  static Index EntryOf(uint64_t slot) { return static_cast<Index>((slot & 0xFFFFFFFFu) - 1); }
  static bool TagMatches(uint64_t slot, uint64_t hash) { return (slot >> 32) == (hash >> 32); }
  // The slot holding `name` (hash `hash`), or the empty slot where it would go.
  size_t Probe(std::string_view name, uint64_t hash) const;
  void Grow(size_t min_slots);
  Index Append(std::string&& name, size_t slot, uint64_t hash);

  std::vector<Entry> entries_;
  std::vector<uint64_t> slots_;  // a power of two, at most half full; empty until used
};

}  // namespace oncecount::shard
