#include "processor/filter/exact_window_dedup.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xE8AC7)};
}

ExactWindowDedup Make(Millis window, uint64_t expected_ids, Millis start = Millis{0}) {
  auto created = ExactWindowDedup::Create(window, expected_ids, start);
  if (!created.ok()) ADD_FAILURE() << created.error();
  return std::move(created).value();
}

// An id inserted at t is a duplicate at every time in [t, t + window] and forgotten
// after: checked for every id against every millisecond of a sweep.
TEST(ExactWindowDedup, TreatsExactlyTheIdsInsideTheWindowAsDuplicates) {
  const Millis window{100};
  ExactWindowDedup f = Make(window, 10);
  for (int64_t now = 0; now < 500; ++now) {
    f.AdvanceTo(Millis{now});
    if (now < 300) {
      ASSERT_EQ(f.TestAndInsert(Id(static_cast<uint64_t>(now))), Verdict::kNew);
    }
    for (int64_t t = 0; t <= std::min<int64_t>(now, 299); ++t) {
      const bool inside = now - t <= window.count();
      ASSERT_EQ(f.Contains(Id(static_cast<uint64_t>(t))), inside)
          << "id inserted at " << t << " ms, now " << now << " ms";
    }
    const int64_t oldest_kept = std::max<int64_t>(0, now - window.count());
    const int64_t newest = std::min<int64_t>(now, 299);
    ASSERT_EQ(f.size(), static_cast<size_t>(std::max<int64_t>(0, newest - oldest_kept + 1)))
        << "now " << now;
  }
}

TEST(ExactWindowDedup, ReportsRetriesInsideTheWindowAndAcceptsThemAgainAfterIt) {
  ExactWindowDedup f = Make(Millis{1000}, 10, Millis{5000});
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(Millis{5999});
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kDuplicate);
  f.AdvanceTo(Millis{6000});  // exactly the window
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kDuplicate);
  f.AdvanceTo(Millis{6001});  // a duplicate does not renew the id's time
  EXPECT_FALSE(f.Contains(Id(1)));
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(Millis{7001});
  EXPECT_TRUE(f.Contains(Id(1)));
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.mode, DedupMode::kExact);
  EXPECT_EQ(s.inserted, 2u);
  EXPECT_EQ(s.duplicates, 2u);
  EXPECT_EQ(s.near_edge_duplicates, 0u);
  EXPECT_EQ(s.window_ms_guaranteed, 1000);
  EXPECT_GT(s.bits_total, 0u);
}

TEST(ExactWindowDedup, IgnoresAClockThatGoesBackwards) {
  ExactWindowDedup f = Make(Millis{10}, 10, Millis{100});
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(Millis{105});
  f.AdvanceTo(Millis{0});
  f.AdvanceTo(Millis{110});
  EXPECT_TRUE(f.Contains(Id(1)));
  f.AdvanceTo(Millis{111});
  EXPECT_FALSE(f.Contains(Id(1)));
}

TEST(ExactWindowDedup, GrowsPastItsExpectedSizeWithoutLosingIds) {
  ExactWindowDedup f = Make(Millis{1'000'000}, 1);
  for (uint64_t i = 0; i < 20000; ++i) ASSERT_EQ(f.TestAndInsert(Id(i)), Verdict::kNew);
  EXPECT_EQ(f.size(), 20000u);
  for (uint64_t i = 0; i < 20000; ++i) ASSERT_TRUE(f.Contains(Id(i))) << i;
  for (uint64_t i = 20000; i < 40000; ++i) ASSERT_FALSE(f.Contains(Id(i))) << i;
  // Load factor at most 1/2.
  EXPECT_GE(f.Summary().bits_total, 2 * 20000u * 64);
}

// Keys whose home slots fall in a few adjacent slots (wrapping round the end of the
// table) make long probe runs, so that every deletion has to shift members back.
class ClusteredKeys {
 public:
  explicit ClusteredKeys(uint64_t seed) : rng_(seed) {
    // The inverse of the multiplier of the slot hash, by Newton's iteration mod 2^64.
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
    inverse_ = kMul;
    for (int i = 0; i < 6; ++i) inverse_ *= 2 - kMul * inverse_;
  }

