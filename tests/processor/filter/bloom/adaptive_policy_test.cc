#include "processor/filter/bloom/adaptive_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace oncecount::filter {
namespace {

AdaptiveLimits Limits() {
  AdaptiveLimits l;
  l.target_fpp = 1e-3;
  l.window = Millis{3000};
  l.refresh_step = Millis{100};
  l.min_refresh = Millis{1};
  l.min_filters = 3;
  l.max_filters = 64;
  l.non_past_filters = 2;
  return l;
}

// Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
// "literal" + std::string&&.
std::string Show(const AdaptiveShape& s) {
  std::string out = "{";
  out.append(std::to_string(s.filters)).append(" filters, ");
  out.append(std::to_string(s.refresh.count())).append(" ms}");
  return out;
}

TEST(NominalWindow, IsPastFiltersPlusOneTimesTheRefreshPeriod) {
  EXPECT_EQ(NominalWindow({10, Millis{500}}, 2), Millis{4500});  // 8 past filters
  EXPECT_EQ(NominalWindow({11, Millis{500}}, 3), Millis{4500});  // pairs: one more filter
  EXPECT_EQ(NominalWindow({3, Millis{700}}, 3), Millis{700});    // no past filter at all
  EXPECT_EQ(NominalWindow({2, Millis{700}}, 3), Millis{0});      // not a ring
}

// ---------------------------------------------------------------------------------
// Algorithm 3 as published, on hand-picked shapes.

TEST(DecideResize, DoublesTheFiltersAndShortensThePeriodWhenTheEstimateNearsTheTarget) {
  const AdaptiveLimits l = Limits();
  const AdaptiveDecision d = DecideResize({4, Millis{1000}}, 0.9 * l.target_fpp, l);
  EXPECT_EQ(d.action, AdaptiveAction::kScaleUp);
  EXPECT_EQ(d.shape, (AdaptiveShape{8, Millis{900}})) << Show(d.shape);
}

TEST(DecideResize, CapsTheFilterCountAtTheMaximum) {
  const AdaptiveDecision d = DecideResize({40, Millis{1000}}, 1.0, Limits());
  EXPECT_EQ(d.action, AdaptiveAction::kScaleUp);
  EXPECT_EQ(d.shape, (AdaptiveShape{64, Millis{900}})) << Show(d.shape);
}

TEST(DecideResize, DoesNotShortenThePeriodWhenTheDoubledRingWouldNotCoverTheWindow) {
  AdaptiveLimits l = Limits();
  l.window = Millis{30000};  // 32 filters at 1000 ms hold 31000 ms
  l.refresh_step = Millis{600};
  // 64 filters at 400 ms would hold (62 + 1) * 400 = 25200 ms < 30000 ms: the period stays.
  const AdaptiveDecision d = DecideResize({32, Millis{1000}}, 1.0, l);
  EXPECT_EQ(d.action, AdaptiveAction::kScaleUp);
  EXPECT_EQ(d.shape, (AdaptiveShape{64, Millis{1000}})) << Show(d.shape);
}

TEST(DecideResize, ReportsSaturationWhenNothingCanGrowOrShrink) {
  AdaptiveLimits l = Limits();
  l.window = Millis{63 * 1000};
  const AdaptiveDecision d = DecideResize({64, Millis{1000}}, 1.0, l);
  EXPECT_EQ(d.action, AdaptiveAction::kSaturated);
  EXPECT_EQ(d.shape, (AdaptiveShape{64, Millis{1000}}));
  l.window = Millis{100};
  l.min_refresh = Millis{1000};
  EXPECT_EQ(DecideResize({64, Millis{1000}}, 1.0, l).action, AdaptiveAction::kSaturated);
}

TEST(DecideResize, DropsAFilterAndLengthensThePeriodWhenTheEstimateFalls) {
  const AdaptiveLimits l = Limits();
  const AdaptiveDecision d = DecideResize({8, Millis{900}}, 0.1 * l.target_fpp, l);
  EXPECT_EQ(d.action, AdaptiveAction::kScaleDown);
  EXPECT_EQ(d.shape, (AdaptiveShape{7, Millis{1000}})) << Show(d.shape);
}

TEST(DecideResize, KeepsTheFiltersWhenOneFewerWouldNotCoverTheWindow) {
  // 3 filters (1 past) at 1100 ms hold 2200 ms < 3000 ms: only the period grows.
  const AdaptiveDecision d = DecideResize({4, Millis{1000}}, 0.0, Limits());
  EXPECT_EQ(d.action, AdaptiveAction::kScaleDown);
  EXPECT_EQ(d.shape, (AdaptiveShape{4, Millis{1100}})) << Show(d.shape);
}

TEST(DecideResize, NeverGoesBelowTheMinimumFilterCount) {
  AdaptiveLimits l = Limits();
  l.window = Millis{100};
  const AdaptiveDecision d = DecideResize({3, Millis{1000}}, 0.0, l);
  EXPECT_EQ(d.shape.filters, 3u);
}

TEST(DecideResize, StopsLengtheningThePeriodAtTheWindowByDefault) {
  AdaptiveLimits l = Limits();
  // At the minimum filter count with the period already at the window: nothing to do.
  EXPECT_EQ(DecideResize({3, Millis{3000}}, 0.0, l).action, AdaptiveAction::kNone);
  const AdaptiveDecision d = DecideResize({3, Millis{2950}}, 0.0, l);
  EXPECT_EQ(d.shape, (AdaptiveShape{3, Millis{3000}})) << Show(d.shape);
  // An explicit maximum wins.
  l.max_refresh = Millis{2000};
  EXPECT_EQ(DecideResize({5, Millis{1950}}, 0.0, l).shape.refresh, Millis{2000});
}

TEST(DecideResize, DoesNothingBetweenTheThresholds) {
  for (double e : {0.11e-3, 0.5e-3, 0.89e-3}) {
    const AdaptiveDecision d = DecideResize({8, Millis{900}}, e, Limits());
    EXPECT_EQ(d.action, AdaptiveAction::kNone) << e;
    EXPECT_EQ(d.shape, (AdaptiveShape{8, Millis{900}}));
  }
}

TEST(DecideResize, ActsExactlyAtThePaperThresholds) {
  const AdaptiveLimits l = Limits();
  EXPECT_EQ(DecideResize({8, Millis{900}}, 0.9 * l.target_fpp, l).action, AdaptiveAction::kScaleUp);
  EXPECT_EQ(DecideResize({8, Millis{900}}, 0.1 * l.target_fpp, l).action,
            AdaptiveAction::kScaleDown);
}

// ---------------------------------------------------------------------------------
// The projection gate.

TEST(DecideGuardedResize, ScalesUpOnlyWhileTheCurrentShapesProjectionIsAlsoHigh) {
  const AdaptiveLimits l = Limits();
  std::vector<AdaptiveShape> asked;
  double projection = 0.5e-3;
  const auto projected = [&](const AdaptiveShape& s) {
    asked.push_back(s);
    return projection;
  };
  AdaptiveDecision d = DecideGuardedResize({4, Millis{1000}}, 1.0, projected, l);
  EXPECT_EQ(d.action, AdaptiveAction::kNone);
  EXPECT_EQ(d.shape, (AdaptiveShape{4, Millis{1000}}));
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.back(), (AdaptiveShape{4, Millis{1000}}));
  projection = 0.9 * l.target_fpp;
  d = DecideGuardedResize({4, Millis{1000}}, 1.0, projected, l);
  EXPECT_EQ(d.action, AdaptiveAction::kScaleUp);
  // Halves the period (more than one 100 ms step) and adds the filters the 3000 ms
  // window needs at 500 ms: six slices, N = 5, 7 filters.
  EXPECT_EQ(d.shape, (AdaptiveShape{7, Millis{500}}));
}

