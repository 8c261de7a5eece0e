#include "processor/filter/fingerprint/fingerprint_sizing.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace oncecount::filter {
namespace {

struct Candidate {
  uint32_t bucket_bits = 0;
  uint32_t fingerprint_bits = 0;
  uint32_t count = 0;  // fingerprints a bucket
  double load = 0;
  double bits_per_id = 0;
};

// The probability that a slice filled to `load` matches a fresh id: two buckets of
// load * count fingerprints, each matching with 1 / (2^bits - 1).
double SliceFpp(uint32_t count, uint32_t bits, double load) {
  return 2 * load * count / static_cast<double>((uint64_t{1} << bits) - 1);
}

// The best fingerprint width for buckets of `bucket_bits` at `target`.
Candidate BestFor(uint32_t bucket_bits, double target) {
  const uint32_t slots = 512 / bucket_bits;
  const uint32_t window_slices = slots - 1;
  // The per-slice probability that window slices + 1 slices may have between them.
  const double per_slice = -std::expm1(std::log1p(-target * kFingerprintSizingHeadroom) / slots);
  Candidate best;
  for (uint32_t bits = kMinFingerprintBits; bits <= kMaxFingerprintBits; ++bits) {
    const uint32_t count = bucket_bits / bits;
    const double load = std::min(MaxLoadFor(count), per_slice / SliceFpp(count, bits, 1.0));
    // Below a tenth of the fields the width is far too narrow for the target.
    if (load < 0.1) continue;
    const double bits_per_id =
        bucket_bits / (load * count) * (window_slices + 1) / static_cast<double>(window_slices);
    if (best.bits_per_id == 0 || bits_per_id < best.bits_per_id) {
      best = {bucket_bits, bits, count, load, bits_per_id};
    }
  }
  return best;
}

}  // namespace

double FingerprintWorstFpp(const FingerprintFilterConfig& config) {
  const uint32_t count = config.bucket_bits / config.fingerprint_bits;
  const double p = std::min(1.0, SliceFpp(count, config.fingerprint_bits, config.max_load));
  return -std::expm1((config.window_slices + 1) * std::log1p(-std::min(p, 1 - 1e-16)));
}

base::Result<FingerprintFilterConfig> SizeFingerprintFilter(
    const FingerprintSizingRequest& request) {
  if (!(request.expected_rate > 0)) return base::InvalidArgument("expected rate must be positive");
  if (request.window.count() <= 0) return base::InvalidArgument("window must be positive");
  if (!(request.target_fpp > 0 && request.target_fpp < 1)) {
    return base::InvalidArgument("target fpp must be in (0, 1)");
  }
  Candidate best = BestFor(64, request.target_fpp);
  const Candidate wide = BestFor(128, request.target_fpp);
  if (best.bits_per_id == 0 || (wide.bits_per_id != 0 && wide.bits_per_id < best.bits_per_id)) {
    best = wide;
  }
  if (best.bits_per_id == 0) {
    return base::InvalidArgument("target fpp " + std::to_string(request.target_fpp) +
                                 " is below what 32-bit fingerprints reach");
  }
  FingerprintFilterConfig config;
  config.bucket_bits = best.bucket_bits;
  config.fingerprint_bits = best.fingerprint_bits;
  config.max_load = best.load;
  config.window_slices = 512 / best.bucket_bits - 1;
  config.window = request.window;
  config.target_fpp = request.target_fpp;
  const int64_t n = config.window_slices;
  config.refresh = Millis{(request.window.count() + n - 1) / n};
  const double slice_ids =
      std::max(1.0, request.expected_rate * static_cast<double>(config.refresh.count()) / 1000.0);
  const double per_group = best.load * best.count;
  double groups = std::ceil(slice_ids / per_group);
  // The capacity rounds down (computed as the filter does): one more group when it
  // would fall short of the slice.
  if (std::floor(best.load * (groups * best.count)) < slice_ids) groups += 1;
  if (groups > static_cast<double>(FingerprintPlane<uint64_t>::kMaxGroups)) {
    return base::InvalidArgument("the window of " + std::to_string(request.window.count()) +
                                 " ms at " + std::to_string(request.expected_rate) +
                                 " ids/s needs more than 256 GiB a slice plane");
  }
  config.groups = static_cast<uint64_t>(groups);
  return config;
}

}  // namespace oncecount::filter
