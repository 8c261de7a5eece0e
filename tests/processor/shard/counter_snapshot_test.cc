#include "processor/shard/counter_snapshot.h"

#include <gtest/gtest.h>

#include <limits>

namespace oncecount::shard {
namespace {

std::shared_ptr<const CounterSnapshot> Shard(std::unordered_map<std::string, int64_t> live) {
  return std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(live));
}

std::vector<std::string> Names(const CounterPage& page) {
  std::vector<std::string> names;
  for (const auto& c : page.counters) names.push_back(c.name);
  return names;
}

TEST(CounterSnapshot, SortsByNameAndFindsExactNames) {
  const CounterSnapshot s = CounterSnapshot::FromMap({{"b", 2}, {"a", 1}, {"a/x", -3}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.counters()[0].name, "a");
  EXPECT_EQ(s.counters()[2].name, "b");
  EXPECT_EQ(s.Find("a/x"), -3);
  EXPECT_EQ(s.Find("a/"), std::nullopt);
  EXPECT_EQ(s.Find("c"), std::nullopt);
}

TEST(CounterSnapshot, MergesShardsBySummingPerName) {
  const CounterSnapshot merged =
      CounterSnapshot::Merge({Shard({{"likes", 3}, {"clicks", 1}}), Shard({{"likes", 4}}), nullptr,
                              Shard({{"views", -2}, {"clicks", 10}})});
  EXPECT_EQ(merged.counters(),
            (std::vector<CounterValue>{{"clicks", 11}, {"likes", 7}, {"views", -2}}));
}

TEST(CounterSnapshot, SaturatesASumThatWouldLeaveInt64) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const CounterSnapshot merged = CounterSnapshot::Merge(
      {Shard({{"up", kMax}, {"down", kMin}}), Shard({{"up", 5}, {"down", -5}})});
  EXPECT_EQ(merged.Find("up"), kMax);
  EXPECT_EQ(merged.Find("down"), kMin);
}

TEST(CounterSnapshot, ListsPagesInNameOrderUntilTheLast) {
  std::unordered_map<std::string, int64_t> live;
  for (int i = 0; i < 25; ++i) live["c" + std::string(i < 10 ? "0" : "") + std::to_string(i)] = i;
  const CounterSnapshot s = CounterSnapshot::FromMap(live);
  std::vector<std::string> seen;
  std::optional<std::string> after;
  int pages = 0;
  do {
    const CounterPage page = s.List("", 10, after);
    for (const auto& c : page.counters) seen.push_back(c.name);
    after = page.next;
    ++pages;
  } while (after && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), "c00");
  EXPECT_EQ(seen.back(), "c24");
}

TEST(CounterSnapshot, ListsOnlyNamesWithThePrefix) {
  const CounterSnapshot s = CounterSnapshot::FromMap(
      {{"ad/1", 1}, {"ad/2", 2}, {"ad/3", 3}, {"ab", 0}, {"ae", 0}, {"b", 0}});
  EXPECT_EQ(Names(s.List("ad/", 100, std::nullopt)),
            (std::vector<std::string>{"ad/1", "ad/2", "ad/3"}));
  const CounterPage first = s.List("ad/", 2, std::nullopt);
  EXPECT_EQ(Names(first), (std::vector<std::string>{"ad/1", "ad/2"}));
  ASSERT_EQ(first.next, "ad/2");
  const CounterPage second = s.List("ad/", 2, first.next);
  EXPECT_EQ(Names(second), (std::vector<std::string>{"ad/3"}));
  EXPECT_EQ(second.next, std::nullopt);
  EXPECT_TRUE(s.List("zz", 10, std::nullopt).counters.empty());
  // `after` before the prefix starts at the prefix; after its end gives nothing.
  EXPECT_EQ(Names(s.List("ad/", 1, std::string_view("a"))), (std::vector<std::string>{"ad/1"}));
  EXPECT_TRUE(s.List("ad/", 10, std::string_view("ad/9")).counters.empty());
}

}  // namespace
}  // namespace oncecount::shard