TEST(DecideGuardedResize, ScalesDownOnlyWhenTheSmallerShapeStaysUnderHalfTheTarget) {
  const AdaptiveLimits l = Limits();
  std::vector<AdaptiveShape> asked;
  double projection = 0.6e-3;
  const auto projected = [&](const AdaptiveShape& s) {
    asked.push_back(s);
    return projection;
  };
  AdaptiveDecision d = DecideGuardedResize({8, Millis{900}}, 0.0, projected, l);
  EXPECT_EQ(d.action, AdaptiveAction::kNone);
  EXPECT_EQ(d.shape, (AdaptiveShape{8, Millis{900}}));
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.back(), (AdaptiveShape{7, Millis{1000}}));  // asked about the new shape
  projection = kScaleDownHeadroom * l.target_fpp;
  d = DecideGuardedResize({8, Millis{900}}, 0.0, projected, l);
  EXPECT_EQ(d.action, AdaptiveAction::kScaleDown);
  EXPECT_EQ(d.shape, (AdaptiveShape{7, Millis{1000}}));
}

TEST(DecideGuardedResize, PassesSaturationAndQuietThrough) {
  const auto projected = [](const AdaptiveShape&) { return 1.0; };
  AdaptiveLimits l = Limits();
  EXPECT_EQ(DecideGuardedResize({8, Millis{900}}, 0.5e-3, projected, l).action,
            AdaptiveAction::kNone);
  l.window = Millis{63 * 1000};
  EXPECT_EQ(DecideGuardedResize({64, Millis{1000}}, 1.0, projected, l).action,
            AdaptiveAction::kSaturated);
}

