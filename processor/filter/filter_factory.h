// MakeDedupFilter: builds the dedup filter of a shard from the service's `dedup`
// settings, sizing it from the expected rate, the window and the target FPP.
//
// Thread-safety: pure function; the filter it returns belongs to the caller.
#pragma once

#include <memory>

#include "processor/filter/dedup_filter.h"
#include "processor/filter/forgetful_bloom_filter.h"
#include "processor/filter/result.h"

namespace oncecount::filter {

struct DedupSpec {
  DedupMode mode = DedupMode::kFbf;
  MembershipCheck check = MembershipCheck::kPairs;
  double expected_rate = 10000;  // ids per second
  Millis window{60000};
  double target_fpp = 1e-6;
  bool adaptive = true;
  uint64_t seed = FbfConfig{}.seed;
};

Result<std::unique_ptr<DedupFilter>> MakeDedupFilter(const DedupSpec& spec, Millis start);

}  // namespace oncecount::filter
