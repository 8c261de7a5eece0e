#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "processor/filter/fingerprint/fingerprint_sizing.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {
namespace {

// Distinct n give distinct ids: SeededMix is a bijection of its input for a fixed seed.
IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xF1F1)};
}

template <class W>
BasicFingerprintFilter<W> Make(const FingerprintFilterConfig& config, Millis start = Millis{0}) {
  auto created = BasicFingerprintFilter<W>::Create(config, start);
  if (!created.ok()) ADD_FAILURE() << created.error();
  return std::move(created).value();
}

// A small filter: eight slices of 16 groups (64-bit buckets, four 16-bit
// fingerprints each), so that a few hundred ids fill a slice, bursts make it grow and
// kicks fail, and the ring needs more than one plane.
FingerprintFilterConfig Small64() {
  FingerprintFilterConfig c;
  c.bucket_bits = 64;
  c.fingerprint_bits = 16;
  c.groups = 16;
  c.max_load = 0.9;
  c.window_slices = 7;
  c.refresh = Millis{1000};
  c.target_fpp = 1e-3;
  return c;
}

FingerprintFilterConfig Small128() {
  FingerprintFilterConfig c = Small64();
  c.bucket_bits = 128;
  c.fingerprint_bits = 25;
  c.window_slices = 3;
  c.refresh = Millis{2000};
  c.max_load = 0.84;
  return c;
}

// ---------------------------------------------------------------------------------
// A random workload with a memory, as the Bloom FBF's test drives it: phases of idle
// seconds, low and steady load, bursts far above the sizing (growth, failed kicks,
// more planes), clock jumps of a few periods, of more than the window and of more
// than 4096 periods, batches, and standbys taking over from a decoded state. Every
// id the filter took (kNew) is checked again with Contains at a random age inside
// the window and at exactly the window's end. The first id not found stops the run.

struct Exercised {
  uint64_t accepted = 0;
  uint64_t checks = 0;
  uint64_t failovers = 0;
  uint64_t jumps = 0;
  uint32_t most_planes = 0;
  uint32_t most_slices = 0;
  uint64_t kicks_failed = 0;
  bool grew = false;
  bool shrank = false;
};

template <class W>
class WindowDriver {
 public:
  WindowDriver(const FingerprintFilterConfig& config, uint64_t seed)
      : rng_(seed), first_groups_(config.groups) {
    filter_ = std::make_unique<BasicFingerprintFilter<W>>(Make<W>(config));
    window_ = filter_->window();
  }

  void Run(int phases) {
    for (int p = 0; p < phases && !::testing::Test::HasFatalFailure(); ++p) {
      const int kind = Uniform(0, 99);
      if (kind < 6) {
        Jump(Uniform(0, 2));
      } else if (kind < 10) {
        Failover();
      } else if (kind < 30) {
        Seconds(Uniform(1, 8), 0, 0);
      } else if (kind < 55) {
        Seconds(Uniform(1, 6), 1, 60);
      } else if (kind < 85) {
        Seconds(Uniform(1, 6), 60, 250);
      } else {
        Seconds(Uniform(1, 3), 1000, 5000);
      }
    }
    Advance(now_ + window_ + Millis{1});  // every pending check falls due
  }

  const Exercised& exercised() const { return e_; }

 private:
  struct Pending {
    Millis due;
    uint64_t n;
    bool operator>(const Pending& o) const { return due > o.due; }
  };

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  BasicFingerprintFilter<W>& filter() { return *filter_; }

  void Seconds(int seconds, int lo, int hi) {
    for (int s = 0; s < seconds && !::testing::Test::HasFatalFailure(); ++s) {
      const int rate = Uniform(lo, hi);
      const Millis start = now_;
      // Batches of ids at one time (as a shard feeds them) or one id at a time.
      const int batch = Uniform(0, 1) == 0 ? 1 : Uniform(2, 64);
      for (int done = 0; done < rate && !::testing::Test::HasFatalFailure(); done += batch) {
        Advance(start + Millis{1000LL * done / std::max(rate, 1)});
        Insert(std::min(batch, rate - done));
      }
      Advance(start + Millis{1000});
    }
  }

