#include "processor/shard/counter_snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>

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

// The sort compares the eight bytes after the prefix every name shares first: names
// that end inside those bytes, zero bytes where a shorter name ends, bytes above 0x7f
// and names the prefix is all of must still come out in byte order.
TEST(CounterSnapshot, SortsNamesSharingALongPrefixInByteOrder) {
  const std::string p = "campaign-0001/";
  std::vector<std::string> names = {p + "b",
                                    p,
                                    p + "a",
                                    p + std::string("a\0", 2),
                                    p + std::string("a\0\0", 3),
                                    p + "\xff",
                                    p + "\x7f",
                                    p + "abcdefgh",
                                    p + "abcdefgh0",
                                    p + "abcdefgg~~~~",
                                    p + "abcdefghi",
                                    p + "abcdefgh" + std::string(1, '\0'),
                                    "campaign-0001",
                                    "campaign-0002/a"};
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(names.begin(), names.end(), rng);
    std::vector<CounterRef> refs;
    for (size_t i = 0; i < names.size(); ++i) refs.push_back({names[i], static_cast<int64_t>(i)});
    std::vector<std::string> expected = names;
    std::sort(expected.begin(), expected.end());
    std::vector<std::string> got;
    for (const CounterValue& c : CounterSnapshot::From(refs).counters()) got.push_back(c.name);
    EXPECT_EQ(got, expected);
    got.clear();
    for (const CounterValue& c : CounterSnapshot().With(refs).counters()) got.push_back(c.name);
    EXPECT_EQ(got, expected);
  }
}

TEST(CounterSnapshot, KeepsTheLastValueOfANameAnUpdateGivesMoreThanOnce) {
  std::vector<CounterRef> updates;
  for (int64_t i = 0; i < 100; ++i) updates.push_back({i % 2 == 0 ? "clicks/x" : "clicks/y", i});
  const CounterSnapshot s = CounterSnapshot::FromMap({{"clicks/x", -1}}).With(updates);
  EXPECT_EQ(s.Find("clicks/x"), 98);
  EXPECT_EQ(s.Find("clicks/y"), 99);
  EXPECT_EQ(s.size(), 2u);
}

TEST(CounterSnapshot, SumsShardsPerNameWhenFindingAndListing) {
  const std::vector<CountersPtr> shards{Shard({{"likes", 3}, {"clicks", 1}}), Shard({{"likes", 4}}),
                                        nullptr, Shard({{"views", -2}, {"clicks", 10}})};
  EXPECT_EQ(CounterSnapshot::ListSum(shards, "", 10, std::nullopt).counters,
            (std::vector<CounterValue>{{"clicks", 11}, {"likes", 7}, {"views", -2}}));
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "likes"), 7);
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "views"), -2);
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "shares"), std::nullopt);
  EXPECT_EQ(CounterSnapshot::DistinctNames(shards), 3u);
}

TEST(CounterSnapshot, CapsASumThatWouldLeaveInt64AndSaysSo) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const std::vector<CountersPtr> shards{Shard({{"up", kMax}, {"down", kMin}, {"fits", kMax}}),
                                        Shard({{"up", 5}, {"down", -5}, {"fits", 5}}),
                                        Shard({{"fits", -10}})};
  bool saturated = false;
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "up", &saturated), kMax);
  EXPECT_TRUE(saturated);
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "down", &saturated), kMin);
  EXPECT_TRUE(saturated);
  // Regression: parts were added in turn, capped on the way: kMax + 5 - 10 gave
  // kMax - 10, though the sum, kMax - 5, fits.
  EXPECT_EQ(CounterSnapshot::FindSum(shards, "fits", &saturated), kMax - 5);
  EXPECT_FALSE(saturated);
  EXPECT_EQ(CounterSnapshot::ListSum(shards, "", 10, std::nullopt).counters,
            (std::vector<CounterValue>{
                {"down", kMin, true}, {"fits", kMax - 5, false}, {"up", kMax, true}}));
}

// Names "c000000".."c<n-1>", in order, with value i.
std::unordered_map<std::string, int64_t> Numbered(int n, int step = 1) {
  std::unordered_map<std::string, int64_t> live;
  for (int i = 0; i < n; i += step) {
    char name[16];
    std::snprintf(name, sizeof name, "c%06d", i);
    live[name] = i;
  }
  return live;
}

