#include "processor/filter/experiments/experiment_filters.h"

#include <new>

#include "processor/filter/experiments/gaussian_dedup.h"
#include "processor/filter/state_codec.h"
#include "processor/filter/state_frame.h"

namespace oncecount::filter {

base::Result<std::unique_ptr<DedupFilter>> MakeExperimentFilter(const DedupSpec& spec,
                                                                Millis start) {
  if (spec.mode != DedupMode::kGaussian) return MakeDedupFilter(spec, start);
  auto shape = BloomShapeOf(spec);
  if (!shape) return shape.error();
  // The edge of the experiments: an allocation that fails becomes an error value.
  try {
    auto gaussian =
        GaussianDedup::Create({shape->bits, shape->hashes, static_cast<int>(spec.cell_bits),
                               spec.experiment.exp, spec.seed});
    if (!gaussian) return gaussian.error();
    return std::unique_ptr<DedupFilter>(new GaussianDedup(std::move(gaussian).value()));
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument("cannot allocate the gaussian filter for this rate and window");
  }
}

base::Result<std::unique_ptr<DedupFilter>> DecodeExperimentFilter(std::string_view bytes,
                                                                  const DecodeLimits& limits) {
  auto frame = ReadStateFrame(bytes);
  if (!frame) return frame.error();
  if (frame->mode != static_cast<uint8_t>(DedupMode::kGaussian)) {
    return DecodeDedupFilter(bytes, limits);
  }
  if (frame->constituent != 0) {
    return CorruptState("unknown constituent " + std::to_string(frame->constituent));
  }
  try {
    return DecodeGaussianDedup(frame->payload);
  } catch (const std::bad_alloc&) {
    return CorruptState("cannot allocate the decoded filter");
  }
}

}  // namespace oncecount::filter
