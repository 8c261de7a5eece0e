#include "processor/filter/bloom/forgetful_bloom_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "processor/filter/bloom/adaptive_policy.h"
#include "processor/filter/bloom/membership_check.h"
#include "processor/filter/bloom/sizing.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {
namespace {

// Distinct n give distinct ids: SeededMix is a bijection of its input for a fixed seed.
IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xF0F0)};
}

uint32_t NonPast(MembershipCheck check) {
  return check == MembershipCheck::kPairs ? 3 : 2;
}

ForgetfulBloomFilter MakeFbf(const FbfConfig& config, Millis start = Millis{0}) {
  auto created = ForgetfulBloomFilter::Create(config, start);
  if (!created.ok()) ADD_FAILURE() << created.error();
  return std::move(created).value();
}

// ---------------------------------------------------------------------------------
// A random workload with a memory: rates change every simulated second, in phases of
// idle stretches, low and steady load and bursts, with clock jumps of a few refresh
// periods, of more than the window and of more than 4096 refresh periods (the
// fast-forward path). Every id that TestAndInsert accepted (kNew) is re-checked with
// Contains at a random age in [0, window] and at exactly window(), the last moment
// the FBF must still know it. The first id not found stops the run (fatal failure).

struct Schedule {
  int seconds = 60;
  int low_rate = 40;         // ids per second, upper bound of a low second
  int steady_rate = 300;     // upper bound of a steady second
  int burst_rate = 3000;     // upper bound of a burst second
  int max_idle_run = 12;     // longest idle stretch of the random phases, in seconds
  int jump_percent = 6;      // chance that a phase is a clock jump (besides 3 forced ones)
  int failover_percent = 4;  // chance that a phase is a standby taking over (decoded state)
  // Every `long_idle_every` seconds of load, a long idle stretch of
  // [long_idle_min, long_idle_max] seconds (0: none): lets adaptation scale down.
  int long_idle_every = 0;
  int long_idle_min = 20;
  int long_idle_max = 40;
};

struct DriveReport {
  uint64_t offered = 0;
  uint64_t accepted = 0;
  uint64_t checks = 0;
  uint64_t checks_at_window_end = 0;
  uint64_t jumps = 0;
  uint64_t huge_jumps = 0;  // > 4096 refresh periods
  uint64_t failovers = 0;
  uint64_t scale_ups = 0;
  uint64_t scale_downs = 0;
  uint32_t most_filters = 0;
  Millis shortest_refresh = Millis::max();
  Millis longest_refresh{0};
};

class WindowDriver {
 public:
  WindowDriver(ForgetfulBloomFilter& f, uint64_t seed)
      : f_(f), rng_(seed), window_(f.window()), now_(f.now()) {
    last_target_ = f.target_filters();
    last_refresh_ = f.refresh_period();
  }