  void Insert(int count) {
    std::vector<IdHash> ids;
    for (int i = 0; i < count; ++i) ids.push_back(Id(next_ + static_cast<uint64_t>(i)));
    std::vector<Verdict> verdicts(ids.size());
    if (count == 1) {
      verdicts[0] = filter().TestAndInsert(ids[0]);
    } else {
      filter().TestAndInsertBatch(ids, verdicts);
    }
    for (int i = 0; i < count; ++i) {
      const uint64_t n = next_++;
      if (verdicts[static_cast<size_t>(i)] != Verdict::kNew) continue;  // a false positive
      ++e_.accepted;
      pending_.push({now_ + window_, n});
      pending_.push({now_ + Millis{Uniform(0, static_cast<int>(window_.count()))}, n});
    }
    Observe();
  }

  void Observe() {
    e_.most_planes = std::max(e_.most_planes, filter().plane_count());
    e_.most_slices = std::max(e_.most_slices, filter().slice_count());
    e_.kicks_failed = std::max(e_.kicks_failed, filter().kicks_failed());
    if (filter().next_groups() > first_groups_) e_.grew = true;
    if (e_.grew && filter().next_groups() < largest_groups_) e_.shrank = true;
    largest_groups_ = std::max(largest_groups_, filter().next_groups());
  }

  // Runs every check due by `to` at its exact time, then moves the clock to `to`.
  void Advance(Millis to) {
    while (!pending_.empty() && pending_.top().due <= to) {
      const Pending p = pending_.top();
      pending_.pop();
      SetClock(p.due);
      ++e_.checks;
      ASSERT_TRUE(filter().Contains(Id(p.n)))
          << "id " << p.n << " forgotten inside the window at " << now_.count() << " ms";
    }
    SetClock(to);
  }

  void SetClock(Millis t) {
    if (t <= now_) return;
    filter().AdvanceTo(t);
    now_ = t;
    Observe();
  }

  void Jump(int size) {
    ++e_.jumps;
    const Millis t = filter().config().refresh;
    const Millis by = size == 0 ? 3 * t : size == 1 ? window_ + 5 * t : 5000 * t;
    Advance(now_ + by);
  }

  // A standby takes over from the state the active serialized.
  void Failover() {
    ++e_.failovers;
    std::string state;
    filter().Serialize(state);
    auto decoded = DecodeDedupFilter(state);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    auto* typed = dynamic_cast<BasicFingerprintFilter<W>*>(decoded->get());
    ASSERT_NE(typed, nullptr);
    ASSERT_EQ(typed->Digest(), filter().Digest());
    filter_.reset(typed);
    decoded->release();
  }

  std::mt19937_64 rng_;
  std::unique_ptr<BasicFingerprintFilter<W>> filter_;
  Millis window_{0};
  Millis now_{0};
  uint64_t next_ = 0;
  uint64_t first_groups_;
  uint64_t largest_groups_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  Exercised e_;
};

// Seeds 1 and 2 adapt (the slices grow and shrink); seed 3 does not, so its bursts
// fill slices until kicks fail.
template <class W>
void DriveAndCheck(FingerprintFilterConfig config) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    config.adaptive = seed != 3;
    WindowDriver<W> driver(config, seed);
    driver.Run(120);
    if (::testing::Test::HasFatalFailure()) return;
    const Exercised& e = driver.exercised();
    // The run went where it was meant to.
    EXPECT_GT(e.accepted, 10000u);
    EXPECT_GT(e.checks, 2 * e.accepted - 1);
    EXPECT_GT(e.failovers, 0u);
    EXPECT_GT(e.jumps, 0u);
    EXPECT_GT(e.most_planes, 1u);
    if (config.adaptive) {
      EXPECT_TRUE(e.grew) << "seed " << seed;
      EXPECT_TRUE(e.shrank) << "seed " << seed;
    } else {
      EXPECT_GT(e.kicks_failed, 0u);
    }
  }
}

