// Sizing of the fingerprint filter: from the expected insert rate, the window and
// the target false-positive probability, the fingerprint width, the groups of a
// slice and the load a slice fills to, so that at the worst point of a steady load
// (window slices + 1 slices, each full) the false-positive probability is at most
// kFingerprintSizingHeadroom x the target, in the least memory.
//
// A slice with `count` fingerprints of `bits` bits per 64-bit bucket, filled to
// `load`, matches a fresh id with probability 2 * load * count / (2^bits - 1) (two
// buckets, each holding load * count fingerprints on average). The memory per
// remembered id is 64 / (load * count) bits per slice, times (N + 1) / N for the
// ring. The load is also capped by what cuckoo hashing with `count` fields per
// bucket reaches without long kick chains (MaxLoadFor).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "processor/base/result.h"
#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"

namespace oncecount::filter {

// A load up to 5% above expected_rate fills the slices past their sizing (the filter
// does not push slices early for so little, forgetful_fingerprint_filter.h): the
// worst point sits 5% below the target so that it stays at the target then too.
inline constexpr double kFingerprintSizingHeadroom = 0.95;

struct FingerprintSizingRequest {
  double expected_rate = 0;  // ids per second
  Millis window{0};
  double target_fpp = 0;
};

// Fills bucket_bits, fingerprint_bits, groups, max_load, window_slices (the slots of
// a plane less one), refresh, window and target_fpp; the other fields keep
// FingerprintFilterConfig's defaults.
base::Result<FingerprintFilterConfig> SizeFingerprintFilter(
    const FingerprintSizingRequest& request);

// The false-positive probability at the worst point of a steady load that fills
// every slice to its capacity: window slices + 1 full slices.
double FingerprintWorstFpp(const FingerprintFilterConfig& config);

}  // namespace oncecount::filter
