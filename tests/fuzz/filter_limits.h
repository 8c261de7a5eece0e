// What a filter the fuzz targets decode may grow to: a state's own bound up to 64 MiB
// (a larger one is refused), and 64 MiB for a state without one. The service bounds
// its filters by dedup.max_filter_mib the same way (filter::DecodeLimitsFor); the
// targets' bound keeps a run of them within libFuzzer's RSS limit, so that growing
// to the bound is a state they explore rather than an out-of-memory finding.
#pragma once

#include <cstdint>

#include "processor/filter/state_frame.h"

namespace oncecount::fuzz {

inline constexpr filter::DecodeLimits kFilterLimits{.bound_if_none = uint64_t{64} << 20,
                                                    .most = uint64_t{64} << 20};

}  // namespace oncecount::fuzz