TEST(FingerprintFilter, NeverForgetsAnIdInsideTheWindowUnderARandomLoad64) {
  DriveAndCheck<uint64_t>(Small64());
}

TEST(FingerprintFilter, NeverForgetsAnIdInsideTheWindowUnderARandomLoad128) {
  DriveAndCheck<Bucket128>(Small128());
}

TEST(FingerprintFilter, ForgetsAnIdOnceItsSliceLeavesTheWindow) {
  auto f = Make<uint64_t>(Small64());
  ASSERT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(f.window());
  EXPECT_TRUE(f.Contains(Id(1)));
  // Its slice (the first period's) goes at the first refresh past the window.
  f.AdvanceTo(f.window() + f.config().refresh);
  EXPECT_FALSE(f.Contains(Id(1)));
  // With no id since, one empty present is left.
  EXPECT_EQ(f.slice_count(), 1u);
}

TEST(FingerprintFilter, SaysARetryIsNearTheEdgeWhenOnlyTheOldestSliceHoldsIt) {
  auto f = Make<uint64_t>(Small64());
  ASSERT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  f.AdvanceTo(Millis{2000});
  ASSERT_EQ(f.TestAndInsert(Id(2)), Verdict::kNew);
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kDuplicateNearEdge);
  EXPECT_EQ(f.TestAndInsert(Id(2)), Verdict::kDuplicate);
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.duplicates, 2u);
  EXPECT_EQ(s.near_edge_duplicates, 1u);
}

TEST(FingerprintFilter, KeepsEveryIdOfABurstFarAboveItsSizingAtOneInstant) {
  FingerprintFilterConfig c = Small128();
  c.adaptive = false;  // no resizing: only failed kicks make room
  auto f = Make<Bucket128>(c);
  for (uint64_t n = 0; n < 5000; ++n) ASSERT_NE(f.TestAndInsert(Id(n)), Verdict::kDuplicate);
  EXPECT_GT(f.kicks_failed(), 0u);
  EXPECT_GT(f.plane_count(), 1u);
  uint64_t missing = 0;
  for (uint64_t n = 0; n < 5000; ++n) missing += f.Contains(Id(n)) ? 0 : 1;
  EXPECT_EQ(missing, 0u);
  const std::vector<uint64_t> counted = f.CountFingerprints();
  uint64_t held = 0;
  for (uint64_t c2 : counted) held += c2;
  const FilterSummary s = f.Summary();
  EXPECT_EQ(held, s.inserted);
}

TEST(FingerprintFilter, GrowsTheSlicesToComeWhenThePresentFillsEarlyAndShrinksWhenCalm) {
  auto f = Make<uint64_t>(Small64());
  const uint64_t first = f.next_groups();
  uint64_t n = 0;
  // Four times the sized load for a second.
  for (int ms = 0; ms < 1000; ms += 4) {
    f.AdvanceTo(Millis{ms});
    for (int i = 0; i < 1; ++i) f.TestAndInsert(Id(n++));
  }
  EXPECT_GE(f.next_groups(), 4 * first);
  EXPECT_GT(f.plane_count(), 1u);
  // A quiet stretch: the size comes back down a step at a time, and the old planes go.
  for (int s = 1; s < 60; ++s) {
    f.AdvanceTo(Millis{1000 * s});
    f.TestAndInsert(Id(n++));
  }
  EXPECT_EQ(f.next_groups(), first);
  EXPECT_EQ(f.plane_count(), 1u);
}

