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
// DecideResize is Algorithm 3 as published. With the window kept as a hard rule
// it overshoots the target badly (docs/paper-reproduction.md, Fig. 13): while the
// load is low it lengthens the refresh period, so the first burst fills long
// slices; it then doubles the filters every second, which lowers nothing for the
// pairs check (its FPP depends on the ids per filter, not on the filter count),
// while the period shortens one step per second.
//
// DecideGuardedResize, the default, keeps Algorithm 3's structure with three
// changes:
//  - a projection gate: the model FPP at the worst point of a steady load at the
//    recent insert rate, for a given shape. Scale-up runs only while the current
//    shape's projection is at or above 0.9 x target (otherwise the estimate is high
//    only because earlier, fuller filters are still in the ring), and scale-down
//    only while the smaller shape's projection stays at or below
//    kScaleDownHeadroom x target;
//  - scale-up halves the refresh period (at least one step) and adds the filters
//    the window then needs (about double when the shape was tight): each step
//    halves the ids per filter and keeps the window covered;
//  - the FBF passes its initial refresh period as max_refresh, so quiet periods
//    cannot stretch slices beyond what the filters were sized for.
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
