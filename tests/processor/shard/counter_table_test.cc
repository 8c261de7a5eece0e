#include "processor/shard/counter_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>

namespace oncecount::shard {
namespace {

TEST(CounterTable, FindsEveryNameItInsertedAndNoOther) {
  CounterTable t;
  EXPECT_EQ(t.Find("a"), std::nullopt) << "an empty table";
  const auto [a, a_inserted] = t.FindOrInsert("a");
  const auto [b, b_inserted] = t.FindOrInsert("b");
  EXPECT_TRUE(a_inserted);
  EXPECT_TRUE(b_inserted);
  const auto [again, again_inserted] = t.FindOrInsert("a");
  EXPECT_FALSE(again_inserted);
  EXPECT_EQ(again, a);
  EXPECT_EQ(t.Find("b"), b);
  EXPECT_EQ(t.Find(""), std::nullopt);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t[a].value, 0) << "inserted at zero";
}

TEST(CounterTable, KeepsEntryNumbersAndValuesWhileItGrows) {
  CounterTable t;
  std::map<std::string, CounterTable::Index> numbers;
  for (int i = 0; i < 100'000; ++i) {
    const std::string name = "campaign-" + std::to_string(i) + "/creative";
    const auto [index, inserted] = t.FindOrInsert(std::string(name));
    ASSERT_TRUE(inserted);
    t[index].value = i;
    numbers[name] = index;
  }
  ASSERT_EQ(t.size(), 100'000u);
  for (const auto& [name, index] : numbers) {
    ASSERT_EQ(t.Find(name), index);
    ASSERT_EQ(t[index].name, name);
  }
  EXPECT_EQ(t.at("campaign-4242/creative"), 4242);
  EXPECT_EQ(t.Find("campaign-100000/creative"), std::nullopt);
}

TEST(CounterTable, AssignsInsertingOnlyMissingNames) {
  CounterTable t;
  const auto [x, inserted] = t.Assign("x", 5);
  EXPECT_TRUE(inserted);
  const auto [same, again] = t.Assign("x", -3);
  EXPECT_FALSE(again);
  EXPECT_EQ(same, x);
  EXPECT_EQ(t.at("x"), -3);
  EXPECT_THROW(t.at("y"), std::out_of_range);
}

TEST(CounterTable, ListsEntriesInInsertionOrder) {
  CounterTable t;
  for (const char* name : {"zeta", "alpha", "mid"}) t.FindOrInsert(name);
  std::vector<std::string> order;
  for (const CounterTable::Entry& e : t) order.push_back(e.name);
  EXPECT_EQ(order, (std::vector<std::string>{"zeta", "alpha", "mid"}));
}

TEST(CounterTable, EqualsATableWithTheSameValuesInAnotherOrder) {
  CounterTable a, b;
  a.Assign("p", 1);
  a.Assign("q", 2);
  b.Assign("q", 2);
  b.Assign("p", 1);
  EXPECT_EQ(a, b);
  b.Assign("p", 7);
  EXPECT_NE(a, b);
  b.Assign("p", 1);
  b.Assign("r", 0);
  EXPECT_NE(a, b) << "one more name";
}

TEST(CounterTable, ClearsEveryMark) {
  CounterTable t;
  t[t.FindOrInsert("a").first].mark = 3;
  t[t.FindOrInsert("b").first].mark = 9;
  t.ClearMarks();
  for (const CounterTable::Entry& e : t) EXPECT_EQ(e.mark, 0u) << e.name;
}

TEST(CounterTable, ReservingKeepsWhatItHolds) {
  CounterTable t;
  t.Assign("kept", 11);
  t.reserve(50'000);
  EXPECT_EQ(t.at("kept"), 11);
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) t.Assign(std::to_string(rng()), i);
  EXPECT_EQ(t.at("kept"), 11);
}

TEST(CounterTable, ALookupWithAHashTakenAheadAndPrefetchedFindsWhatAPlainOneFinds) {
  CounterTable ahead;
  CounterTable plain;
  ahead.PrefetchSlot(CounterTable::Hash("before any slot exists"));  // a hint: no effect
  ahead.PrefetchEntry(CounterTable::Hash("before any slot exists"));
  std::mt19937 rng(9);
  for (int i = 0; i < 5000; ++i) {
    std::string name = "counter-" + std::to_string(rng() % 3000);
    const uint64_t hash = CounterTable::Hash(name);
    ahead.PrefetchSlot(hash);
    ahead.PrefetchEntry(hash);
    const auto [a, a_inserted] = ahead.FindOrInsert(std::string(name), hash);
    const auto [p, p_inserted] = plain.FindOrInsert(std::move(name));
    ASSERT_EQ(a, p);
    ASSERT_EQ(a_inserted, p_inserted);
    ++ahead[a].value;
    ++plain[p].value;
  }
  EXPECT_GT(ahead.size(), 2000u);
  EXPECT_TRUE(ahead == plain);
}

}  // namespace
}  // namespace oncecount::shard