// The measured rate of fresh ids taken for retries stays at the target at the worst
// point of the sized load, and the estimate matches it.
template <class W>
void CheckFppAtTheWorstPoint(double target) {
  const double rate = 20000;
  auto sized = SizeFingerprintFilter({rate, Millis{7000}, target});
  ASSERT_TRUE(sized.ok()) << sized.error();
  ASSERT_EQ(sized->bucket_bits, kWordBits<W>);
  auto f = Make<W>(sized.value());
  const Millis t = sized->refresh;
  uint64_t n = 0;
  const int periods = 3 * static_cast<int>(sized->window_slices + 1);
  const auto per_ms = static_cast<uint64_t>(rate / 1000);
  for (int64_t ms = 0; ms < periods * t.count(); ++ms) {
    f.AdvanceTo(Millis{ms});
    for (uint64_t i = 0; i < per_ms; ++i) f.TestAndInsert(Id(n++));
  }
  ASSERT_EQ(f.slice_count(), sized->window_slices + 1);  // the worst point: all full
  // Enough never-inserted ids that the target predicts a thousand positives, up to
  // 2e7 (a few hundred at 1e-5); at the default 1e-6, 1e8 (about a hundred; a second
  // or two).
  const uint64_t queries =
      static_cast<uint64_t>(std::min(target >= 1e-5 ? 2e7 : 1e8, 1000 / target));
  uint64_t positives = 0;
  for (uint64_t q = 0; q < queries; ++q) positives += f.Contains(Id((1ull << 62) + q)) ? 1 : 0;
  // The estimate is at most the target, and the count of positives is what the
  // estimate predicts, within five standard deviations of a Poisson count.
  const double predicted = f.EstimatedFpp() * static_cast<double>(queries);
  EXPECT_LE(f.EstimatedFpp(), target);
  EXPECT_NEAR(static_cast<double>(positives), predicted, 5 * std::sqrt(predicted));
  EXPECT_GT(predicted, 50);
  EXPECT_EQ(f.early_refreshes(), 0u);
  EXPECT_EQ(f.next_groups(), sized->groups);  // the sized load never resizes
}

TEST(FingerprintFilter, StaysAtTheTargetAtTheWorstPointOfTheSizedLoad64) {
  CheckFppAtTheWorstPoint<uint64_t>(1e-3);
}

TEST(FingerprintFilter, StaysAtTheTargetAtTheWorstPointOfTheSizedLoad128) {
  CheckFppAtTheWorstPoint<Bucket128>(1e-5);
}

// The service's default target. The worst point (every slice of the window full) is
// the peak of the sized load's cycle, so the rate holds in every second of it.
TEST(FingerprintFilter, StaysAtTheDefaultTargetAtTheWorstPointOfTheSizedLoad) {
  CheckFppAtTheWorstPoint<Bucket128>(1e-6);
}

// Feeds `f` for `seconds` on a clock of milliseconds: at each one, as one batch, the
// fresh ids that `ids_per_second(s)` (s: seconds into the run) owes by then; then
// `after(ms)`.
template <class W, class Rate, class After>
void FeedByTheMillisecond(BasicFingerprintFilter<W>& f, int seconds, Rate ids_per_second,
                          After after) {
  double carry = 0;
  uint64_t n = 0;
  std::vector<IdHash> batch;
  std::vector<Verdict> verdicts;
  for (int64_t ms = 1; ms <= int64_t{seconds} * 1000; ++ms) {
    f.AdvanceTo(Millis{ms});
    carry += ids_per_second(static_cast<double>(ms - 1) / 1000) / 1000;
    batch.clear();
    for (; carry >= 1; carry -= 1) batch.push_back(Id(n++));
    verdicts.resize(batch.size());
    f.TestAndInsertBatch(batch, verdicts);
    after(ms);
  }
}

// A load that rises far above the sizing, as the paper's workloads of Figs. 11 to 13
// do, and the estimate (the sum of the slices' rates, exact: see the test above) at
// every 50 ms. `rate_at` gives ids per second at a second into the run.
template <class W, class Rate>
double PeakEstimateUnder(double target, Rate rate_at, int seconds) {
  const double sized_rate = 200;
  auto sized = SizeFingerprintFilter({sized_rate, Millis{7000}, target});
  EXPECT_TRUE(sized.ok()) << sized.error();
  EXPECT_EQ(sized->bucket_bits, kWordBits<W>);
  auto f = Make<W>(sized.value());
  double peak = 0;
  FeedByTheMillisecond(
      f, seconds, [&](double s) { return rate_at(s) * sized_rate; },
      [&](int64_t ms) {
        if (ms % 50 == 0) peak = std::max(peak, f.EstimatedFpp() / target);
      });
  EXPECT_GT(f.next_groups(), 8 * sized->groups);  // it did have to grow
  return peak;
}