TEST(CounterSnapshot, AppliesUpdatesAndNewNamesAndEqualsASnapshotBuiltFromScratch) {
  // Every other name, so that new names fall inside chunks, before and after.
  std::unordered_map<std::string, int64_t> live = Numbered(5000, 2);
  const CounterSnapshot before = CounterSnapshot::FromMap(live);
  std::vector<CounterValue> updates;
  std::mt19937 rng(3);
  for (int k = 0; k < 700; ++k) {
    const int i = std::uniform_int_distribution<int>(0, 5100)(rng);
    char name[16];
    std::snprintf(name, sizeof name, "c%06d", i);
    updates.push_back({name, -k});
    live[name] = -k;  // a name given twice keeps its last value
  }
  updates.push_back({"a-first", 1});
  updates.push_back({"z-last", 2});
  live["a-first"] = 1;
  live["z-last"] = 2;
  std::vector<CounterRef> refs;
  for (const CounterValue& u : updates) refs.push_back({u.name, u.value});
  const CounterSnapshot after = before.With(refs);
  EXPECT_EQ(after.counters(), CounterSnapshot::FromMap(live).counters());
  EXPECT_EQ(after.size(), live.size());
  EXPECT_EQ(after.Find("c000004"), live["c000004"]);
  EXPECT_EQ(before.Find("a-first"), std::nullopt) << "the old snapshot is untouched";
  EXPECT_EQ(before.size(), 2500u);
}

