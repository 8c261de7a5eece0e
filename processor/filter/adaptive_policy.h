// AdaptivePolicy: Algorithm 3 of the FBF paper (dynamic resizing), as a pure
// decision function, under one hard rule: the nominal guaranteed window
// (past filters + 1) * refresh period never drops below the configured window.
//
//  - estimate >= 0.9 * target: multiplicative increase of the filter count (x2) and
//    additive decrease of the refresh period (-step), the decrease only when the
//    doubled filters still cover the window;
//  - estimate <= 0.1 * target: additive decrease of the filter count (-1) and
//    additive increase of the refresh period (+step), the decrease only when the
//    remaining filters still cover the window at the longer period.
//
// DecideResize is Algorithm 3 as published. Driven by the instantaneous estimate
// alone it runs away: filters already full stay in the ring until they age out, so
// after a scale-up the estimate stays high and every second doubles the filters
// again (measured: 6 to 64 filters in four seconds when a load arrives after an
// idle start). DecideGuardedResize, which the FBF uses, adds a projection gate: the
// model FPP at the worst point of a steady load at the recent insert rate, for a
// given shape. It scales up only while the current shape's projection is also at
// or above 0.9 x target, and scales down only when the smaller shape's projection
// stays at or below kScaleDownHeadroom x target.
//
// The ForgetfulBloomFilter adds a second line of defence: it never drops a filter
// that still holds ids inside the window, whatever the policy decides.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <functional>

#include "processor/filter/dedup_filter.h"

namespace oncecount::filter {

struct AdaptiveLimits {
  double target_fpp = 1e-6;
  Millis window{0};           // the configured dedup window
  Millis refresh_step{1000};  // additive step of the refresh period
  Millis min_refresh{1};
  Millis max_refresh{0};  // 0: no upper bound beyond the window itself
  uint32_t min_filters = 3;
  uint32_t max_filters = 64;
  uint32_t non_past_filters = 2;  // future + present (+ partner for the pairs check)
};

struct AdaptiveShape {
  uint32_t filters = 0;  // total constituent filters
  Millis refresh{0};
  friend bool operator==(const AdaptiveShape&, const AdaptiveShape&) = default;
};

enum class AdaptiveAction : uint8_t { kNone, kScaleUp, kScaleDown, kSaturated };

struct AdaptiveDecision {
  AdaptiveAction action = AdaptiveAction::kNone;
  AdaptiveShape shape;
};

// Nominal guaranteed window of a shape: (past filters + 1) * refresh.
Millis NominalWindow(const AdaptiveShape& shape, uint32_t non_past_filters);

AdaptiveDecision DecideResize(const AdaptiveShape& current, double estimated_fpp,
                              const AdaptiveLimits& limits);

inline constexpr double kScaleDownHeadroom = 0.5;

// `projected_fpp(shape)`: the model FPP of `shape` at the worst point of a steady
// load at the recent insert rate.
AdaptiveDecision DecideGuardedResize(
    const AdaptiveShape& current, double estimated_fpp,
    const std::function<double(const AdaptiveShape&)>& projected_fpp, const AdaptiveLimits& limits);

}  // namespace oncecount::filter
