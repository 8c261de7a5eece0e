#include "processor/filter/bloom/sizing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace oncecount::filter {
namespace {

struct Best {
  double fpp = 1;
  int hashes = 1;
};

// The best hash count for `blocks` blocks, given a model of the FPP. The FPP is
// unimodal in k, so the scan stops two steps past the best.
Best BestHashes(uint64_t blocks, uint32_t block_bits,
                const std::function<double(double bits, int k)>& fpp) {
  Best best;
  for (int k = kMinHashes; k <= kMaxHashes && k <= best.hashes + 2; ++k) {
    const double f = fpp(static_cast<double>(blocks) * block_bits, k);
    if (f < best.fpp) best = {f, k};
  }
  return best;
}

// Smallest block count whose best hash count meets `target` (FPP falls with size),
// searched from `guess` outwards, then by bisection.
base::Result<std::pair<uint64_t, int>> SmallestBlocks(
    double target, uint32_t block_bits, uint64_t guess,
    const std::function<double(double bits, int k)>& fpp) {
  const auto meets = [&](uint64_t blocks) {
    return BestHashes(blocks, block_bits, fpp).fpp <= target;
  };
  uint64_t hi = std::clamp<uint64_t>(guess, 1, kMaxBlocks);
  uint64_t lo = 0;  // no block at all never meets a target
  if (meets(hi)) {
    while (hi > 1 && meets(hi / 2)) hi /= 2;
    lo = hi / 2;
  } else {
    while (!meets(hi)) {
      if (hi >= kMaxBlocks / 2) return base::InvalidArgument("needs more than 256 GiB per filter");
      lo = hi;
      hi *= 2;
    }
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (meets(mid) ? hi : lo) = mid;
  }
  return std::pair<uint64_t, int>{hi, BestHashes(hi, block_bits, fpp).hashes};
}

// A first guess from the ideal Bloom filter: 1.44 * log2(1/p) bits per id.
uint64_t GuessBlocks(double ids, double target, uint32_t block_bits) {
  const double bits = ids * 1.44 * std::log2(1 / target);
  return static_cast<uint64_t>(std::max(1.0, bits / block_bits));
}

}  // namespace

double SteadyStateWorstFpp(const FbfConfig& config, double slice_ids, ConstituentModel model) {
  const uint32_t filters = config.past_filters + (config.check == MembershipCheck::kPairs ? 3 : 2);
  const double bits = static_cast<double>(config.bits_per_filter);
  std::vector<double> p(
      filters, ConstituentFpp(model, bits, config.hashes, 2 * slice_ids, config.block_bits));
  p[0] = ConstituentFpp(model, bits, config.hashes, slice_ids, config.block_bits);
  return CheckFpp(config.check, p);
}

uint64_t SliceCapacity(const FbfConfig& config) {
  const auto meets = [&](uint64_t ids) {
    return SteadyStateWorstFpp(config, static_cast<double>(ids), ConstituentModel::kBlocked) <=
           config.target_fpp;
  };
  // The FPP grows with the ids per slice: bisect between a size that meets the
  // target and one that does not.
  uint64_t lo = 1;
  uint64_t hi = 2;
  while (meets(hi) && hi < (uint64_t{1} << 47)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

base::Result<FbfConfig> SizeFbf(const SizingRequest& request) {
  if (!(request.expected_rate > 0)) return base::InvalidArgument("expected rate must be positive");
  if (request.window.count() <= 0) return base::InvalidArgument("window must be positive");
  if (!(request.target_fpp > 0 && request.target_fpp < 1)) {
    return base::InvalidArgument("target fpp must be in (0, 1)");
  }
  if (request.past_filters < 1) return base::InvalidArgument("past filters must be at least 1");
  FbfConfig config;
  config.check = request.check;
  config.past_filters = request.past_filters;
  config.window = request.window;
  config.target_fpp = request.target_fpp;
  config.block_bits = request.block_bits;
  if (request.block_bits != 512 && request.block_bits != 1024) {
    return base::InvalidArgument("block bits must be 512 or 1024");
  }
  // Ceiling division keeps (N + 1) * t >= window.
  const int64_t slices = request.past_filters + 1;
  config.refresh = Millis{(request.window.count() + slices - 1) / slices};
  const double slice_ids =
      std::max(1.0, request.expected_rate * static_cast<double>(config.refresh.count()) / 1000.0);
  // Each filter holds two slices; a pair test needs about sqrt(target / pairs) each.
  const uint64_t guess = GuessBlocks(
      2 * slice_ids, std::sqrt(request.target_fpp * kSizingHeadroom / 10), request.block_bits);
  auto sized = SmallestBlocks(
      request.target_fpp * kSizingHeadroom, request.block_bits, guess, [&](double bits, int k) {
        FbfConfig c = config;
        c.bits_per_filter = static_cast<uint64_t>(bits);
        c.hashes = k;
        return SteadyStateWorstFpp(c, slice_ids, ConstituentModel::kBlocked);
      });
  if (!sized)
    return base::InvalidArgument("the window of " + std::to_string(request.window.count()) +
                                 " ms at " + std::to_string(request.expected_rate) + " ids/s " +
                                 sized.message());
  config.bits_per_filter = sized->first * request.block_bits;
  config.hashes = sized->second;
  config.slice_capacity = SliceCapacity(config);
  return config;
}

base::Result<BloomSize> SizeBloom(double ids, double target_fpp) {
  if (!(target_fpp > 0 && target_fpp < 1))
    return base::InvalidArgument("target fpp must be in (0, 1)");
  const double n = std::max(1.0, ids);
  auto sized = SmallestBlocks(target_fpp, kBlockBits, GuessBlocks(n, target_fpp, kBlockBits),
                              [&](double bits, int k) { return BlockedBloomFpp(bits, k, n); });
  if (!sized) return sized.error();
  return BloomSize{sized->first * kBlockBits, sized->second};
}

}  // namespace oncecount::filter
