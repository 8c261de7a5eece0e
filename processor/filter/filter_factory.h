// MakeDedupFilter: builds the dedup filter of a shard from the service's `dedup`
// settings, sizing it from the expected rate, the window and the target FPP.
//
// Thread-safety: pure function; the filter it returns belongs to the caller.
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "processor/base/enum_names.h"
#include "processor/base/result.h"
#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/constituent.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/state_frame.h"

namespace oncecount::filter {

// A filter's shape given outright instead of sized from the rate, the window and the
// target.
struct BloomShape {
  uint64_t bits = 0;  // cells, for gaussian
  int hashes = 0;
};
struct FbfShape {
  uint64_t bits_per_filter = 0;  // cells per filter, for gaussian constituents
  int hashes = 0;
  uint32_t past_filters = 0;
  Millis refresh{0};
};

// Knobs of filter-eval's experiments (the paper's reproductions); the service leaves
// them at these defaults.
struct ExperimentOverrides {
  std::optional<BloomShape> bloom_shape;  // bloom, gaussian
  // fbf: no sizing; the window is DedupSpec::window (0: the nominal window) and the
  // future never refreshes early.
  std::optional<FbfShape> fbf_shape;
  std::optional<uint32_t> max_filters;  // fbf
  std::optional<Millis> refresh_step;   // fbf
  ResizePolicy policy = ResizePolicy::kGuarded;
  ConstituentModel model = ConstituentModel::kBlocked;
  ExpKind exp = ExpKind::kFast;  // gaussian cells and constituents
};

struct DedupSpec {
  DedupMode mode = DedupMode::kFbf;
  MembershipCheck check = MembershipCheck::kPairs;
  double expected_rate = 10000;  // ids per second
  Millis window{60000};
  double target_fpp = 1e-6;
  bool adaptive = true;
  uint64_t seed = FbfConfig{}.seed;
  // fbf only. Gaussian constituents get as many cells as the blocked sizing gives
  // bits, so the target holds (Lemma 2); memory grows by cell_bits.
  Constituent constituent = Constituent::kBlockedBloom;
  uint32_t cell_bits = 8;  // gaussian: 4, 8 or 64
  // fbf and exact: the most bytes the filter state takes; at it the filter forgets its
  // oldest ids early and says so (early_forgetting.h). 0: no bound beyond the mode's own.
  uint64_t memory_limit_bytes = 0;
  ExperimentOverrides experiment;
};

// The service's modes (fbf, bloom, exact, none); mode gaussian is an experiment
// (experiments/experiment_filters.h).
base::Result<std::unique_ptr<DedupFilter>> MakeDedupFilter(const DedupSpec& spec, Millis start);

// Whether the filter `spec` sizes fits spec.memory_limit_bytes from the start (its
// first shape, before any growth), without building it; the error says how much it
// needs.
base::Status CheckMemoryBound(const DedupSpec& spec);

// What a filter decoded for `spec`'s shards may grow to: a state without a memory
// bound of its own (format 2) takes spec's, as a filter made now would.
inline DecodeLimits DecodeLimitsFor(const DedupSpec& spec) {
  return DecodeLimits{.bound_if_none = spec.memory_limit_bytes};
}

// The shape of a bloom (or gaussian) filter: spec.experiment.bloom_shape, or sized
// for expected_rate x window ids at target_fpp.
base::Result<BloomShape> BloomShapeOf(const DedupSpec& spec);

}  // namespace oncecount::filter