TEST(CounterSnapshot, PutsASmallUpdateInTheRecentRunAndSharesTheWholeBase) {
  const CounterSnapshot before = CounterSnapshot::FromMap(Numbered(100'000));
  const CounterSnapshot after = before.With({{"c050000", -1}, {"c050000-new", 7}});
  EXPECT_EQ(after.Find("c050000"), -1);
  EXPECT_EQ(after.Find("c050000-new"), 7);
  EXPECT_EQ(before.Find("c050000"), 50000);
  EXPECT_EQ(after.size(), before.size() + 1);
  EXPECT_EQ(CounterSnapshot::SharedChunks(before, after), CounterSnapshot::ChunkCount(before))
      << "no chunk copied";
  EXPECT_EQ(CounterSnapshot::RecentNames(after), 2u);
}

TEST(CounterSnapshot, FoldsALargeRecentRunCopyingOnlyTheChunksItTouches) {
  const CounterSnapshot before = CounterSnapshot::FromMap(Numbered(100'000));
  // More names than a run may hold (100,000 / kFoldFraction), all between two
  // neighbours of the base: they fall in one chunk.
  std::vector<std::string> names;
  for (int i = 0; i < 13'000; ++i) names.push_back("c050000-" + std::to_string(100'000 + i));
  std::vector<CounterRef> updates;
  for (const std::string& name : names) updates.push_back({name, 1});
  updates.push_back({"c050001", -1});
  const CounterSnapshot after = before.With(updates);
  EXPECT_EQ(CounterSnapshot::RecentNames(after), 0u) << "folded";
  EXPECT_EQ(CounterSnapshot::SharedChunks(before, after), CounterSnapshot::ChunkCount(before) - 1)
      << "one chunk copied (and split), every other shared";
  EXPECT_EQ(after.size(), 113'000u);
  EXPECT_EQ(after.Find("c050000-100042"), 1);
  EXPECT_EQ(after.Find("c050001"), -1);
  EXPECT_EQ(after.Find("c099999"), 99'999);
}

// Commits of a few updates each (changed and new names, some twice), folded now and
// then: after every one, the snapshot made from the previous one equals a snapshot
// made from scratch, name by name, page by page and by lookup.
TEST(CounterSnapshot, ChainsOfSmallUpdatesEqualASnapshotBuiltFromScratch) {
  std::unordered_map<std::string, int64_t> live = Numbered(3000, 3);
  CounterSnapshot s = CounterSnapshot::FromMap(live);
  std::mt19937 rng(11);
  size_t folds = 0;
  for (int commit = 0; commit < 300; ++commit) {
    std::vector<std::string> names;
    for (int k = 0; k < 40; ++k) {
      char name[16];
      std::snprintf(name, sizeof name, "c%06d", std::uniform_int_distribution<int>(0, 4000)(rng));
      names.push_back(name);
    }
    std::vector<CounterRef> updates;
    for (size_t k = 0; k < names.size(); ++k) {
      const int64_t value = commit * 100 + static_cast<int64_t>(k);
      updates.push_back({names[k], value});
      live[names[k]] = value;
    }
    const CounterSnapshot before = s;
    s = s.With(updates);
    if (CounterSnapshot::SharedChunks(before, s) < CounterSnapshot::ChunkCount(before)) ++folds;
    const CounterSnapshot scratch = CounterSnapshot::FromMap(live);
    ASSERT_EQ(s.counters(), scratch.counters()) << "commit " << commit;
    ASSERT_EQ(s.size(), live.size()) << "commit " << commit;
    ASSERT_EQ(s.Find(names[0]), live[names[0]]);
    ASSERT_EQ(s.Find("c004001"), std::nullopt);
    ASSERT_EQ(s.List("c001", 7, std::string_view("c0015")).counters,
              scratch.List("c001", 7, std::string_view("c0015")).counters);
  }
  EXPECT_GE(folds, 3u) << "the chain folded its runs into the base several times";
}

std::vector<CounterValue> Values(const std::map<std::string, int64_t>& model) {
  std::vector<CounterValue> values;
  for (const auto& [name, value] : model) values.push_back({name, value});
  return values;
}

std::string NameOf(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "c%06d", i);
  return name;
}

// The point of the levels: once a large run has built up, small commits neither copy
// it nor merge into it; they cost about what they changed.
TEST(CounterSnapshot, ACommitCopiesInProportionToWhatItChangedNotToTheRecentRuns) {
  constexpr int kBase = 200'000;
  constexpr size_t kRun = 20'000;  // under kBase / kFoldFraction: no fold
  CounterSnapshot s = CounterSnapshot::FromMap(Numbered(kBase));
  std::vector<std::string> names;
  for (size_t i = 0; i < kRun; ++i) names.push_back(NameOf(static_cast<int>(i * 10)));
  std::vector<CounterRef> large;
  for (const std::string& name : names) large.push_back({name, -1});
  s = s.With(large, 0);
  ASSERT_EQ(CounterSnapshot::RunSizes(s), std::vector<size_t>{kRun});

  constexpr size_t kCommit = 10;
  constexpr int kCommits = 200;
  std::mt19937 rng(5);
  size_t copied = 0;
  size_t most_levels = 0;
  for (int commit = 0; commit < kCommits; ++commit) {
    std::vector<CounterRef> updates;
    for (size_t k = 0; k < kCommit; ++k) {
      updates.push_back({names[rng() % names.size()], commit});
    }
    const CounterSnapshot before = s;
    s = s.With(updates, 0);
    const std::vector<size_t> runs = CounterSnapshot::RunSizes(s);
    ASSERT_EQ(runs.back(), kRun) << "commit " << commit << ": the large run is untouched";
    ASSERT_EQ(CounterSnapshot::SharedRuns(before, s), runs.size() - 1)
        << "commit " << commit << ": only the newest run is new";
    ASSERT_EQ(CounterSnapshot::SharedChunks(before, s), CounterSnapshot::ChunkCount(before));
    ASSERT_EQ(s.Find(std::string(updates.back().name)), commit);
    copied += CounterSnapshot::CopiedByWith(s);
    most_levels = std::max(most_levels, runs.size());
  }
  // Each name a commit changes is copied about kGrowth + 1 times per level it goes
  // down (the levels above the large run hold at most kCommits x kCommit names).
  const size_t bound = kCommits * kCommit * (CounterSnapshot::kGrowth + 1) * most_levels;
  EXPECT_LE(copied, bound);
  EXPECT_LT(copied, kRun) << "200 commits copied less than the large run once";
  EXPECT_LE(most_levels, 6u);
}

// Whatever the commits' sizes, each run holds at most 1/kGrowth of the next.
TEST(CounterSnapshot, KeepsEachRunAFractionOfTheNext) {
  CounterSnapshot s = CounterSnapshot::FromMap(Numbered(400'000, 4));
  std::mt19937 rng(9);
  for (int commit = 0; commit < 300; ++commit) {
    const size_t k = size_t{1} << (rng() % 11);  // 1 .. 1024 names
    std::vector<std::string> names;
    for (size_t i = 0; i < k; ++i) names.push_back(NameOf(static_cast<int>(rng() % 400'000)));
    std::vector<CounterRef> updates;
    for (const std::string& name : names) updates.push_back({name, 1});
    s = s.With(updates);
    const std::vector<size_t> runs = CounterSnapshot::RunSizes(s);
    for (size_t i = 0; i + 1 < runs.size(); ++i) {
      ASSERT_LE(runs[i] * CounterSnapshot::kGrowth, runs[i + 1]) << "commit " << commit;
    }
  }
}

TEST(CounterSnapshot, BuildsFromNamesInOrderAsFromWouldAndRefusesNamesOutOfOrder) {
  const std::unordered_map<std::string, int64_t> live = Numbered(1000);
  const CounterSnapshot scratch = CounterSnapshot::FromMap(live);
  const std::vector<CounterValue> sorted = scratch.counters();  // must outlive Finish
  CounterSnapshot::SortedBuilder builder;
  for (const CounterValue& c : sorted) ASSERT_TRUE(builder.Add(c.name, c.value));
  const CounterSnapshot built = std::move(builder).Finish();
  EXPECT_EQ(built.counters(), scratch.counters());
  EXPECT_EQ(built.size(), 1000u);
  EXPECT_EQ(built.Find("c000513"), 513);
  EXPECT_EQ(CounterSnapshot::ChunkCount(built), 1000 / CounterSnapshot::kChunk + 1);

  CounterSnapshot::SortedBuilder unsorted;
  EXPECT_TRUE(unsorted.Add("b", 1));
  EXPECT_FALSE(unsorted.Add("a", 2));
  EXPECT_FALSE(unsorted.Add("b", 3)) << "a name repeated";
  EXPECT_TRUE(unsorted.Add("c", 4));
  EXPECT_EQ(std::move(unsorted).Finish().counters(),
            (std::vector<CounterValue>{{"b", 1}, {"c", 4}}));
  std::vector<std::string> names;  // they must outlive the builder's Finish
  for (int i = 1; i <= static_cast<int>(CounterSnapshot::kChunk); ++i) names.push_back(NameOf(i));
  CounterSnapshot::SortedBuilder across_chunks;
  for (const std::string& name : names) ASSERT_TRUE(across_chunks.Add(name, 1));
  EXPECT_FALSE(across_chunks.Add("c000000", 0)) << "before the last chunk's last name";
}

// The model: a std::map per shard. Commits of random sizes (1 to a few thousand
// names, some new, some repeated within a commit) go to random shards, folds
// included; after each, lookups, pages with prefixes and `after`, sums across shards
// and the distinct names agree with the maps.
TEST(CounterSnapshot, AgreesWithAMapOverManyCommitsOfRandomSizes) {
  constexpr int kShards = 3;
  constexpr int kNames = 30'000;
  const std::vector<std::string> prefixes{"", "a", "a/", "a/1", "b/", "b/2", "c", "zz"};
  std::mt19937 rng(17);
  const auto random_name = [&] {
    const int i = static_cast<int>(rng() % kNames);
    return std::string(i % 3 == 0 ? "a/" : i % 3 == 1 ? "b/" : "c/") + std::to_string(i);
  };
  std::vector<std::map<std::string, int64_t>> models(kShards);
  std::vector<CountersPtr> shards;
  for (int shard = 0; shard < kShards; ++shard) {
    std::unordered_map<std::string, int64_t> live;
    for (int i = 0; i < shard * 4000; ++i) live[random_name()] = i;  // shard 0 starts empty
    models[shard].insert(live.begin(), live.end());
    shards.push_back(std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(live)));
  }
  size_t most_levels = 0;
  size_t folds = 0;
  for (int commit = 0; commit < 400; ++commit) {
    const size_t shard = rng() % kShards;
    std::map<std::string, int64_t>& model = models[shard];
    const size_t k = 1 + rng() % (rng() % 8 == 0 ? 4000 : 60);
    std::vector<std::string> names;
    for (size_t i = 0; i < k; ++i) names.push_back(random_name());
    std::vector<CounterRef> updates;
    size_t new_names = 0;
    std::set<std::string> seen;
    for (size_t i = 0; i < names.size(); ++i) {
      const int64_t value = static_cast<int64_t>(rng() % 1000) - 500;
      updates.push_back({names[i], value});
      if (seen.insert(names[i]).second && !model.contains(names[i])) ++new_names;
    }
    for (const CounterRef& u : updates) model[std::string(u.name)] = u.value;
    const CountersPtr previous = shards[shard];
    const CounterSnapshot& before_view = *previous;
    shards[shard] = std::make_shared<const CounterSnapshot>(
        commit % 2 == 0 ? before_view.With(updates) : before_view.With(updates, new_names));
    const CounterSnapshot& s = *shards[shard];
    most_levels = std::max(most_levels, CounterSnapshot::RunSizes(s).size());
    if (CounterSnapshot::SharedChunks(before_view, s) < CounterSnapshot::ChunkCount(before_view) ||
        CounterSnapshot::ChunkCount(s) > CounterSnapshot::ChunkCount(before_view)) {
      ++folds;
    }
    ASSERT_EQ(s.size(), model.size()) << "commit " << commit;
    for (int probe = 0; probe < 20; ++probe) {
      const std::string name = random_name();
      const auto it = model.find(name);
      ASSERT_EQ(s.Find(name), it == model.end() ? std::nullopt : std::optional(it->second))
          << "commit " << commit << ", " << name;
    }
    if (commit % 20 != 19) continue;
    ASSERT_EQ(s.counters(), Values(model));
    std::map<std::string, int64_t> summed;
    for (const auto& m : models) {
      for (const auto& [name, value] : m) summed[name] += value;
    }
    ASSERT_EQ(CounterSnapshot::DistinctNames(shards), summed.size()) << "commit " << commit;
    const std::string some = random_name();
    ASSERT_EQ(CounterSnapshot::FindSum(shards, some),
              summed.contains(some) ? std::optional(summed[some]) : std::nullopt);
    for (int page = 0; page < 10; ++page) {
      const std::string& prefix = prefixes[rng() % prefixes.size()];
      const size_t limit = 1 + rng() % 300;
      std::optional<std::string> after;
      if (rng() % 2 == 0) after = prefix + std::to_string(rng() % 100);
      std::vector<CounterValue> expected;
      auto it = after ? summed.upper_bound(*after) : summed.lower_bound(prefix);
      for (; it != summed.end() && expected.size() <= limit; ++it) {
        if (it->first.compare(0, prefix.size(), prefix) == 0) {
          expected.push_back({it->first, it->second});
        } else if (it->first > prefix) {
          break;
        }
      }
      const bool more = expected.size() > limit;
      if (more) expected.pop_back();
      const std::optional<std::string_view> from =
          after ? std::optional<std::string_view>(*after) : std::nullopt;
      const CounterPage got = CounterSnapshot::ListSum(shards, prefix, limit, from);
      ASSERT_EQ(got.counters, expected) << "commit " << commit << ", prefix " << prefix;
      ASSERT_EQ(got.next.has_value(), more);
      std::vector<CounterValue> alone;
      for (auto m = model.lower_bound(prefix); m != model.end() && alone.size() < limit; ++m) {
        if (m->first.compare(0, prefix.size(), prefix) != 0) break;
        if (!after || m->first > *after) alone.push_back({m->first, m->second});
      }
      ASSERT_EQ(s.List(prefix, limit, from).counters, alone) << "commit " << commit;
    }
  }
  EXPECT_GE(most_levels, 3u) << "the commits built several levels";
  EXPECT_GE(folds, 2u) << "and folded them into the base";
}

TEST(CounterSnapshot, CountsTheDistinctNamesOfManyShardsAsASetWould) {
  std::set<std::string> all;
  std::vector<CountersPtr> shards{nullptr, Shard({})};
  for (int step : {2, 3, 5, 7}) {
    const auto live = Numbered(3000, step);
    for (const auto& [name, value] : live) all.insert(name);
    shards.push_back(Shard(live));
  }
  // One shard with a recent run: names changed and added since its base.
  CounterSnapshot recent = CounterSnapshot::FromMap(Numbered(3000, 11));
  for (const auto& [name, value] : Numbered(3000, 11)) all.insert(name);
  recent = recent.With({{"c000011", 5}, {"c000012-new", 1}, {"zz-last", 1}});
  all.insert({"c000012-new", "zz-last"});
  ASSERT_GT(CounterSnapshot::RecentNames(recent), 0u);
  shards.push_back(std::make_shared<const CounterSnapshot>(recent));
  EXPECT_EQ(CounterSnapshot::DistinctNames(shards), all.size());
}

TEST(CounterSnapshot, ListsAcrossShardsPageByPageWithoutMissingOrRepeatingANAme) {
  const std::vector<CountersPtr> shards{Shard(Numbered(3000, 2)), Shard(Numbered(3000, 3)),
                                        Shard(Numbered(3000, 5))};
  std::vector<CounterValue> seen;
  std::optional<std::string> after;
  for (int pages = 0; pages < 100; ++pages) {
    const CounterPage page = CounterSnapshot::ListSum(shards, "c00", 97, after);
    seen.insert(seen.end(), page.counters.begin(), page.counters.end());
    after = page.next;
    if (!after) break;
  }
  EXPECT_FALSE(after.has_value());
  std::map<std::string, int64_t> expected;
  for (int step : {2, 3, 5}) {
    for (const auto& [name, value] : Numbered(3000, step)) {
      if (name.rfind("c00", 0) == 0) expected[name] += value;
    }
  }
  ASSERT_EQ(seen.size(), expected.size());
  size_t i = 0;
  for (const auto& [name, value] : expected) {
    ASSERT_EQ(seen[i].name, name);
    ASSERT_EQ(seen[i].value, value);
    ++i;
  }
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
