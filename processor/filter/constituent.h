// Constituent: what the forgetful filter's ring is made of (dedup.filter,
// filter-eval's --filter, FilterSummary::constituent, and the byte after the mode in a
// state frame, which is why the values are fixed).
//
//  - kBlockedBloom: cache-line-blocked Bloom filters (forgetful_bloom_filter.h);
//  - kGaussian: Gaussian Bloom filters of counting cells (gaussian_bloom.h);
//  - kFingerprint: slices of short fingerprints in cuckoo tables
//    (forgetful_fingerprint_filter.h); dedup.check does not apply to it.
//
// Thread-safety: constants.
#pragma once

#include <array>
#include <cstdint>

#include "processor/base/enum_names.h"

namespace oncecount::filter {

enum class Constituent : uint8_t { kBlockedBloom = 0, kGaussian = 1, kFingerprint = 2 };

inline constexpr std::array<base::EnumName<Constituent>, 3> kConstituentNames = {{
    {Constituent::kBlockedBloom, "bloom"},
    {Constituent::kGaussian, "gaussian"},
    {Constituent::kFingerprint, "fingerprint"},
}};

}  // namespace oncecount::filter