// ---------------------------------------------------------------------------------
// 2. The window invariant under long random sequences of decisions: random limits,
//    random starting shapes that cover the window, random estimates (and, for the
//    guarded policy, random projections); every returned shape is fed back in.

struct Sequencer {
  std::mt19937_64 rng;

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }

  AdaptiveLimits RandomLimits() {
    AdaptiveLimits l;
    l.target_fpp = std::pow(10.0, -static_cast<double>(Uniform(1, 9)));
    l.window = Millis{Uniform(1, 600'000)};
    l.refresh_step = Millis{Uniform(1, 5000)};
    l.min_refresh = Millis{Uniform(1, 100)};
    l.max_refresh = Uniform(0, 1) == 0 ? Millis{0} : Millis{Uniform(1, 1'000'000)};
    l.non_past_filters = static_cast<uint32_t>(Uniform(2, 3));
    l.min_filters = l.non_past_filters + static_cast<uint32_t>(Uniform(1, 4));
    l.max_filters = l.min_filters + static_cast<uint32_t>(Uniform(0, 200));
    return l;
  }

  AdaptiveShape RandomCoveringShape(const AdaptiveLimits& l) {
    AdaptiveShape s;
    s.filters = static_cast<uint32_t>(Uniform(l.min_filters, l.max_filters));
    const int64_t past = s.filters - l.non_past_filters;
    const int64_t needed = (l.window.count() + past) / (past + 1);  // ceil(window/(past+1))
    s.refresh = Millis{std::max(needed, l.min_refresh.count()) * Uniform(1, 3) + Uniform(0, 50)};
    return s;
  }

  // Estimates around both thresholds, at them exactly, and far from them.
  double RandomEstimate(double target) {
    switch (Uniform(0, 7)) {
      case 0:
        return 0.0;
      case 1:
        return 0.1 * target;
      case 2:
        return 0.9 * target;
      case 3:
        return 1.0;
      case 4:
        return target * std::uniform_real_distribution<double>(0.0, 0.1)(rng);
      case 5:
        return target * std::uniform_real_distribution<double>(0.1, 0.9)(rng);
      default:
        return target * std::uniform_real_distribution<double>(0.9, 10.0)(rng);
    }
  }
};

void ExpectLawfulStep(const AdaptiveShape& in, double estimate, const AdaptiveLimits& l,
                      const AdaptiveDecision& d) {
  const std::string where = Show(in) + " -> " + Show(d.shape) + ", estimate " +
                            std::to_string(estimate / l.target_fpp) + " x target";
  // The hard rule: the window stays covered.
  ASSERT_GE(NominalWindow(d.shape, l.non_past_filters), l.window) << where;
  ASSERT_GE(d.shape.filters, l.min_filters) << where;
  ASSERT_LE(d.shape.filters, l.max_filters) << where;
  ASSERT_GE(d.shape.refresh, l.min_refresh) << where;
  switch (d.action) {
    case AdaptiveAction::kScaleUp:
      ASSERT_GE(estimate, 0.9 * l.target_fpp) << where;
      ASSERT_GE(d.shape.filters, in.filters) << where;
      ASSERT_LE(d.shape.refresh, in.refresh) << where;
      ASSERT_FALSE(d.shape == in) << where;
      break;
    case AdaptiveAction::kScaleDown:
      ASSERT_LE(estimate, 0.1 * l.target_fpp) << where;
      ASSERT_LE(d.shape.filters, in.filters) << where;
      ASSERT_GE(d.shape.refresh, in.refresh) << where;
      ASSERT_FALSE(d.shape == in) << where;
      if (d.shape.refresh > in.refresh) {
        const Millis cap = l.max_refresh.count() > 0 ? l.max_refresh : l.window;
        ASSERT_LE(d.shape.refresh, std::max(cap, in.refresh)) << where;
      }
      break;
    case AdaptiveAction::kSaturated:
      ASSERT_GE(estimate, 0.9 * l.target_fpp) << where;
      ASSERT_EQ(d.shape, in) << where;
      break;
    case AdaptiveAction::kNone:
      ASSERT_EQ(d.shape, in) << where;
      break;
  }
}

TEST(DecideResize, KeepsTheWindowCoveredThroughLongRandomSequences) {
  int ups = 0;
  int downs = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Sequencer q{std::mt19937_64(seed)};
    const AdaptiveLimits l = q.RandomLimits();
    AdaptiveShape shape = q.RandomCoveringShape(l);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", window " + std::to_string(l.window.count()) +
                 " ms, step " + std::to_string(l.refresh_step.count()) + " ms, filters " +
                 std::to_string(l.min_filters) + ".." + std::to_string(l.max_filters));
    ASSERT_GE(NominalWindow(shape, l.non_past_filters), l.window);
    for (int step = 0; step < 400; ++step) {
      const double estimate = q.RandomEstimate(l.target_fpp);
      const AdaptiveDecision d = DecideResize(shape, estimate, l);
      ExpectLawfulStep(shape, estimate, l, d);
      if (HasFatalFailure()) return;
      ups += d.action == AdaptiveAction::kScaleUp;
      downs += d.action == AdaptiveAction::kScaleDown;
      shape = d.shape;
    }
  }
  EXPECT_GT(ups, 5000);
  EXPECT_GT(downs, 5000);
}

TEST(DecideGuardedResize, KeepsTheWindowCoveredThroughLongRandomSequences) {
  int ups = 0;
  int downs = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Sequencer q{std::mt19937_64(seed + 1000)};
    const AdaptiveLimits l = q.RandomLimits();
    AdaptiveShape shape = q.RandomCoveringShape(l);
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (int step = 0; step < 400; ++step) {
      const double estimate = q.RandomEstimate(l.target_fpp);
      const double projection = q.RandomEstimate(l.target_fpp);
      const auto projected = [&](const AdaptiveShape&) { return projection; };
      const AdaptiveDecision d = DecideGuardedResize(shape, estimate, projected, l);
      ExpectLawfulStep(shape, estimate, l, d);
      if (HasFatalFailure()) return;
      ups += d.action == AdaptiveAction::kScaleUp;
      downs += d.action == AdaptiveAction::kScaleDown;
      shape = d.shape;
    }
  }
  EXPECT_GT(ups, 2000);
  EXPECT_GT(downs, 1000);
}

}  // namespace
}  // namespace oncecount::filter