// In multiples of the sized rate: x1.15 a second (Fig. 11), a steady rise (Fig. 12),
// and a rise, a fall and a rise again (Fig. 13).
double Exponential(double s) {
  return std::pow(1.15, s);
}
double Linear(double s) {
  return 1 + s;
}
double RiseFallRise(double s) {
  return s < 16   ? 1 + 0.7 * s
         : s < 24 ? 11.5 - 1.2 * (s - 15)
                  : std::min(1.9 + 0.9 * (s - 24), 20.0);
}

TEST(FingerprintFilter, KeepsTheEstimateWithinTheTargetWhileTheLoadRises64) {
  EXPECT_LE(PeakEstimateUnder<uint64_t>(1e-3, Exponential, 30), 1.0);
  EXPECT_LE(PeakEstimateUnder<uint64_t>(1e-3, Linear, 40), 1.0);
  EXPECT_LE(PeakEstimateUnder<uint64_t>(1e-3, RiseFallRise, 60), 1.0);
}

TEST(FingerprintFilter, KeepsTheEstimateWithinTheTargetWhileTheLoadRises128) {
  EXPECT_LE(PeakEstimateUnder<Bucket128>(1e-6, Exponential, 30), 1.0);
  EXPECT_LE(PeakEstimateUnder<Bucket128>(1e-6, Linear, 40), 1.0);
  EXPECT_LE(PeakEstimateUnder<Bucket128>(1e-6, RiseFallRise, 60), 1.0);
}

// ---------------------------------------------------------------------------------
// Memory follows the load (issue 29): under rising, bursty and falling loads the
// planes never take more than 1.5 times a filter sized for the schedule's peak rate
// (one whole plane of its groups), and the estimate stays within the target.

struct MemoryRun {
  uint64_t first_bytes = 0;       // the plane of the sizing
  uint64_t peak_sized_bytes = 0;  // the plane of a filter sized for the peak rate
  uint64_t peak_bytes = 0;        // the most the planes held at any millisecond
  uint64_t final_bytes = 0;
  double peak_estimate = 0;  // the estimate's most, as a multiple of the target
};

// `multiple(s)`: the rate at second s, in multiples of `rate`, the sizing's.
// Prints one line per run (docs/BENCHMARKS.md quotes them).
template <class Multiple>
MemoryRun RunMemorySchedule(const char* name, double rate, double target, Multiple multiple,
                            int seconds) {
  const Millis window{7000};
  auto sized = SizeFingerprintFilter({rate, window, target});
  EXPECT_TRUE(sized.ok()) << sized.error();
  MemoryRun run;
  run.first_bytes = sized->groups * 64;
  double peak_rate = 0;
  const auto drive = [&]<class W>(BasicFingerprintFilter<W> f) {
    const auto ids_per_second = [&](double s) {
      const double now_rate = rate * multiple(s);
      peak_rate = std::max(peak_rate, now_rate);
      return now_rate;
    };
    FeedByTheMillisecond(f, seconds, ids_per_second, [&](int64_t ms) {
      run.peak_bytes = std::max(run.peak_bytes, f.plane_bytes());
      if (ms % 50 == 0) run.peak_estimate = std::max(run.peak_estimate, f.EstimatedFpp() / target);
    });
    run.final_bytes = f.plane_bytes();
  };
  if (sized->bucket_bits == 128) {
    drive(Make<Bucket128>(sized.value()));
  } else {
    drive(Make<uint64_t>(sized.value()));
  }
  auto peak = SizeFingerprintFilter({peak_rate, window, target});
  EXPECT_TRUE(peak.ok()) << peak.error();
  run.peak_sized_bytes = peak->groups * 64;
  std::printf(
      "[ memory ] %-12s target %g: peak %.2fx a filter sized for the peak rate, "
      "last %.2fx the first sizing, estimate at most %.3f of the target\n",
      name, target, static_cast<double>(run.peak_bytes) / run.peak_sized_bytes,
      static_cast<double>(run.final_bytes) / run.first_bytes, run.peak_estimate);
  return run;
}