  // A key whose product with the multiplier has its top 10 bits in {1020..1023, 0..3}:
  // home slot 1020..3 of a 1024-slot table (and the matching region of larger ones).
  IdHash Next() {
    const uint64_t top = (1020 + rng_() % 8) % 1024;
    uint64_t product = (top << 54) | (rng_() >> 10);
    if (product == 0) product = 1;
    return IdHash{product * inverse_};
  }

 private:
  std::mt19937_64 rng_;
  uint64_t inverse_ = 0;
};

// Against a model (std::unordered_map of live ids and their insert times), under heavy
// churn: random clock steps, fresh ids, retries of live and of expired ids.
TEST(ExactWindowDedup, KeepsEveryRemainingIdFindableUnderHeavyChurn) {
  struct Phase {
    int64_t window;
    int max_batch;
    int clustered_percent;  // the rest are ordinary random ids
  };
  // The first phase keeps one long run of clustered ids; the second also makes the
  // table grow (more than 512 live ids) while ids keep expiring.
  for (const Phase& p : {Phase{40, 9, 100}, Phase{400, 12, 25}}) {
    SCOPED_TRACE("window " + std::to_string(p.window) + " ms");
    ClusteredKeys keys(p.window);
    std::mt19937_64 rng(p.window * 3);
    ExactWindowDedup f = Make(Millis{p.window}, 0);
    std::unordered_map<uint64_t, int64_t> live;  // key -> insert time
    std::deque<std::pair<uint64_t, int64_t>> order;
    std::vector<IdHash> seen;  // every id ever offered, live or expired
    int64_t now = 0;
    uint64_t expired_checks = 0;
    size_t most_live = 0;
    for (int step = 0; step < 3000; ++step) {
      now += static_cast<int64_t>(rng() % 6);
      f.AdvanceTo(Millis{now});
      while (!order.empty() && order.front().second < now - p.window) {
        live.erase(order.front().first);
        order.pop_front();
      }
      const int batch = static_cast<int>(rng() % static_cast<uint64_t>(p.max_batch + 1));
      for (int i = 0; i < batch; ++i) {
        IdHash id;
        if (seen.empty() || rng() % 3 != 0) {
          id =
              static_cast<int>(rng() % 100) < p.clustered_percent ? keys.Next() : IdHash{rng() | 1};
          seen.push_back(id);
        } else {
          id = seen[rng() % seen.size()];  // a retry, live or long expired
        }
        const bool is_live = live.count(id.value) != 0;
        ASSERT_EQ(f.TestAndInsert(id), is_live ? Verdict::kDuplicate : Verdict::kNew);
        if (!is_live) {
          live.emplace(id.value, now);
          order.emplace_back(id.value, now);
        }
      }
      ASSERT_EQ(f.size(), live.size()) << "step " << step;
      most_live = std::max(most_live, live.size());
      if (step % 4 == 0) {
        for (const auto& [key, at] : live) {
          ASSERT_TRUE(f.Contains(IdHash{key})) << "live id lost at step " << step;
        }
      }
      for (int i = 0; i < 4; ++i) {
        const IdHash id = seen[rng() % seen.size()];
        ASSERT_EQ(f.Contains(id), live.count(id.value) != 0) << "step " << step;
        expired_checks += live.count(id.value) == 0;
      }
    }
    EXPECT_GT(expired_checks, 1000u);
    if (p.window == 400) {
      EXPECT_GT(most_live, 512u);  // the table had to grow
    }
  }
}

TEST(ExactWindowDedup, RejectsANonPositiveWindowNamingTheWindow) {
  for (int64_t w : {0, -1, -60000}) {
    auto created = ExactWindowDedup::Create(Millis{w}, 100, Millis{0});
    ASSERT_FALSE(created.ok()) << w;
    EXPECT_NE(created.message().find("window"), std::string::npos) << created.error();
  }
}

}  // namespace
}  // namespace oncecount::filter
