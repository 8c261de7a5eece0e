#include "processor/filter/filter_factory.h"

#include <new>
#include <string>

#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/no_dedup.h"
#include "processor/filter/plain_bloom_dedup.h"
#include "processor/filter/sizing.h"

namespace oncecount::filter {

namespace {

Result<std::unique_ptr<DedupFilter>> Make(const DedupSpec& spec, Millis start) {
  const double window_ids = spec.expected_rate * static_cast<double>(spec.window.count()) / 1000.0;
  switch (spec.mode) {
    case DedupMode::kNone:
      return std::unique_ptr<DedupFilter>(std::make_unique<NoDedup>());
    case DedupMode::kBloom: {
      auto size = SizeBloom(window_ids, spec.target_fpp);
      if (!size) return Error{size.error()};
      auto bloom = PlainBloomDedup::Create(size->bits, size->hashes, spec.seed);
      if (!bloom) return Error{bloom.error()};
      return std::unique_ptr<DedupFilter>(new PlainBloomDedup(std::move(bloom).value()));
    }
    case DedupMode::kExact: {
      auto exact = ExactWindowDedup::Create(spec.window, static_cast<uint64_t>(window_ids), start);
      if (!exact) return Error{exact.error()};
      return std::unique_ptr<DedupFilter>(new ExactWindowDedup(std::move(exact).value()));
    }
    case DedupMode::kFbf: {
      auto config = SizeFbf({spec.expected_rate, spec.window, spec.target_fpp, spec.check});
      if (!config) return Error{config.error()};
      config->adaptive = spec.adaptive;
      config->seed = spec.seed;
      auto fbf = ForgetfulBloomFilter::Create(config.value(), start);
      if (!fbf) return Error{fbf.error()};
      return std::unique_ptr<DedupFilter>(new ForgetfulBloomFilter(std::move(fbf).value()));
    }
    case DedupMode::kGaussian:
      return Error{"gaussian is an evaluation mode of filter-eval, not a service mode"};
  }
  return Error{"unknown dedup mode"};
}

}  // namespace

Result<std::unique_ptr<DedupFilter>> MakeDedupFilter(const DedupSpec& spec, Millis start) {
  // The module's edge: an allocation that fails becomes an error value.
  try {
    return Make(spec, start);
  } catch (const std::bad_alloc&) {
    return Error{std::string("cannot allocate the ") + ModeName(spec.mode) +
                 " filter for this rate and window"};
  }
}

}  // namespace oncecount::filter