// The schedule: sized for 20,000 ids/s, fed that for 14 s and 6% more after.
double SixPercentUp(double s) {
  return s < 14 ? 1 : 1.06;
}
// A rise to three times the sizing over half a minute.
double SteadyRise(double s) {
  return 1 + std::min(s, 30.0) / 15;
}
// One second at three times the sizing every ten.
double Bursts(double s) {
  return static_cast<int>(s) % 10 == 5 ? 3 : 1;
}
// A fall to a third of the sizing.
double Fall(double s) {
  return s < 14 ? 1 : 0.3;
}

class FingerprintMemory : public ::testing::TestWithParam<double> {};

TEST_P(FingerprintMemory, ASixPercentRiseCostsAboutSixPercentMoreMemory) {
  const MemoryRun run = RunMemorySchedule("6% up", 20000, GetParam(), SixPercentUp, 45);
  EXPECT_LE(static_cast<double>(run.peak_bytes), 1.5 * static_cast<double>(run.peak_sized_bytes));
  // Settled: a plane within a sixteenth (the smallest step) and the rise's 6% of the
  // sizing, where a power-of-two step cost twice and the old projection sixteen times.
  EXPECT_LE(static_cast<double>(run.final_bytes),
            1.06 * 1.07 * static_cast<double>(run.first_bytes));
  EXPECT_LE(run.peak_estimate, 1.0);
}

TEST_P(FingerprintMemory, StaysWithinOneAndAHalfOfThePeakSizingWhileTheLoadRises) {
  const MemoryRun run = RunMemorySchedule("rise to 3x", 20000, GetParam(), SteadyRise, 45);
  EXPECT_LE(static_cast<double>(run.peak_bytes), 1.5 * static_cast<double>(run.peak_sized_bytes));
  EXPECT_GT(run.final_bytes, 2 * run.first_bytes);  // it did have to grow
  EXPECT_LE(run.peak_estimate, 1.0);
}

TEST_P(FingerprintMemory, StaysWithinOneAndAHalfOfThePeakSizingUnderBursts) {
  const MemoryRun run = RunMemorySchedule("3x bursts", 20000, GetParam(), Bursts, 45);
  EXPECT_LE(static_cast<double>(run.peak_bytes), 1.5 * static_cast<double>(run.peak_sized_bytes));
  EXPECT_LE(run.peak_estimate, 1.0);
}

