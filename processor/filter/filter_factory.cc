#include "processor/filter/filter_factory.h"

#include <new>
#include <string>

#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/gaussian_dedup.h"
#include "processor/filter/no_dedup.h"
#include "processor/filter/plain_bloom_dedup.h"
#include "processor/filter/sizing.h"

namespace oncecount::filter {

namespace {

base::Result<std::unique_ptr<DedupFilter>> Make(const DedupSpec& spec, Millis start) {
  const double window_ids = spec.expected_rate * static_cast<double>(spec.window.count()) / 1000.0;
  switch (spec.mode) {
    case DedupMode::kNone:
      return std::unique_ptr<DedupFilter>(std::make_unique<NoDedup>());
    case DedupMode::kBloom: {
      auto size = SizeBloom(window_ids, spec.target_fpp);
      if (!size) return size.error();
      auto bloom = PlainBloomDedup::Create(size->bits, size->hashes, spec.seed);
      if (!bloom) return bloom.error();
      return std::unique_ptr<DedupFilter>(new PlainBloomDedup(std::move(bloom).value()));
    }
    case DedupMode::kExact: {
      auto exact = ExactWindowDedup::Create(spec.window, static_cast<uint64_t>(window_ids), start);
      if (!exact) return exact.error();
      return std::unique_ptr<DedupFilter>(new ExactWindowDedup(std::move(exact).value()));
    }
    case DedupMode::kFbf: {
      auto config = SizeFbf({spec.expected_rate, spec.window, spec.target_fpp, spec.check});
      if (!config) return config.error();
      config->adaptive = spec.adaptive;
      config->seed = spec.seed;
      if (spec.constituent == Constituent::kGaussian) {
        // The blocked sizing bounds the classic filter on the same count of cells
        // (an unblocked filter is no worse), which bounds the Gaussian one.
        config->cell_bits = spec.cell_bits;
        auto gaussian = GaussianForgetfulFilter::Create(config.value(), start);
        if (!gaussian) return gaussian.error();
        return std::unique_ptr<DedupFilter>(
            new GaussianForgetfulFilter(std::move(gaussian).value()));
      }
      auto fbf = ForgetfulBloomFilter::Create(config.value(), start);
      if (!fbf) return fbf.error();
      return std::unique_ptr<DedupFilter>(new ForgetfulBloomFilter(std::move(fbf).value()));
    }
    case DedupMode::kGaussian: {
      auto size = SizeBloom(window_ids, spec.target_fpp);
      if (!size) return size.error();
      auto gaussian = GaussianDedup::Create(
          {size->bits, size->hashes, static_cast<int>(spec.cell_bits), ExpKind::kFast, spec.seed});
      if (!gaussian) return gaussian.error();
      return std::unique_ptr<DedupFilter>(new GaussianDedup(std::move(gaussian).value()));
    }
  }
  return base::InvalidArgument("unknown dedup mode");
}

}  // namespace

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
