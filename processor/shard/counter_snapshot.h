// CounterSnapshot: an immutable, name-sorted copy of counter values, as a shard
// publishes it after a commit and as the HTTP API reads it (SPEC §4).
//
// Shards own their live counters; readers never touch them. A shard publishes a
// snapshot (shared_ptr<const CounterSnapshot>) and the API merges the snapshots of
// all shards by summing per name (each shard is one actor of a per-actor counter).
//
// Thread-safety: immutable once built; share it freely across threads.
#pragma once

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

struct CounterPage {
  std::vector<CounterValue> counters;
  std::optional<std::string> next;  // pass as `after` for the next page; nullopt: done
};

class CounterSnapshot {
 public:
  CounterSnapshot() = default;
  // From a shard's live counters (any order).
  static CounterSnapshot FromMap(const std::unordered_map<std::string, int64_t>& live);
  // The sum per name of several shards' snapshots. A sum that would leave int64
  // saturates (shards reject updates that overflow their own counter, but their
  // sum can still exceed the type).
  static CounterSnapshot Merge(const std::vector<std::shared_ptr<const CounterSnapshot>>& shards);

  std::optional<int64_t> Find(std::string_view name) const;
  // Up to `limit` counters whose names start with `prefix` and sort after `after`.
  CounterPage List(std::string_view prefix, size_t limit,
                   std::optional<std::string_view> after) const;

  size_t size() const { return sorted_.size(); }
  const std::vector<CounterValue>& counters() const { return sorted_; }

 private:
  explicit CounterSnapshot(std::vector<CounterValue> sorted) : sorted_(std::move(sorted)) {}
  std::vector<CounterValue> sorted_;  // by name, names unique
};

}  // namespace oncecount::shard