TEST_P(FingerprintMemory, NeverGrowsWhenTheLoadFallsAndKeepsItsSizing) {
  const MemoryRun run = RunMemorySchedule("fall to 0.3x", 20000, GetParam(), Fall, 45);
  EXPECT_EQ(run.peak_bytes, run.first_bytes);
  EXPECT_EQ(run.final_bytes, run.first_bytes);
  EXPECT_LE(run.peak_estimate, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Targets, FingerprintMemory, ::testing::Values(1e-3, 1e-6, 1e-9),
                         [](const ::testing::TestParamInfo<double>& param) {
                           return param.param == 1e-3   ? std::string("OneInAThousand")
                                  : param.param == 1e-6 ? std::string("OneInAMillion")
                                                        : std::string("OneInABillion");
                         });

// After a rise, a steady load settles on one size: one plane, the window's slices,
// and no further resizing (a slice pushed early holds a period's tail, which must
// not read as a calm load).
TEST(FingerprintFilter, SettlesOnOneSizeUnderASteadyLoadAboveItsSizing) {
  auto sized = SizeFingerprintFilter({200, Millis{7000}, 1e-3});
  ASSERT_TRUE(sized.ok()) << sized.error();
  auto f = Make<uint64_t>(sized.value());
  uint64_t n = 0;
  uint64_t settled = 0;
  for (int64_t ms = 1; ms <= 60000; ++ms) {
    f.AdvanceTo(Millis{ms});
    for (int i = 0; i < 4; ++i) f.TestAndInsert(Id(n++));  // 4000 ids/s, 20x the sizing
    if (ms == 30000) settled = f.next_groups();
    if (ms > 30000) {
      ASSERT_EQ(f.next_groups(), settled) << "at " << ms << " ms";
    }
  }
  EXPECT_GT(settled, sized->groups);
  EXPECT_EQ(f.plane_count(), 1u);
  EXPECT_EQ(f.slice_count(), sized->window_slices + 1);
  EXPECT_LE(f.EstimatedFpp(), 1e-3);
}

// The verdicts and the state (digest) of one run of a fixed workload: through the
// batch path of `isa`, or one id at a time (nullopt).
struct PathRun {
  std::vector<Verdict> verdicts;
  std::string digest;
};

template <class W>
PathRun RunPath(const FingerprintFilterConfig& config,
                std::optional<typename BasicFingerprintFilter<W>::Isa> isa) {
  auto f = Make<W>(config);
  PathRun run;
  std::mt19937_64 rng(4);
  for (int b = 0; b < 400; ++b) {
    f.AdvanceTo(Millis{b * 37});
    std::vector<IdHash> ids(static_cast<size_t>(rng() % 80 + 1));
    // A third are retries of recent ids.
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = Id(rng() % 3 == 0 ? rng() % (static_cast<uint64_t>(b) * 40 + 1)
                                 : static_cast<uint64_t>(b) * 40 + i);
    }
    std::vector<Verdict> v(ids.size());
    if (isa) {
      f.TestAndInsertBatchWith(*isa, ids, v);
    } else {
      for (size_t i = 0; i < ids.size(); ++i) v[i] = f.TestAndInsert(ids[i]);
    }
    run.verdicts.insert(run.verdicts.end(), v.begin(), v.end());
  }
  EXPECT_GT(f.plane_count() + f.early_refreshes(), 1u);
  if (config.max_load == 1.0) {
    EXPECT_GT(f.kicks_failed(), 0u) << "the path of a fingerprint no bucket takes";
  }
  run.digest = f.Digest();
  return run;
}

// The batch path of `isa` reaches the verdicts and the state of one id at a time.
template <class W>
void ExpectBatchPathAgrees(typename BasicFingerprintFilter<W>::Isa isa,
                           const FingerprintFilterConfig& config) {
  const PathRun one_at_a_time = RunPath<W>(config, std::nullopt);
  const PathRun batched = RunPath<W>(config, isa);
  EXPECT_EQ(batched.digest, one_at_a_time.digest);
  EXPECT_EQ(batched.verdicts, one_at_a_time.verdicts);
}

// One test per instruction set, reported as skipped (not passed) on a CPU without it.
class FingerprintBatchPath : public ::testing::TestWithParam<int> {
 protected:
  template <class W>
  typename BasicFingerprintFilter<W>::Isa IsaOf() const {
    return static_cast<typename BasicFingerprintFilter<W>::Isa>(GetParam());
  }
};

TEST_P(FingerprintBatchPath, GivesTheVerdictsAndStateOfOneIdAtATime) {
  if (!BasicFingerprintFilter<uint64_t>::CpuHas(IsaOf<uint64_t>())) {
    GTEST_SKIP() << "this CPU lacks the instruction set";
  }
  ExpectBatchPathAgrees<uint64_t>(IsaOf<uint64_t>(), Small64());
  ExpectBatchPathAgrees<Bucket128>(IsaOf<Bucket128>(), Small128());
}

// Slices filled to every field: kicks fail before a present is full, in the batch
// loop's common case too.
TEST_P(FingerprintBatchPath, GivesTheStateOfOneIdAtATimeWhenKicksFail) {
  if (!BasicFingerprintFilter<uint64_t>::CpuHas(IsaOf<uint64_t>())) {
    GTEST_SKIP() << "this CPU lacks the instruction set";
  }
  FingerprintFilterConfig c64 = Small64();
  c64.max_load = 1.0;
  ExpectBatchPathAgrees<uint64_t>(IsaOf<uint64_t>(), c64);
  FingerprintFilterConfig c128 = Small128();
  c128.max_load = 1.0;
  ExpectBatchPathAgrees<Bucket128>(IsaOf<Bucket128>(), c128);
}

