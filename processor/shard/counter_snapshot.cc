#include "processor/shard/counter_snapshot.h"

#include <algorithm>
#include <limits>

namespace oncecount::shard {
namespace {

bool ByName(const CounterValue& a, const CounterValue& b) {
  return a.name < b.name;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace

CounterSnapshot CounterSnapshot::FromMap(const std::unordered_map<std::string, int64_t>& live) {
  std::vector<CounterValue> sorted;
  sorted.reserve(live.size());
  for (const auto& [name, value] : live) sorted.push_back({name, value});
  std::sort(sorted.begin(), sorted.end(), ByName);
  return CounterSnapshot(std::move(sorted));
}

CounterSnapshot CounterSnapshot::Merge(
    const std::vector<std::shared_ptr<const CounterSnapshot>>& shards) {
  std::vector<CounterValue> all;
  for (const auto& shard : shards) {
    if (shard) all.insert(all.end(), shard->sorted_.begin(), shard->sorted_.end());
  }
  std::stable_sort(all.begin(), all.end(), ByName);
  std::vector<CounterValue> merged;
  for (CounterValue& c : all) {
    if (!merged.empty() && merged.back().name == c.name) {
      merged.back().value = SaturatingAdd(merged.back().value, c.value);
    } else {
      merged.push_back(std::move(c));
    }
  }
  return CounterSnapshot(std::move(merged));
}

std::optional<int64_t> CounterSnapshot::Find(std::string_view name) const {
  const auto it =
      std::lower_bound(sorted_.begin(), sorted_.end(), name,
                       [](const CounterValue& c, std::string_view n) { return c.name < n; });
  if (it == sorted_.end() || it->name != name) return std::nullopt;
  return it->value;
}

CounterPage CounterSnapshot::List(std::string_view prefix, size_t limit,
                                  std::optional<std::string_view> after) const {
  // Start at the first name >= prefix, or > after when that is later.
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), prefix,
                             [](const CounterValue& c, std::string_view p) { return c.name < p; });
  if (after) {
    const auto past = std::upper_bound(
        sorted_.begin(), sorted_.end(), *after,
        [](std::string_view a, const CounterValue& c) { return a < std::string_view(c.name); });
    it = std::max(it, past);
  }
  CounterPage page;
  const auto matches = [&](const CounterValue& c) {
    return c.name.compare(0, prefix.size(), prefix) == 0;
  };
  for (; it != sorted_.end() && matches(*it) && page.counters.size() < limit; ++it) {
    page.counters.push_back(*it);
  }
  if (it != sorted_.end() && matches(*it) && !page.counters.empty())
    page.next = page.counters.back().name;
  return page;
}

}  // namespace oncecount::shard
