#include "processor/filter/bloom/adaptive_policy.h"

#include <algorithm>

namespace oncecount::filter {

Millis NominalWindow(const AdaptiveShape& shape, uint32_t non_past_filters) {
  const int64_t past = static_cast<int64_t>(shape.filters) - non_past_filters;
  if (past < 0) return Millis{0};
  return (past + 1) * shape.refresh;
}

AdaptiveDecision DecideResize(const AdaptiveShape& current, double estimated_fpp,
                              const AdaptiveLimits& limits) {
  const auto covers = [&](const AdaptiveShape& s) {
    return NominalWindow(s, limits.non_past_filters) >= limits.window;
  };
  const Millis max_refresh = limits.max_refresh.count() > 0
                                 ? limits.max_refresh
                                 : std::max(limits.window, current.refresh);

  if (estimated_fpp >= 0.9 * limits.target_fpp) {
    AdaptiveShape next = current;
    next.filters = std::min(current.filters * 2, limits.max_filters);
    next.filters = std::max(next.filters, current.filters);
    AdaptiveShape shorter = next;
    shorter.refresh = current.refresh - limits.refresh_step;
    if (shorter.refresh >= limits.min_refresh && covers(shorter)) next = shorter;
    if (next == current) return {AdaptiveAction::kSaturated, current};
    return {AdaptiveAction::kScaleUp, next};
  }
  if (estimated_fpp <= 0.1 * limits.target_fpp) {
    AdaptiveShape next = current;
    next.refresh = std::min(current.refresh + limits.refresh_step, max_refresh);
    next.refresh = std::max(next.refresh, current.refresh);
    AdaptiveShape fewer = next;
    fewer.filters = current.filters - 1;
    if (current.filters > limits.min_filters && covers(fewer)) next = fewer;
    if (next == current) return {AdaptiveAction::kNone, current};
    return {AdaptiveAction::kScaleDown, next};
  }
  return {AdaptiveAction::kNone, current};
}

AdaptiveDecision DecideGuardedResize(
    const AdaptiveShape& current, double estimated_fpp,
    const std::function<double(const AdaptiveShape&)>& projected_fpp,
    const AdaptiveLimits& limits) {
  const auto covers = [&](const AdaptiveShape& s) {
    return NominalWindow(s, limits.non_past_filters) >= limits.window;
  };
  if (estimated_fpp >= 0.9 * limits.target_fpp) {
    // The shape is fine at the current rate: the estimate is high only because
    // filters filled earlier still hold ids of the window. Wait for them to age out.
    if (projected_fpp(current) < 0.9 * limits.target_fpp) return {AdaptiveAction::kNone, current};
    // Halve the refresh period (at least one step) and add the filters the window
    // then needs: each future holds half the ids, the window stays covered, and
    // no filter is added that only stretches the ring beyond the window.
    const Millis halved = std::min(current.refresh - limits.refresh_step, current.refresh / 2);
    // The shortest period that max_filters can still stretch over the window.
    const int64_t max_slices =
        static_cast<int64_t>(limits.max_filters) - limits.non_past_filters + 1;
    const Millis tightest{max_slices > 0 ? (limits.window.count() + max_slices - 1) / max_slices
                                         : current.refresh.count()};
    AdaptiveShape next = current;
    next.refresh = std::max({limits.min_refresh, halved, tightest});
    const int64_t slices =
        (limits.window.count() + next.refresh.count() - 1) / next.refresh.count();
    const int64_t needed = limits.non_past_filters + std::max<int64_t>(slices - 1, 1);
    next.filters = static_cast<uint32_t>(
        std::max<int64_t>(current.filters, std::max<int64_t>(needed, limits.min_filters)));
    if (next.refresh >= current.refresh || next.filters > limits.max_filters || !covers(next)) {
      return {AdaptiveAction::kSaturated, current};
    }
    if (next == current) return {AdaptiveAction::kSaturated, current};
    return {AdaptiveAction::kScaleUp, next};
  }
  const AdaptiveDecision paper = DecideResize(current, estimated_fpp, limits);
  if (paper.action == AdaptiveAction::kScaleDown &&
      projected_fpp(paper.shape) > kScaleDownHeadroom * limits.target_fpp) {
    return {AdaptiveAction::kNone, current};
  }
  return paper;
}

}  // namespace oncecount::filter
