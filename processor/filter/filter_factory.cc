#include "processor/filter/filter_factory.h"

#include <new>
#include <string>

#include "processor/filter/bloom/plain_bloom_dedup.h"
#include "processor/filter/bloom/sizing.h"
#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/fingerprint/fingerprint_sizing.h"
#include "processor/filter/no_dedup.h"

namespace oncecount::filter {

namespace {

// The ids one window holds at the expected rate.
double WindowIds(const DedupSpec& spec) {
  return spec.expected_rate * static_cast<double>(spec.window.count()) / 1000.0;
}

base::Result<FbfConfig> FbfConfigOf(const DedupSpec& spec) {
  const ExperimentOverrides& x = spec.experiment;
  FbfConfig config;
  if (x.fbf_shape) {
    config.bits_per_filter = x.fbf_shape->bits_per_filter;
    config.hashes = x.fbf_shape->hashes;
    config.past_filters = x.fbf_shape->past_filters;
    config.refresh = x.fbf_shape->refresh;
    config.check = spec.check;
    config.window = spec.window;
    config.target_fpp = spec.target_fpp;
  } else {
    auto sized = SizeFbf({spec.expected_rate, spec.window, spec.target_fpp, spec.check});
    if (!sized) return sized.error();
    config = sized.value();
  }
  config.adaptive = spec.adaptive;
  config.seed = spec.seed;
  config.memory_limit_bytes = spec.memory_limit_bytes;
  if (x.max_filters) {
    config.max_filters = *x.max_filters;
    // A sized filter refreshes early for its own max_filters.
    if (!x.fbf_shape) config.slice_capacity = SliceCapacity(config);
  }
  if (x.refresh_step) config.refresh_step = *x.refresh_step;
  config.policy = x.policy;
  config.model = x.model;
  if (spec.constituent == Constituent::kGaussian) {
    // The blocked sizing bounds the classic filter on the same count of cells (an
    // unblocked filter is no worse), which bounds the Gaussian one.
    config.cell_bits = spec.cell_bits;
    config.exp = x.exp;
  }
  return config;
}

base::Result<FingerprintFilterConfig> FingerprintConfigOf(const DedupSpec& spec) {
  if (spec.experiment.fbf_shape) {
    return base::InvalidArgument("the fingerprint filter takes no Bloom shape (bits, hashes)");
  }
  auto sized = SizeFingerprintFilter({spec.expected_rate, spec.window, spec.target_fpp});
  if (!sized) return sized.error();
  FingerprintFilterConfig config = sized.value();
  config.adaptive = spec.adaptive;
  config.seed = spec.seed;
  config.memory_limit_bytes = spec.memory_limit_bytes;
  if (spec.experiment.max_filters) config.max_slices = *spec.experiment.max_filters;
  return config;
}

base::Result<std::unique_ptr<DedupFilter>> Make(const DedupSpec& spec, Millis start) {
  switch (spec.mode) {
    case DedupMode::kNone:
      return std::unique_ptr<DedupFilter>(std::make_unique<NoDedup>());
    case DedupMode::kBloom: {
      auto shape = BloomShapeOf(spec);
      if (!shape) return shape.error();
      return OwnedFilter(PlainBloomDedup::Create(shape->bits, shape->hashes, spec.seed));
    }
    case DedupMode::kExact: {
      return OwnedFilter(ExactWindowDedup::Create(
          spec.window, static_cast<uint64_t>(WindowIds(spec)), start, spec.memory_limit_bytes));
    }
    case DedupMode::kFbf: {
      if (spec.constituent == Constituent::kFingerprint) {
        auto config = FingerprintConfigOf(spec);
        if (!config) return config.error();
        return MakeFingerprintFilter(config.value(), start);
      }
      auto config = FbfConfigOf(spec);
      if (!config) return config.error();
      if (spec.constituent == Constituent::kGaussian) {
        return OwnedFilter(GaussianForgetfulFilter::Create(config.value(), start));
      }
      return OwnedFilter(ForgetfulBloomFilter::Create(config.value(), start));
    }
    case DedupMode::kGaussian:
      return base::InvalidArgument(
          "dedup mode gaussian is an experiment (filter-eval): build it with "
          "MakeExperimentFilter");
  }
  return base::InvalidArgument("unknown dedup mode");
}

}  // namespace

base::Status CheckMemoryBound(const DedupSpec& spec) {
  const uint64_t limit = spec.memory_limit_bytes;
  if (limit == 0) return {};
  uint64_t needed = 0;
  switch (spec.mode) {
    case DedupMode::kExact: {
      const auto ids = static_cast<uint64_t>(WindowIds(spec));
      if (ids <= ExactWindowDedup::MaxIdsWithin(limit) &&
          ExactWindowDedup::MaxIdsWithin(limit) > 0) {
        return {};
      }
      needed = ExactWindowDedup::CapacityFor(ids) * 16;
      break;
    }
    case DedupMode::kFbf: {
      if (spec.constituent == Constituent::kFingerprint) {
        auto config = FingerprintConfigOf(spec);
        if (!config) return config.error();
        needed = config->groups * 64;
        break;
      }
      auto config = FbfConfigOf(spec);
      if (!config) return config.error();
      // As the constituents allocate them: blocked filters in whole blocks.
      const uint64_t bits = spec.constituent == Constituent::kGaussian
                                ? config->bits_per_filter * config->cell_bits
                                : (config->bits_per_filter + config->block_bits - 1) /
                                      config->block_bits * config->block_bits;
      const uint32_t filters =
          config->past_filters + (config->check == MembershipCheck::kPairs ? 3 : 2);
      needed = bits / 8 * filters;
      break;
    }
    default:
      return {};  // fixed sizes: the bound does not apply
  }
  if (needed <= limit) return {};
  return base::InvalidArgument("the filter needs " + std::to_string(needed) +
                               " bytes for the window at the expected rate, above its memory "
                               "bound of " +
                               std::to_string(limit) + " bytes");
}

base::Result<BloomShape> BloomShapeOf(const DedupSpec& spec) {
  if (spec.experiment.bloom_shape) return *spec.experiment.bloom_shape;
  auto size = SizeBloom(WindowIds(spec), spec.target_fpp);
  if (!size) return size.error();
  return BloomShape{size->bits, size->hashes};
}

base::Result<std::unique_ptr<DedupFilter>> MakeDedupFilter(const DedupSpec& spec, Millis start) {
  // The module's edge: an allocation that fails becomes an error value.
  try {
    return Make(spec, start);
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument(std::string("cannot allocate the ") + ModeName(spec.mode) +
                                 " filter for this rate and window");
  }
}

}  // namespace oncecount::filter
