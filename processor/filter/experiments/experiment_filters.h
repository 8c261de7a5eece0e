// MakeExperimentFilter and DecodeExperimentFilter: what filter-eval, the
// reproductions and the benchmarks build and read, the service's filters included.
// The experiment-only filter is mode gaussian (GaussianDedup, one Gaussian Bloom
// filter that never forgets); the service's factory and decoder refuse it.
//
// Thread-safety: pure functions; the filter returned belongs to the caller.
#pragma once

#include <memory>
#include <string_view>

#include "processor/base/result.h"
#include "processor/filter/filter_factory.h"
#include "processor/filter/state_frame.h"

namespace oncecount::filter {

// MakeDedupFilter, and mode gaussian: as many cells as the bloom sizing gives bits
// (or spec.experiment.bloom_shape), spec.cell_bits and spec.experiment.exp.
base::Result<std::unique_ptr<DedupFilter>> MakeExperimentFilter(const DedupSpec& spec,
                                                                Millis start);

// DecodeDedupFilter (`limits` as there), and mode gaussian.
base::Result<std::unique_ptr<DedupFilter>> DecodeExperimentFilter(std::string_view bytes,
                                                                  const DecodeLimits& limits = {});

}  // namespace oncecount::filter