using Isa64 = BasicFingerprintFilter<uint64_t>::Isa;
INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, FingerprintBatchPath,
                         ::testing::Values(static_cast<int>(Isa64::kPortable),
                                           static_cast<int>(Isa64::kAvx2),
                                           static_cast<int>(Isa64::kAvx512)),
                         [](const ::testing::TestParamInfo<int>& param) -> std::string {
                           switch (static_cast<Isa64>(param.param)) {
                             case Isa64::kPortable:
                               return "portable";
                             case Isa64::kAvx2:
                               return "avx2";
                             case Isa64::kAvx512:
                               return "avx512";
                           }
                           return "unknown";
                         });

TEST(FingerprintFilter, SummarizesItsSlicesAndMemory) {
  auto f = Make<uint64_t>(Small64());  // 57 ids fill a slice
  for (uint64_t n = 0; n < 50; ++n) f.TestAndInsert(Id(n));
  f.AdvanceTo(Millis{1000});
  for (uint64_t n = 50; n < 90; ++n) f.TestAndInsert(Id(n));
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.mode, DedupMode::kFbf);
  EXPECT_EQ(s.inserted, 90u);
  EXPECT_EQ(s.filters, 2u);
  ASSERT_EQ(s.constituents.size(), 2u);
  EXPECT_EQ(s.constituents[0].inserted, 40u);  // the present first
  EXPECT_EQ(s.constituents[1].inserted, 50u);
  EXPECT_DOUBLE_EQ(s.constituents[1].fill, 50.0 / (16 * 4));
  // Two slices, each a slot of 16 64-bit buckets: the plane is as wide as they are.
  EXPECT_EQ(s.bits_total, 2u * 16 * 64);
  EXPECT_EQ(s.refresh_ms, 1000);
  EXPECT_EQ(s.window_ms_guaranteed, 7000);
  // Two buckets of 50 / 16 fingerprints each, at 1 / 65535 a fingerprint; plus the
  // present's 40.
  const double expected = 1 - (1 - 2.0 * 50 / 16 / 65535) * (1 - 2.0 * 40 / 16 / 65535);
  EXPECT_NEAR(s.estimated_fpp, expected, 1e-12);
}

TEST(FingerprintFilter, RejectsConfigurationsItCannotRun) {
  const auto rejected = [](auto edit) {
    FingerprintFilterConfig c = Small64();
    edit(c);
    return !FingerprintFilter64::Create(c, Millis{0}).ok();
  };
  EXPECT_TRUE(rejected([](auto& c) { c.bucket_bits = 96; }));
  EXPECT_TRUE(rejected([](auto& c) { c.bucket_bits = 128; }));  // a 64-bit filter
  EXPECT_TRUE(rejected([](auto& c) { c.fingerprint_bits = 7; }));
  EXPECT_TRUE(rejected([](auto& c) { c.fingerprint_bits = 33; }));
  EXPECT_TRUE(rejected([](auto& c) { c.groups = 0; }));
  EXPECT_TRUE(rejected([](auto& c) { c.groups = (uint64_t{1} << 32) + 1; }));
  EXPECT_TRUE(rejected([](auto& c) { c.max_load = 0; }));
  EXPECT_TRUE(rejected([](auto& c) { c.max_load = 1.5; }));
  EXPECT_TRUE(rejected([](auto& c) { c.window_slices = 0; }));
  EXPECT_TRUE(rejected([](auto& c) { c.max_slices = 7; }));
  EXPECT_TRUE(rejected([](auto& c) { c.refresh = Millis{0}; }));
  EXPECT_TRUE(rejected([](auto& c) { c.window = Millis{7001}; }));
  EXPECT_TRUE(rejected([](auto& c) { c.target_fpp = 0; }));
  EXPECT_FALSE(rejected([](auto&) {}));
}

TEST(FingerprintFilter, MakesTheInstantiationItsBucketsAsk) {
  auto made = MakeFingerprintFilter(Small128(), Millis{0});
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_NE(dynamic_cast<FingerprintFilter128*>(made->get()), nullptr);
}

}  // namespace
}  // namespace oncecount::filter