  // Runs the schedule; returns early on the first fatal failure.
  void Run(const Schedule& s) {
    int second = 0;
    int forced_jumps = 0;
    int since_long_idle = 0;
    while (second < s.seconds) {
      // Three forced jumps, one of each size, at 1/4, 1/2 and 3/4 of the run.
      if (forced_jumps < 3 && second >= (forced_jumps + 1) * s.seconds / 4) {
        Jump(forced_jumps++);
        if (::testing::Test::HasFatalFailure()) return;
        continue;
      }
      if (s.long_idle_every > 0 && since_long_idle >= s.long_idle_every) {
        // Not counted in s.seconds: the load phases keep their share of the run.
        RunSeconds(Uniform(s.long_idle_min, s.long_idle_max) + TurnoverSeconds(), 0, 0);
        if (::testing::Test::HasFatalFailure()) return;
        since_long_idle = 0;
        continue;
      }
      const int kind = Uniform(0, 99);
      if (kind < s.jump_percent) {
        Jump(Uniform(0, 2));
        if (::testing::Test::HasFatalFailure()) return;
        continue;
      }
      if (kind < s.jump_percent + s.failover_percent) {
        Failover();
        if (::testing::Test::HasFatalFailure()) return;
        continue;
      }
      int seconds = 0;
      int lo = 0;
      int hi = 0;
      if (kind < 30) {
        seconds = Uniform(1, s.max_idle_run);  // an idle stretch
      } else if (kind < 55) {
        seconds = Uniform(1, 6), lo = 1, hi = s.low_rate;
      } else if (kind < 80) {
        seconds = Uniform(1, 6), lo = s.low_rate, hi = s.steady_rate;
      } else {
        seconds = Uniform(1, 4), lo = s.steady_rate, hi = s.burst_rate;
      }
      seconds = std::min(seconds, s.seconds - second);
      RunSeconds(seconds, lo, hi);
      if (::testing::Test::HasFatalFailure()) return;
      second += seconds;
      since_long_idle += seconds;
    }
    while (forced_jumps < 3) {
      Jump(forced_jumps++);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  // `seconds` simulated seconds, each at its own rate drawn from [lo, hi] ids per
  // second.
  void RunSeconds(int seconds, int lo, int hi) {
    for (int i = 0; i < seconds; ++i) {
      OneSecond(Uniform(std::min(lo, hi), hi));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  // Seconds for the whole ring to turn over once at the current refresh period.
  int TurnoverSeconds() const {
    return static_cast<int>(f_.filter_count() * f_.refresh_period().count() / 1000) + 1;
  }

  // Runs every check still pending (at its due time).
  void Drain() { RunDue(Millis::max()); }

  const DriveReport& report() const { return r_; }

 private:
  struct Pending {
    Millis due;
    Millis inserted;
    uint64_t n;
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const { return a.due > b.due; }
  };

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int64_t Uniform64(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  void OneSecond(int rate) {
    const Millis start = now_;
    std::vector<int64_t> offsets(static_cast<size_t>(rate));
    for (auto& o : offsets) o = Uniform64(0, 999);
    std::sort(offsets.begin(), offsets.end());
    for (int64_t o : offsets) {
      Advance(start + Millis{o});
      if (::testing::Test::HasFatalFailure()) return;
      Insert();
    }
    Advance(start + Millis{1000});
  }

  void Insert() {
    const uint64_t n = next_id_++;
    ++r_.offered;
    if (f_.TestAndInsert(Id(n)) != Verdict::kNew) return;  // a false positive: not held
    ++r_.accepted;
    // At the window the filter reports now, at the inserted id's age: what it
    // reports must be true of every id it takes from here on.
    pending_.push({now_ + f_.GuaranteedWindow(), now_, n});
    pending_.push({now_ + Millis{Uniform64(0, window_.count())}, now_, n});
  }

  // Moves the clock to `to`, running every check that falls due on the way at its
  // exact time.
  void Advance(Millis to) {
    RunDue(to);
    if (::testing::Test::HasFatalFailure()) return;
    SetClock(to);
  }

  void RunDue(Millis until) {
    while (!pending_.empty() && pending_.top().due <= until) {
      const Pending e = pending_.top();
      pending_.pop();
      SetClock(e.due);
      if (::testing::Test::HasFatalFailure()) return;
      Check(e);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  // One AdvanceTo call, then the invariants that must hold in every reachable state.
  void SetClock(Millis to) {
    if (to <= now_) return;
    f_.AdvanceTo(to);
    now_ = to;
    ASSERT_EQ(f_.now(), now_);
    ASSERT_GE(f_.GuaranteedWindow(), window_);
    ASSERT_GE(NominalWindow({f_.target_filters(), f_.refresh_period()}, NonPast(f_.config().check)),
              window_)
        << "the shape (" << f_.target_filters() << " filters, refresh "
        << f_.refresh_period().count() << " ms) no longer covers the window";
    ASSERT_GE(f_.filter_count(), f_.target_filters());
    ASSERT_GE(f_.refresh_period(), Millis{1});
    // Algorithm 3 moves the two knobs in opposite directions: more filters or a
    // shorter period is a scale-up, fewer filters or a longer period a scale-down.
    const uint32_t target = f_.target_filters();
    const Millis refresh = f_.refresh_period();
    if (target > last_target_ || (target == last_target_ && refresh < last_refresh_)) {
      ++r_.scale_ups;
    } else if (target < last_target_ || (target == last_target_ && refresh > last_refresh_)) {
      ++r_.scale_downs;
    }
    last_target_ = target;
    last_refresh_ = refresh;
    r_.most_filters = std::max(r_.most_filters, f_.filter_count());
    r_.shortest_refresh = std::min(r_.shortest_refresh, f_.refresh_period());
    r_.longest_refresh = std::max(r_.longest_refresh, f_.refresh_period());
  }

  void Check(const Pending& e) {
    const Millis age = now_ - e.inserted;
    ASSERT_LE(age, window_) << "test bug: checking an id past the window";
    ++r_.checks;
    if (age == window_) ++r_.checks_at_window_end;
    ASSERT_TRUE(f_.Contains(Id(e.n)))
        << "false negative: id #" << e.n << " inserted at " << e.inserted.count()
        << " ms, checked at " << now_.count() << " ms (age " << age.count() << " ms, window "
        << window_.count() << " ms); filters " << f_.filter_count() << " (target "
        << f_.target_filters() << "), refresh " << f_.refresh_period().count() << " ms";
  }

  // Checks every pending id before the jump (all are inside the window now), jumps
  // with one AdvanceTo, then checks the ids still inside the window at once and again
  // at the end of their window.
  // A standby takes over: the filter is replaced by the decoding of its own serialized
  // state, and the run goes on checking the ids the old one accepted.
  void Failover() {
    std::string bytes;
    f_.Serialize(bytes);
    auto decoded = DecodeDedupFilter(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    auto* copy = dynamic_cast<ForgetfulBloomFilter*>(decoded.value().get());
    ASSERT_NE(copy, nullptr);
    const std::string digest = f_.Digest();
    f_ = std::move(*copy);
    ASSERT_EQ(f_.Digest(), digest);
    ++r_.failovers;
  }

  // kind 0: a few to 40 refresh periods (often inside the window); 1: past the window;
  // 2: more than 4096 refresh periods (the fast-forward path).
  void Jump(int kind) {
    const Millis t = f_.refresh_period();
    Millis by{0};
    if (kind == 0) {
      by = t * Uniform(3, 40);
    } else if (kind == 1) {
      by = window_ + Millis{Uniform64(1, window_.count() * 2)};
    } else {
      by = t * Uniform(4100, 9000) + Millis{Uniform64(0, 999)};
      ++r_.huge_jumps;
    }
    std::vector<Pending> all;
    while (!pending_.empty()) {
      all.push_back(pending_.top());
      pending_.pop();
    }
    for (const Pending& e : all) {
      Check(e);
      if (::testing::Test::HasFatalFailure()) return;
    }
    SetClock(now_ + by);
    if (::testing::Test::HasFatalFailure()) return;
    ++r_.jumps;
    for (const Pending& e : all) {
      if (e.inserted + window_ < now_) continue;
      Check(e);
      if (::testing::Test::HasFatalFailure()) return;
      if (e.due != e.inserted + window_) pending_.push({e.inserted + window_, e.inserted, e.n});
    }
  }

  ForgetfulBloomFilter& f_;
  std::mt19937_64 rng_;
  const Millis window_;
  Millis now_;
  uint32_t last_target_ = 0;
  Millis last_refresh_{0};
  uint64_t next_id_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, Later> pending_;
  DriveReport r_;
};

std::string Describe(const FbfConfig& c) {
  return std::string("check ") + CheckName(c.check) + ", N " + std::to_string(c.past_filters) +
         ", bits " + std::to_string(c.bits_per_filter) + ", k " + std::to_string(c.hashes) +
         ", refresh " + std::to_string(c.refresh.count()) + " ms, window " +
         std::to_string(c.window.count()) + " ms, adaptive " + (c.adaptive ? "yes" : "no") +
         ", target fpp " + std::to_string(c.target_fpp) + ", refresh step " +
         std::to_string(c.refresh_step.count()) + " ms, max filters " +
         std::to_string(c.max_filters) + ", adapt every " + std::to_string(c.adapt_every.count()) +
         " ms";
}

std::string Describe(const DriveReport& r) {
  return "offered " + std::to_string(r.offered) + ", accepted " + std::to_string(r.accepted) +
         ", checks " + std::to_string(r.checks) + " (" + std::to_string(r.checks_at_window_end) +
         " at the window's end), jumps " + std::to_string(r.jumps) + " (" +
         std::to_string(r.huge_jumps) + " huge), failovers " + std::to_string(r.failovers) +
         ", scale-ups " + std::to_string(r.scale_ups) + ", scale-downs " +
         std::to_string(r.scale_downs) + ", filters up to " + std::to_string(r.most_filters) +
         ", refresh " + std::to_string(r.shortest_refresh.count()) + ".." +
         std::to_string(r.longest_refresh.count()) + " ms";
}

// ---------------------------------------------------------------------------------
// 1. No false negative inside the window, for N = 1..32, every check, with and
//    without adaptation, under random rate schedules.

struct WindowCase {
  MembershipCheck check;
  bool adaptive;
  uint32_t past_filters;
  uint64_t slice_capacity = 0;  // > 0: bursts refresh early
};

class ForgetfulBloomFilterWindow : public ::testing::TestWithParam<WindowCase> {};

TEST_P(ForgetfulBloomFilterWindow, NeverForgetsAnIdInsideTheGuaranteedWindow) {
  const WindowCase wc = GetParam();
  const uint64_t seed = 100000 * wc.slice_capacity + 1000 * wc.past_filters +
                        10 * static_cast<uint64_t>(wc.check) + (wc.adaptive ? 1 : 0);
  std::mt19937_64 rng(seed);
  FbfConfig c;
  c.check = wc.check;
  c.past_filters = wc.past_filters;
  c.hashes = 3;
  const Millis refreshes[] = {Millis{40}, Millis{100}, Millis{250}};
  c.refresh = refreshes[rng() % 3];
  const Millis nominal = (c.past_filters + 1) * c.refresh;
  // Half the cases use the nominal window (window 0), half a shorter one that is not a
  // multiple of the refresh period.
  c.window = rng() % 2 == 0 ? Millis{0}
                            : Millis{std::uniform_int_distribution<int64_t>(nominal.count() / 2,
                                                                            nominal.count())(rng)};
  c.adaptive = wc.adaptive;
  // Adaptive filters are tiny so that bursts push the estimate over 0.9 * target and
  // idle stretches bring it under 0.1 * target again.
  c.bits_per_filter = wc.adaptive ? 2048 : 8192;
  c.target_fpp = 1e-5;
  c.seed = seed;
  c.slice_capacity = wc.slice_capacity;
  ForgetfulBloomFilter f = MakeFbf(c, Millis{1'700'000'000'000});
  ASSERT_GE(f.GuaranteedWindow(), f.window());
  SCOPED_TRACE(Describe(c) + ", seed " + std::to_string(seed));

  Schedule s;
  s.seconds = 120;
  if (wc.adaptive) {
    s.seconds = 300;
    s.burst_rate = 1500;
    s.long_idle_every = 20;  // burst/idle cycles: scale up, then scale down
    s.long_idle_min = 30;
    s.long_idle_max = 60;
  }
  WindowDriver driver(f, seed);
  driver.Run(s);
  driver.Drain();
  if (HasFatalFailure()) return;
  const DriveReport& r = driver.report();
  SCOPED_TRACE(Describe(r));
  // The checks were real: many ids, many of them at the last moment of their window,
  // and the filter accepted most fresh ids (it was not saturated into finding all).
  EXPECT_GE(r.accepted, 1000u);
  EXPECT_GE(r.checks_at_window_end, 1000u);
  EXPECT_GE(static_cast<double>(r.accepted) / static_cast<double>(r.offered),
            wc.adaptive ? 0.2 : 0.8);
  EXPECT_GE(r.jumps, 3u);
  EXPECT_GE(r.huge_jumps, 1u);
  if (wc.adaptive && wc.slice_capacity == 0) {
    // Algorithm 3 ran both ways, many times. (Early refreshes keep the estimate low
    // enough that it has less to do.)
    EXPECT_GE(r.scale_ups, 5u);
    EXPECT_GE(r.scale_downs, 5u);
  }
  if (wc.slice_capacity > 0) {
    EXPECT_GE(f.early_refreshes(), 20u) << "bursts refreshed early";
  }
}

std::vector<WindowCase> AllWindowCases() {
  std::vector<WindowCase> cases;
  for (MembershipCheck check :
       {MembershipCheck::kPaper, MembershipCheck::kPairs, MembershipCheck::kAny}) {
    for (bool adaptive : {false, true}) {
      for (uint32_t n = 1; n <= 32; ++n) cases.push_back({check, adaptive, n});
      // Early refreshes: bursts (up to 3000 ids/s) fill a 40-id slice many times over.
      for (uint32_t n : {1u, 2u, 3u, 5u, 8u, 13u, 21u, 32u}) {
        cases.push_back({check, adaptive, n, 40});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryCheckAndFilterCount, ForgetfulBloomFilterWindow,
                         ::testing::ValuesIn(AllWindowCases()),
                         [](const ::testing::TestParamInfo<WindowCase>& param_info) {
                           const WindowCase& wc = param_info.param;
                           return std::string(CheckName(wc.check)) +
                                  (wc.adaptive ? "_adaptive_N" : "_fixed_N") +
                                  std::to_string(wc.past_filters) +
                                  (wc.slice_capacity > 0 ? "_early" : "");
                         });

// The trap of DESIGN-NOTES 2.4: with N > 3 an else-if reading of Algorithm 2 never
// tests the oldest filter alone. Ids inserted 1 ms before a refresh sit, at the end of
// their window, in the oldest filter alone (paper, any) or in the oldest pair (pairs).
// They must be found at exactly `window` and, as the paper says (an N-FBF holds
// ((N+1)t, (N+2)t]), be forgotten once (N+2)t have passed since their slice began.
TEST(ForgetfulBloomFilter, FindsIdsOfTheOldestSliceUntilTheLastMomentOfTheWindow) {
  for (MembershipCheck check :
       {MembershipCheck::kPaper, MembershipCheck::kPairs, MembershipCheck::kAny}) {
    for (uint32_t n = 1; n <= 32; ++n) {
      FbfConfig c;
      c.check = check;
      c.past_filters = n;
      c.bits_per_filter = 1 << 14;  // a few ids per filter: no false positive in practice
      c.hashes = 4;
      c.refresh = Millis{1000};
      c.seed = 7;
      SCOPED_TRACE(Describe(c));
      const Millis t = c.refresh;
      const Millis window = (n + 1) * t;
      ForgetfulBloomFilter f = MakeFbf(c);
      ASSERT_EQ(f.window(), window);

      enum class What { kInsert, kFound, kFoundNearEdge, kFreshRetry, kForgotten };
      struct Event {
        Millis at;
        What what;
        uint64_t id;
      };
      std::vector<Event> events;
      const int slices = static_cast<int>(n) + 4;
      for (int s = 0; s < slices; ++s) {
        const uint64_t just_before = 2 * static_cast<uint64_t>(s);  // 1 ms before a refresh
        const uint64_t just_after = just_before + 1;                // at a refresh
        const Millis slice_start = s * t;
        const Millis before_at = slice_start + t - Millis{1};
        events.push_back({slice_start, What::kInsert, just_after});
        events.push_back({before_at, What::kInsert, just_before});
        events.push_back({slice_start + Millis{1}, What::kFreshRetry, just_after});
        events.push_back({before_at + window, What::kFoundNearEdge, just_before});
        events.push_back({slice_start + window, What::kFound, just_after});
        events.push_back({slice_start + window + t - Millis{1}, What::kFoundNearEdge, just_after});
        events.push_back({slice_start + (n + 2) * t, What::kForgotten, just_before});
        events.push_back({slice_start + (n + 2) * t, What::kForgotten, just_after});
      }
      std::stable_sort(events.begin(), events.end(),
                       [](const Event& a, const Event& b) { return a.at < b.at; });
      for (const Event& e : events) {
        f.AdvanceTo(e.at);
        SCOPED_TRACE("id #" + std::to_string(e.id) + " at " + std::to_string(e.at.count()) + " ms");
        switch (e.what) {
          case What::kInsert:
            ASSERT_EQ(f.TestAndInsert(Id(e.id)), Verdict::kNew);
            break;
          case What::kFound:
            ASSERT_TRUE(f.Contains(Id(e.id)));
            break;
          case What::kFoundNearEdge:
            ASSERT_TRUE(f.Contains(Id(e.id)));
            // A known id is not inserted again: TestAndInsert only reports.
            ASSERT_EQ(f.TestAndInsert(Id(e.id)), Verdict::kDuplicateNearEdge);
            break;
          case What::kFreshRetry:
            ASSERT_EQ(f.TestAndInsert(Id(e.id)), Verdict::kDuplicate);
            break;
          case What::kForgotten:
            ASSERT_FALSE(f.Contains(Id(e.id)));
            break;
        }
      }
    }
  }
}

// The same trap, with ids in every millisecond of a slice, against N = 4 and the
// paper's check, and against a filter that was refreshed many times before.
TEST(ForgetfulBloomFilter, FindsEveryIdOfTheOldestSliceWhenOnlyTheOldestFilterHoldsIt) {
  FbfConfig c;
  c.check = MembershipCheck::kPaper;
  c.past_filters = 4;
  c.bits_per_filter = 1 << 16;
  c.hashes = 4;
  c.refresh = Millis{200};
  c.seed = 11;
  ForgetfulBloomFilter f = MakeFbf(c);
  const Millis t = c.refresh;
  f.AdvanceTo(50 * t);  // the ring has turned over many times
  const Millis slice = f.now();
  for (int64_t ms = 0; ms < t.count(); ++ms) {
    f.AdvanceTo(slice + Millis{ms});
    ASSERT_EQ(f.TestAndInsert(Id(static_cast<uint64_t>(ms))), Verdict::kNew);
  }
  // (N + 1) refreshes later every id of the slice is in the oldest filter alone.
  f.AdvanceTo(slice + (c.past_filters + 1) * t);
  for (int64_t ms = 0; ms < t.count(); ++ms) {
    ASSERT_TRUE(f.Contains(Id(static_cast<uint64_t>(ms)))) << "id of ms " << ms;
  }
  // Each id is still found at exactly its window's end.
  for (int64_t ms = 0; ms < t.count(); ++ms) {
    f.AdvanceTo(slice + Millis{ms} + f.window());
    ASSERT_TRUE(f.Contains(Id(static_cast<uint64_t>(ms)))) << "id of ms " << ms;
  }
}

// ---------------------------------------------------------------------------------
// 2. The window invariant under long random sequences of scale-ups and scale-downs:
//    random configurations, random seeds.

TEST(ForgetfulBloomFilter, NeverDropsAnIdInsideTheWindowWhateverTheAdaptiveSequence) {
  uint64_t total_ups = 0;
  uint64_t total_downs = 0;
  uint64_t total_failovers = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    auto uniform = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    FbfConfig c;
    const MembershipCheck checks[] = {MembershipCheck::kPaper, MembershipCheck::kPairs,
                                      MembershipCheck::kAny};
    c.check = checks[uniform(0, 2)];
    c.max_filters = static_cast<uint32_t>(uniform(NonPast(c.check) + 1, 70));
    c.past_filters = static_cast<uint32_t>(uniform(1, c.max_filters - NonPast(c.check)));
    const uint64_t bits[] = {512, 1024, 2048, 4096};
    c.bits_per_filter = bits[uniform(0, 3)];
    c.block_bits = uniform(0, 1) == 0 ? 512 : 1024;
    c.hashes = static_cast<int>(uniform(1, 6));
    c.refresh = Millis{uniform(5, 600)};
    const Millis nominal = (c.past_filters + 1) * c.refresh;
    c.window = uniform(0, 2) == 0 ? Millis{0} : Millis{uniform(1, nominal.count())};
    c.adaptive = true;
    c.target_fpp = std::pow(10.0, -static_cast<double>(uniform(2, 7)));
    c.refresh_step = uniform(0, 1) == 0 ? Millis{0} : Millis{uniform(1, c.refresh.count())};
    const Millis adapt[] = {Millis{50}, Millis{250}, Millis{1000}, Millis{3000}};
    c.adapt_every = adapt[uniform(0, 3)];
    c.model = uniform(0, 1) == 0 ? ConstituentModel::kBlocked : ConstituentModel::kClassic;
    c.seed = seed;
    SCOPED_TRACE(Describe(c) + ", seed " + std::to_string(seed));
    ForgetfulBloomFilter f = MakeFbf(c, Millis{uniform(-100000, 100000)});

    Schedule s;
    s.seconds = 90;
    s.long_idle_every = 15;
    s.low_rate = static_cast<int>(uniform(10, 60));
    s.steady_rate = static_cast<int>(uniform(100, 500));
    s.burst_rate = static_cast<int>(uniform(800, 3000));
    s.jump_percent = 8;
    WindowDriver driver(f, seed);
    driver.Run(s);
    driver.Drain();
    if (HasFatalFailure()) return;
    const DriveReport& r = driver.report();
    SCOPED_TRACE(Describe(r));
    EXPECT_GE(driver.report().checks_at_window_end, 50u);
    total_ups += driver.report().scale_ups;
    total_failovers += driver.report().failovers;
    total_downs += driver.report().scale_downs;
  }
  // The sequences did move the shape both ways.
  EXPECT_GE(total_ups, 120u);
  EXPECT_GE(total_downs, 120u);
  EXPECT_GE(total_failovers, 60u);
}

// Algorithm 3 driven through many burst/idle cycles on a tiny filter: the estimate
// crosses 0.9 * target in every burst and falls under 0.1 * target in every idle
// stretch; ids are checked throughout.
TEST(ForgetfulBloomFilter, AdaptsUpAndDownThroughManyBurstIdleCyclesWithoutForgetting) {
  for (MembershipCheck check : {MembershipCheck::kPaper, MembershipCheck::kPairs}) {
    FbfConfig c;
    c.check = check;
    c.past_filters = 2;
    c.bits_per_filter = 512;
    c.hashes = 3;
    c.refresh = Millis{500};
    c.adaptive = true;
    c.target_fpp = 1e-3;
    c.max_filters = 40;
    c.seed = 99;
    SCOPED_TRACE(Describe(c));
    ForgetfulBloomFilter f = MakeFbf(c);
    WindowDriver driver(f, 4242);
    int ups_seen_in_bursts = 0;
    int downs_seen_in_idle = 0;
    for (int cycle = 0; cycle < 12; ++cycle) {
      uint64_t before = driver.report().scale_ups;
      driver.RunSeconds(3, 400, 800);  // a burst
      if (HasFatalFailure()) return;
      if (driver.report().scale_ups > before) ++ups_seen_in_bursts;
      before = driver.report().scale_downs;
      // A long idle stretch: the ring empties, then one scale-down per second.
      driver.RunSeconds(2 * driver.TurnoverSeconds() + 40, 0, 0);
      if (HasFatalFailure()) return;
      if (driver.report().scale_downs > before) ++downs_seen_in_idle;
    }
    driver.Drain();
    if (HasFatalFailure()) return;
    EXPECT_EQ(ups_seen_in_bursts, 12);
    EXPECT_EQ(downs_seen_in_idle, 12);
    EXPECT_LT(driver.report().shortest_refresh, c.refresh);
    // Quiet stretches bring the period back, never beyond what the filters were
    // sized for.
    EXPECT_EQ(driver.report().longest_refresh, c.refresh);
    EXPECT_GE(driver.report().checks_at_window_end, 1000u);
  }
}

// ---------------------------------------------------------------------------------
// Early refreshes: a future that reaches its slice capacity is pushed at once.

TEST(ForgetfulBloomFilter, RefreshesEarlyEachTimeTheFutureHoldsItsSliceCapacity) {
  FbfConfig c;
  c.past_filters = 2;
  c.bits_per_filter = 1 << 14;
  c.hashes = 4;
  c.refresh = Millis{1000};
  c.slice_capacity = 100;
  ForgetfulBloomFilter f = MakeFbf(c);
  const uint32_t ring = f.filter_count();
  f.AdvanceTo(Millis{10});
  for (uint64_t n = 0; n < 250; ++n) ASSERT_EQ(f.TestAndInsert(Id(n)), Verdict::kNew);
  // 250 ids in one millisecond: two slices of 100 filled, the third holds 50.
  EXPECT_EQ(f.early_refreshes(), 2u);
  EXPECT_EQ(f.Summary().early_refreshes, 2u);
  EXPECT_EQ(f.filter_count(), ring + 2);
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.constituents[0].inserted, 50u);
  for (const ConstituentSummary& constituent : s.constituents) {
    EXPECT_LE(constituent.inserted, 2 * c.slice_capacity);
  }
  for (uint64_t n = 0; n < 250; ++n) EXPECT_TRUE(f.Contains(Id(n))) << n;
  // The regular refresh keeps its schedule (dropping the start's empty filters); the
  // early ones leave only once their ids are older than the window.
  f.AdvanceTo(f.window());
  for (uint64_t n = 0; n < 250; ++n) EXPECT_TRUE(f.Contains(Id(n))) << n;
  f.AdvanceTo(f.window() + Millis{2000});
  EXPECT_EQ(f.filter_count(), ring);
  EXPECT_EQ(f.early_refreshes(), 2u);
}

TEST(ForgetfulBloomFilter, StopsRefreshingEarlyAtMaxFiltersRatherThanForget) {
  FbfConfig c;
  c.past_filters = 2;
  c.bits_per_filter = 1 << 14;
  c.hashes = 4;
  c.refresh = Millis{1000};
  c.slice_capacity = 10;
  c.max_filters = 8;
  ForgetfulBloomFilter f = MakeFbf(c);
  f.AdvanceTo(Millis{1});
  for (uint64_t n = 0; n < 500; ++n) (void)f.TestAndInsert(Id(n));
  EXPECT_EQ(f.filter_count(), 8u);
  EXPECT_EQ(f.early_refreshes(), 8u - 5u);
  for (uint64_t n = 0; n < 500; ++n) EXPECT_TRUE(f.Contains(Id(n))) << n;
}

// A clock that jumps far past the window (a shard idle for a day) leaves a ring of
// empty filters of the current shape, built at once, that goes on refreshing on the
// period's grid and holds what comes next.
TEST(ForgetfulBloomFilter, AJumpOfTheClockFarPastTheWindowLeavesAnEmptyRingOfItsShape) {
  FbfConfig c;
  c.past_filters = 3;
  c.bits_per_filter = 1 << 12;
  c.hashes = 3;
  c.refresh = Millis{1000};
  ForgetfulBloomFilter f = MakeFbf(c);
  for (uint64_t n = 0; n < 50; ++n) (void)f.TestAndInsert(Id(n));
  const Millis day{86'400'000};
  f.AdvanceTo(day + Millis{500});
  EXPECT_EQ(f.filter_count(), f.target_filters());
  for (const ConstituentSummary& s : f.Summary().constituents) EXPECT_EQ(s.inserted, 0u);
  for (uint64_t n = 0; n < 50; ++n) EXPECT_FALSE(f.Contains(Id(n))) << n;
  for (uint64_t n = 100; n < 150; ++n) EXPECT_EQ(f.TestAndInsert(Id(n)), Verdict::kNew);
  // The next refresh is the grid's next point; the new ids stay for the window.
  f.AdvanceTo(day + Millis{1000});
  f.AdvanceTo(day + Millis{500} + f.window());
  for (uint64_t n = 100; n < 150; ++n) EXPECT_TRUE(f.Contains(Id(n))) << n;
  std::string state;
  f.Serialize(state);
  EXPECT_TRUE(DecodeDedupFilter(state).ok());
}

// Under a memory bound the ring stops at max_filters whatever pushes it: early
// refreshes in bursts, and the regular refreshes between them that find nothing
// droppable (review of the bound: those grew the ring by one a period, past every
// limit, until its state no longer decoded). What it drops there is counted, and only
// ids older than what it reports as held.
TEST(ForgetfulBloomFilter, UnderAMemoryBoundNeverHoldsMoreThanMaxFiltersThroughBurstsAndRefreshes) {
  FbfConfig c;
  c.past_filters = 2;
  c.bits_per_filter = 1 << 14;
  c.hashes = 4;
  c.refresh = Millis{1000};
  c.slice_capacity = 10;
  c.max_filters = 8;
  c.memory_limit_bytes = uint64_t{1} << 20;  // 512 filters: max_filters binds
  ForgetfulBloomFilter f = MakeFbf(c);
  EXPECT_EQ(f.ring_bound(), 8u);
  uint64_t next = 0;
  for (int period = 0; period < 40; ++period) {
    const Millis start{period * 1000 + 1};
    f.AdvanceTo(start);
    for (int i = 0; i < 35; ++i) (void)f.TestAndInsert(Id(next++));  // 3.5 slices
    ASSERT_LE(f.filter_count(), 8u) << "period " << period;
    std::string state;
    f.Serialize(state);
    ASSERT_TRUE(DecodeDedupFilter(state).ok()) << "period " << period;
    // Every id of this period is held, as the reported window says.
    for (uint64_t n = next - 35; n < next; ++n) ASSERT_TRUE(f.Contains(Id(n))) << n;
    ASSERT_GE(f.Summary().window_ms_guaranteed, 0);
  }
  EXPECT_GT(f.forgotten_early().ids, 0u);
  EXPECT_LT(f.GuaranteedWindow(), f.window());
}

// The burst that made the service under-count before early refreshes existed: a
// filter sized for 2,000 ids/s takes 50,000 ids/s for two seconds (a backlog read at
// full speed after a restart). Without early refreshes the future and the present
// take 25 slices' worth of ids each and the estimate ends two orders of magnitude
// above the target; with them, the ring grows by short slices and the estimate and
// the measured rate stay near the target.
TEST(ForgetfulBloomFilter, KeepsTheFalsePositiveRateNearTheTargetThroughABurstFarAboveTheSizing) {
  auto sized = SizeFbf({2000, Millis{30000}, 1e-6, MembershipCheck::kPairs});
  ASSERT_TRUE(sized.ok()) << sized.error();
  // Every id of the burst is new: each duplicate verdict is an event lost.
  const auto burst = [](FbfConfig c, uint64_t& lost) {
    c.adaptive = true;
    ForgetfulBloomFilter f = MakeFbf(c);
    uint64_t n = 0;
    for (int ms = 1; ms <= 2000; ++ms) {
      f.AdvanceTo(Millis{ms});
      for (int i = 0; i < 50; ++i) lost += f.TestAndInsert(Id(n++)) == Verdict::kNew ? 0 : 1;
    }
    return f;
  };
  FbfConfig without = sized.value();
  without.slice_capacity = 0;
  uint64_t lost_overfilled = 0;
  const ForgetfulBloomFilter overfilled = burst(without, lost_overfilled);
  EXPECT_GT(overfilled.EstimatedFpp(ConstituentModel::kBlocked), 100 * without.target_fpp)
      << "the burst should overfill a filter that never refreshes early";

  ASSERT_GT(sized->slice_capacity, 0u);
  uint64_t lost = 0;
  const ForgetfulBloomFilter f = burst(sized.value(), lost);
  // 100,000 new ids at an FPP of a few 1e-6 expect well under one loss.
  EXPECT_EQ(lost, 0u);
  EXPECT_GE(lost_overfilled, 10u);
  EXPECT_GT(f.early_refreshes(), 10u);
  EXPECT_LE(f.filter_count(), f.config().max_filters);
  // Each filter at its designed fill: the estimate grows with the ring's length only.
  const double sized_filters = sized->past_filters + 3;
  EXPECT_LE(f.EstimatedFpp(ConstituentModel::kBlocked),
            f.filter_count() / sized_filters * sized->target_fpp);
  // Measured on ids never inserted: at 1e-6, 2,000,000 queries expect 2 false
  // positives; the overfilled filter has hundreds.
  uint64_t false_positives = 0;
  uint64_t overfilled_false_positives = 0;
  for (uint64_t n = 1'000'000'000; n < 1'002'000'000; ++n) {
    false_positives += f.Contains(Id(n)) ? 1 : 0;
    overfilled_false_positives += overfilled.Contains(Id(n)) ? 1 : 0;
  }
  EXPECT_LE(false_positives, 10u);
  EXPECT_GE(overfilled_false_positives, 100u);
}

// ---------------------------------------------------------------------------------
// Near-edge verdicts (DESIGN-NOTES 2.6).

TEST(ForgetfulBloomFilter, FlagsRetriesCloseToTheWindowsEndAsNearEdgeAndFreshRetriesNot) {
  for (MembershipCheck check :
       {MembershipCheck::kPaper, MembershipCheck::kPairs, MembershipCheck::kAny}) {
    FbfConfig c;
    c.check = check;
    c.past_filters = 8;
    c.bits_per_filter = 1 << 16;
    c.hashes = 5;
    c.refresh = Millis{1000};
    c.seed = 3;
    SCOPED_TRACE(CheckName(check));
    ForgetfulBloomFilter f = MakeFbf(c);
    const Millis window = f.window();
    // 100 ids spread over the first slice; retried once 20 ms later and once at the
    // end of the window.
    std::vector<Millis> inserted;
    for (int i = 0; i < 100; ++i) inserted.push_back(Millis{i * 10});
    struct Retry {
      Millis at;
      int id;
      bool late;
    };
    std::vector<Retry> retries;
    for (int i = 0; i < 100; ++i) {
      retries.push_back({inserted[i] + Millis{20}, i, false});
      retries.push_back({inserted[i] + window, i, true});
    }
    std::sort(retries.begin(), retries.end(),
              [](const Retry& a, const Retry& b) { return a.at < b.at; });
    size_t next_insert = 0;
    for (const Retry& r : retries) {
      while (next_insert < inserted.size() && inserted[next_insert] <= r.at) {
        f.AdvanceTo(inserted[next_insert]);
        ASSERT_EQ(f.TestAndInsert(Id(next_insert)), Verdict::kNew);
        ++next_insert;
      }
      f.AdvanceTo(r.at);
      EXPECT_EQ(f.TestAndInsert(Id(static_cast<uint64_t>(r.id))),
                r.late ? Verdict::kDuplicateNearEdge : Verdict::kDuplicate)
          << "id " << r.id << " retried at " << r.at.count() << " ms";
    }
    const FilterSummary s = f.Summary();
    EXPECT_EQ(s.inserted, 100u);
    EXPECT_EQ(s.duplicates, 200u);
    EXPECT_EQ(s.near_edge_duplicates, 100u);
  }
}

// ---------------------------------------------------------------------------------
// Basic behaviour.

TEST(ForgetfulBloomFilter, ReportsNewThenDuplicateForTheSameId) {
  for (MembershipCheck check :
       {MembershipCheck::kPaper, MembershipCheck::kPairs, MembershipCheck::kAny}) {
    FbfConfig c;
    c.check = check;
    c.past_filters = 3;
    c.bits_per_filter = 4096;
    c.hashes = 4;
    c.refresh = Millis{100};
    ForgetfulBloomFilter f = MakeFbf(c);
    EXPECT_FALSE(f.Contains(Id(1)));
    EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
    EXPECT_TRUE(f.Contains(Id(1)));
    EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kDuplicate);
    EXPECT_FALSE(f.Contains(Id(2)));
  }
}

TEST(ForgetfulBloomFilter, HasNPlusTwoFiltersForThePaperCheckAndNPlusThreeForPairs) {
  for (uint32_t n : {1u, 4u, 17u}) {
    FbfConfig c;
    c.past_filters = n;
    c.bits_per_filter = 512;
    c.hashes = 2;
    c.refresh = Millis{10};
    c.check = MembershipCheck::kPaper;
    EXPECT_EQ(MakeFbf(c).filter_count(), n + 2);
    c.check = MembershipCheck::kAny;
    EXPECT_EQ(MakeFbf(c).filter_count(), n + 2);
    c.check = MembershipCheck::kPairs;
    ForgetfulBloomFilter f = MakeFbf(c);
    EXPECT_EQ(f.filter_count(), n + 3);
    // Without adaptation, refreshes keep the shape.
    f.AdvanceTo(Millis{12345});
    EXPECT_EQ(f.filter_count(), n + 3);
    EXPECT_EQ(f.refresh_period(), Millis{10});
  }
}

TEST(ForgetfulBloomFilter, UsesTheNominalWindowWhenNoneIsConfigured) {
  FbfConfig c;
  c.past_filters = 5;
  c.bits_per_filter = 512;
  c.hashes = 2;
  c.refresh = Millis{300};
  EXPECT_EQ(MakeFbf(c).window(), Millis{1800});
  EXPECT_EQ(MakeFbf(c).GuaranteedWindow(), Millis{1800});
  c.window = Millis{1000};
  EXPECT_EQ(MakeFbf(c).window(), Millis{1000});
  EXPECT_EQ(MakeFbf(c).GuaranteedWindow(), Millis{1000})
      << "the window slots are dropped by, not the larger nominal one";
}

TEST(ForgetfulBloomFilter, IgnoresAClockThatGoesBackwards) {
  FbfConfig c;
  c.past_filters = 1;
  c.bits_per_filter = 4096;
  c.hashes = 3;
  c.refresh = Millis{100};
  ForgetfulBloomFilter f = MakeFbf(c, Millis{1000});
  ASSERT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(Millis{1150});
  const std::string before = f.Digest();
  f.AdvanceTo(Millis{0});
  EXPECT_EQ(f.now(), Millis{1150});
  EXPECT_EQ(f.Digest(), before);
  EXPECT_TRUE(f.Contains(Id(1)));
}

TEST(ForgetfulBloomFilter, KeepsTheModelEstimateInItsSummary) {
  FbfConfig c;
  c.check = MembershipCheck::kPairs;
  c.past_filters = 2;
  c.bits_per_filter = 2048;
  c.hashes = 3;
  c.refresh = Millis{100};
  ForgetfulBloomFilter f = MakeFbf(c);
  for (uint64_t i = 0; i < 300; ++i) {
    f.AdvanceTo(Millis{static_cast<int64_t>(i)});
    (void)f.TestAndInsert(Id(i));
  }
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.mode, DedupMode::kFbf);
  EXPECT_EQ(s.filters, f.filter_count());
  EXPECT_EQ(s.constituents.size(), f.filter_count());
  EXPECT_EQ(s.bits_total, uint64_t{2048} * f.filter_count());
  EXPECT_EQ(s.refresh_ms, 100);
  EXPECT_EQ(s.window_ms_guaranteed, 300);
  EXPECT_DOUBLE_EQ(s.estimated_fpp, f.EstimatedFpp(ConstituentModel::kBlocked));
  EXPECT_DOUBLE_EQ(s.estimated_fpp_eq1, f.EstimatedFpp(ConstituentModel::kClassic));
  EXPECT_GT(s.estimated_fpp, 0.0);
  uint64_t constituent_inserts = 0;
  for (const auto& k : s.constituents) constituent_inserts += k.inserted;
  EXPECT_EQ(constituent_inserts, 2 * s.inserted);  // every id goes into two filters
}

TEST(MembershipCheck, HasTheNamesOfTheConfigFile) {
  EXPECT_STREQ(CheckName(MembershipCheck::kPaper), "paper");
  EXPECT_STREQ(CheckName(MembershipCheck::kPairs), "pairs");
  EXPECT_STREQ(CheckName(MembershipCheck::kAny), "any");
}

// ---------------------------------------------------------------------------------
// 5. Bad parameters are rejected, and the message names the parameter.

FbfConfig ValidConfig() {
  FbfConfig c;
  c.bits_per_filter = 1024;
  c.hashes = 3;
  c.past_filters = 4;
  c.refresh = Millis{1000};
  return c;
}

void ExpectRejected(const FbfConfig& c, const std::string& word) {
  auto f = ForgetfulBloomFilter::Create(c, Millis{0});
  ASSERT_FALSE(f.ok()) << "accepted: " << Describe(c);
  EXPECT_NE(f.message().find(word), std::string::npos)
      << "the error \"" << f.error() << "\" does not name \"" << word << "\"";
}

TEST(ForgetfulBloomFilter, AcceptsAValidConfiguration) {
  EXPECT_TRUE(ForgetfulBloomFilter::Create(ValidConfig(), Millis{0}).ok());
  FbfConfig c = ValidConfig();
  c.window = Millis{5000};  // exactly (N + 1) * t
  EXPECT_TRUE(ForgetfulBloomFilter::Create(c, Millis{0}).ok());
  c.hashes = kMaxHashes;
  EXPECT_TRUE(ForgetfulBloomFilter::Create(c, Millis{0}).ok());
  c.hashes = kMinHashes;
  EXPECT_TRUE(ForgetfulBloomFilter::Create(c, Millis{0}).ok());
}

TEST(ForgetfulBloomFilter, RejectsZeroBitsNamingBits) {
  FbfConfig c = ValidConfig();
  c.bits_per_filter = 0;
  ExpectRejected(c, "bits");
}

TEST(ForgetfulBloomFilter, RejectsMoreBitsThanAFilterCanAddressNamingBits) {
  FbfConfig c = ValidConfig();
  c.bits_per_filter = kMaxBlocks * kBlockBits + 1;
  ExpectRejected(c, "bits");
}

TEST(ForgetfulBloomFilter, RejectsAHashCountOutOfRangeNamingHashes) {
  for (int k : {0, -1, 31, 1000}) {
    FbfConfig c = ValidConfig();
    c.hashes = k;
    ExpectRejected(c, "hashes");
  }
}

TEST(ForgetfulBloomFilter, RejectsANegativeWindowNamingWindow) {
  FbfConfig c = ValidConfig();
  c.window = Millis{-1};
  ExpectRejected(c, "window");
}

TEST(ForgetfulBloomFilter, RejectsAZeroOrNegativeRefreshPeriodNamingRefresh) {
  for (int64_t t : {0, -1, -1000}) {
    FbfConfig c = ValidConfig();
    c.refresh = Millis{t};
    ExpectRejected(c, "refresh");
  }
}

TEST(ForgetfulBloomFilter, RejectsZeroPastFiltersNamingPastFilters) {
  FbfConfig c = ValidConfig();
  c.past_filters = 0;
  ExpectRejected(c, "past filters");
}

TEST(ForgetfulBloomFilter, RejectsMorePastFiltersThanMaxFiltersAllows) {
  FbfConfig c = ValidConfig();
  c.max_filters = 10;
  c.past_filters = 8;
  c.check = MembershipCheck::kPairs;  // 8 + 3 > 10
  ExpectRejected(c, "past filters");
  c.check = MembershipCheck::kPaper;  // 8 + 2 <= 10
  EXPECT_TRUE(ForgetfulBloomFilter::Create(c, Millis{0}).ok());
}

// Regression: past + 3 (or + 2) wrapped around in 32 bits, so these were accepted
// with no slots, and the first TestAndInsert dereferenced nothing.
TEST(ForgetfulBloomFilter, RejectsPastFiltersThatWrapAroundTheLimit) {
  for (const uint32_t past : {0xFFFFFFFDu, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    for (const MembershipCheck check : {MembershipCheck::kPairs, MembershipCheck::kPaper}) {
      FbfConfig c = ValidConfig();
      c.past_filters = past;
      c.check = check;
      ExpectRejected(c, "past filters");
    }
  }
}

TEST(ForgetfulBloomFilter, RejectsAWindowLongerThanTheFiltersHoldNamingWindow) {
  FbfConfig c = ValidConfig();  // (4 + 1) * 1000 ms
  c.window = Millis{5001};
  ExpectRejected(c, "window");
  ExpectRejected(c, "5000");  // and says what the filters hold
}

TEST(ForgetfulBloomFilter, RejectsATargetFppOutsideZeroOneNamingTargetFpp) {
  for (double fpp : {0.0, 1.0, -0.5, 1.5, std::nan("")}) {
    FbfConfig c = ValidConfig();
    c.target_fpp = fpp;
    ExpectRejected(c, "target fpp");
  }
}

TEST(ForgetfulBloomFilter, RejectsABadAdaptationSetup) {
  FbfConfig c = ValidConfig();
  c.refresh_step = Millis{-1};
  ExpectRejected(c, "refresh step");
  c = ValidConfig();
  c.adapt_every = Millis{0};
  ExpectRejected(c, "adaptation interval");
  c = ValidConfig();
  c.max_filters = 5000;
  ExpectRejected(c, "max filters");
}

// A refresh period so long that (N + 1) * t does not fit in 64 bits of milliseconds
// must be rejected, not overflow (signed overflow is undefined behaviour).
TEST(ForgetfulBloomFilter, RejectsARefreshPeriodWhoseWindowOverflows) {
  FbfConfig c = ValidConfig();
  c.past_filters = 8;
  c.refresh = Millis{INT64_MAX / 4};
  ExpectRejected(c, "refresh");
}

// The clock's last representable millisecond (a garbage record timestamp, say) must not
// overflow the refresh or adaptation schedule: the filter clamps it to kMaxFilterTime
// and forgets everything, as any jump far beyond the window does.
TEST(ForgetfulBloomFilter, AdvancesToTheLastMillisecondOfTheClock) {
  for (bool adaptive : {false, true}) {
    FbfConfig c = ValidConfig();
    c.adaptive = adaptive;
    ForgetfulBloomFilter f = MakeFbf(c);
    ASSERT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
    f.AdvanceTo(Millis::max());
    EXPECT_EQ(f.now(), kMaxFilterTime);
    EXPECT_FALSE(f.Contains(Id(1)));
  }
}

}  // namespace
}  // namespace oncecount::filter
