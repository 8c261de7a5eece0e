// MakeDedupFilter: builds the dedup filter of a shard from the service's `dedup`
// settings, sizing it from the expected rate, the window and the target FPP.
//
// Thread-safety: pure function; the filter it returns belongs to the caller.
#pragma once

#include <memory>

#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/forgetful_bloom_filter.h"

namespace oncecount::filter {

// The FBF's constituent filters (dedup.filter).
enum class Constituent : uint8_t { kBlockedBloom = 0, kGaussian = 1 };

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
};

base::Result<std::unique_ptr<DedupFilter>> MakeDedupFilter(const DedupSpec& spec, Millis start);

}  // namespace oncecount::filter
