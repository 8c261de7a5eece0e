// Initial sizing: from the expected insert rate, the dedup window and the target
// false-positive probability, choose the FBF's refresh period, bits per filter and
// hash count, so that the blocked-filter model stays at or below the target at the
// worst point of a steady load (the end of a refresh period, when the future filter
// holds one slice of ids and every older filter two) times kSizingHeadroom.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "processor/base/result.h"
#include "processor/filter/bloom/forgetful_bloom_filter.h"

namespace oncecount::filter {

inline constexpr uint32_t kDefaultPastFilters = 8;
// The sized filter's worst point sits at half the target: Algorithm 3 scales up at
// 0.9 x target, and the expected rate is only an estimate.
inline constexpr double kSizingHeadroom = 0.5;

struct SizingRequest {
  double expected_rate = 0;  // ids per second
  Millis window{0};
  double target_fpp = 0;
  MembershipCheck check = MembershipCheck::kPairs;
  uint32_t past_filters = kDefaultPastFilters;
  uint32_t block_bits = kBlockBits;
};

// Fills bits_per_filter, hashes, past_filters, refresh, window, target_fpp, check and
// slice_capacity (for the default max_filters); the other fields keep FbfConfig's
// defaults.
base::Result<FbfConfig> SizeFbf(const SizingRequest& request);

// The most ids one slice may hold so that the configured ring (N past filters), each
// filter holding two such slices (the future one), stays at or below
// config.target_fpp in the blocked model: a little above the slice at the expected
// rate (the sizing keeps kSizingHeadroom), so early refreshes start only once the
// load outgrows the sizing. Above it every filter keeps its designed fill and the
// estimate grows with the ring's length, about (filters / sized filters) x target,
// instead of with the overfill, until the adaptive policy shortens the period. At
// least 1.
uint64_t SliceCapacity(const FbfConfig& config);

// Model FPP of `config` at the end of a refresh period under a steady load of
// `slice_ids` ids per refresh period.
double SteadyStateWorstFpp(const FbfConfig& config, double slice_ids, ConstituentModel model);

struct BloomSize {
  uint64_t bits = 0;
  int hashes = 0;
};

// One blocked filter that holds `ids` ids at `target_fpp` (the `bloom` mode's size).
base::Result<BloomSize> SizeBloom(double ids, double target_fpp);

}  // namespace oncecount::filter
