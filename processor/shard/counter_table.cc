#include "processor/shard/counter_table.h"

#include <xxhash.h>

#include <stdexcept>

namespace oncecount::shard {
namespace {

constexpr size_t kMinSlots = 16;

}  // namespace

uint64_t CounterTable::Hash(std::string_view name) {
  return XXH3_64bits(name.data(), name.size());
}

size_t CounterTable::Probe(std::string_view name, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t s = hash & mask;; s = (s + 1) & mask) {
    const uint64_t slot = slots_[s];
    if (slot == 0) return s;
    if (TagMatches(slot, hash) && entries_[EntryOf(slot)].name == name) return s;
  }
}

std::optional<CounterTable::Index> CounterTable::Find(std::string_view name) const {
  if (slots_.empty()) return std::nullopt;
  const uint64_t slot = slots_[Probe(name, Hash(name))];
  if (slot == 0) return std::nullopt;
  return EntryOf(slot);
}

std::pair<CounterTable::Index, bool> CounterTable::FindOrInsert(std::string&& name, uint64_t hash) {
  if (2 * (entries_.size() + 1) > slots_.size()) Grow(2 * (entries_.size() + 1));
  const size_t s = Probe(name, hash);
  if (slots_[s] != 0) return {EntryOf(slots_[s]), false};
  return {Append(std::move(name), s, hash), true};
}

std::pair<CounterTable::Index, bool> CounterTable::Assign(std::string_view name, int64_t value) {
  if (2 * (entries_.size() + 1) > slots_.size()) Grow(2 * (entries_.size() + 1));
  const uint64_t hash = Hash(name);
  const size_t s = Probe(name, hash);
  const bool inserted = slots_[s] == 0;
  const Index i = inserted ? Append(std::string(name), s, hash) : EntryOf(slots_[s]);
  entries_[i].value = value;
  return {i, inserted};
}

CounterTable::Index CounterTable::Append(std::string&& name, size_t slot, uint64_t hash) {
  const auto i = static_cast<Index>(entries_.size());
  entries_.push_back({std::move(name), 0, 0});
  slots_[slot] = Slot(hash, i);
  return i;
}

int64_t CounterTable::at(std::string_view name) const {
  const std::optional<Index> i = Find(name);
  if (!i) throw std::out_of_range("no counter named " + std::string(name));
  return entries_[*i].value;
}

void CounterTable::ClearMarks() {
  for (Entry& e : entries_) e.mark = 0;
}

void CounterTable::reserve(size_t n) {
  entries_.reserve(n);
  if (2 * n > slots_.size()) Grow(2 * n);
}

void CounterTable::Grow(size_t min_slots) {
  size_t n = slots_.empty() ? kMinSlots : slots_.size();
  while (n < min_slots) n *= 2;
  if (n == slots_.size()) return;
  slots_.assign(n, 0);
  const size_t mask = n - 1;
  for (Index i = 0; i < entries_.size(); ++i) {
    const uint64_t hash = Hash(entries_[i].name);
    size_t s = hash & mask;
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = Slot(hash, i);
  }
}

bool operator==(const CounterTable& a, const CounterTable& b) {
  if (a.size() != b.size()) return false;
  for (const CounterTable::Entry& e : a) {
    const std::optional<CounterTable::Index> i = b.Find(e.name);
    if (!i || b[*i].value != e.value) return false;
  }
  return true;
}

}  // namespace oncecount::shard
