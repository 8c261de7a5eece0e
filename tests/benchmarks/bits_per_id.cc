// Bits per remembered id at a measured false-positive rate at or below a target.
//
// For each membership check, target epsilon and block size, with N = 8 past
// filters: start from the sizing model's (bits, k); for k and its two neighbours,
// walk the bits per filter down (and up) in 1% steps, measuring the FPP at the worst point of a
// steady load (the last millisecond of a refresh period, future full) with fresh never-inserted
// ids, and report the smallest size whose measured FPP is <= epsilon. "Remembered ids" are the ids
// of one guaranteed window: (N + 1) refresh periods of the steady rate.
//
// Output: one JSON object per line.
// Run: build/tests/benchmarks/bits_per_id [pairs|paper] [512|1024]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/bloom/sizing.h"

namespace {

using namespace oncecount::filter;

constexpr uint32_t kPast = 8;
constexpr uint64_t kSliceIds = 20000;  // ids per refresh period
constexpr int64_t kRefreshMs = 1000;

IdHash Fresh(uint64_t stream, uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, stream)};
}

struct Measurement {
  uint64_t queries = 0;
  uint64_t positives = 0;
  double fpp() const { return queries ? static_cast<double>(positives) / queries : 1.0; }
};

Measurement Measure(MembershipCheck check, uint32_t block_bits, uint64_t bits, int k,
                    uint64_t queries, uint64_t seed) {
  FbfConfig c;
  c.block_bits = block_bits;
  c.bits_per_filter = bits;
  c.hashes = k;
  c.past_filters = kPast;
  c.refresh = Millis{kRefreshMs};
  c.check = check;
  c.seed = seed;
  auto made = ForgetfulBloomFilter::Create(c, Millis{0});
  if (!made) {
    std::fprintf(stderr, "%s\n", made.message().c_str());
    std::exit(1);
  }
  ForgetfulBloomFilter& f = made.value();
  const uint32_t filters = f.filter_count();
  uint64_t next = 0;
  Measurement m;
  const uint64_t cycles = 8;
  const uint64_t per_cycle = queries / cycles;
  for (int64_t period = 0; period < static_cast<int64_t>(filters + cycles); ++period) {
    // One refresh period: the slice's ids, then (after warm-up) queries at its last ms.
    f.AdvanceTo(Millis{period * kRefreshMs});
    for (uint64_t i = 0; i < kSliceIds; ++i) f.TestAndInsert(Fresh(seed, next++));
    if (period >= static_cast<int64_t>(filters)) {
      f.AdvanceTo(Millis{(period + 1) * kRefreshMs - 1});
      for (uint64_t q = 0; q < per_cycle; ++q) {
        m.positives += f.Contains(Fresh(seed ^ 0xABCDEF, m.queries++)) ? 1 : 0;
      }
    }
  }
  return m;
}

struct Found {
  int hashes = 0;
  uint64_t bits = 0;
  Measurement m;
};

// The smallest bits per filter (1% steps) whose measured FPP is <= epsilon, for k.
Found Walk(MembershipCheck check, uint32_t block_bits, uint64_t start_bits, int k, double epsilon,
           uint64_t queries) {
  const double step = 0.01;
  uint64_t bits = start_bits;
  Measurement m = Measure(check, block_bits, bits, k, queries, 11);
  if (m.fpp() <= epsilon) {
    while (true) {
      const auto smaller = static_cast<uint64_t>(static_cast<double>(bits) * (1 - step));
      const Measurement ms = Measure(check, block_bits, smaller, k, queries, 11);
      if (ms.fpp() > epsilon) break;
      bits = smaller;
      m = ms;
    }
  } else {
    while (m.fpp() > epsilon) {
      bits = static_cast<uint64_t>(static_cast<double>(bits) * (1 + step));
      m = Measure(check, block_bits, bits, k, queries, 11);
    }
  }
  return {k, (bits + block_bits - 1) / block_bits * block_bits, m};
}

void Run(MembershipCheck check, double epsilon, uint32_t block_bits) {
  const double remembered = static_cast<double>(kSliceIds) * (kPast + 1);
  SizingRequest request{kSliceIds * 1000.0 / kRefreshMs,
                        Millis{(kPast + 1) * kRefreshMs},
                        epsilon / kSizingHeadroom,
                        check,
                        kPast,
                        block_bits};
  auto sized = SizeFbf(request);
  if (!sized) std::exit(1);
  const uint64_t queries = static_cast<uint64_t>(std::ceil(200.0 / epsilon));
  const uint32_t filters = kPast + (check == MembershipCheck::kPairs ? 3 : 2);
  Found best;
  for (int k = sized->hashes - 1; k <= sized->hashes + 1; ++k) {
    const Found found = Walk(check, block_bits, sized->bits_per_filter, k, epsilon, queries);
    if (best.bits == 0 || found.bits < best.bits) best = found;
  }
  const auto model = [&](ConstituentModel which) {
    FbfConfig c = sized.value();
    c.bits_per_filter = best.bits;
    c.hashes = best.hashes;
    return SteadyStateWorstFpp(c, kSliceIds, which);
  };
  const double per_id = static_cast<double>(filters) * static_cast<double>(best.bits) / remembered;
  std::printf(
      "{\"check\":\"%s\",\"epsilon\":%g,\"block_bits\":%u,\"past_filters\":%u,\"filters\":%u,"
      "\"hashes\":%d,\"bits_per_filter\":%llu,\"queries\":%llu,\"false_positives\":%llu,"
      "\"measured_fpp\":%.3g,\"bits_per_remembered_id\":%.2f,"
      "\"bits_per_id_over_log2_inv_eps\":%.3f,\"model_fpp_blocked\":%.3g,\"model_fpp_eq1\":%.3g}\n",
      CheckName(check), epsilon, block_bits, kPast, filters, best.hashes,
      static_cast<unsigned long long>(best.bits), static_cast<unsigned long long>(best.m.queries),
      static_cast<unsigned long long>(best.m.positives), best.m.fpp(), per_id,
      per_id / std::log2(1 / epsilon), model(ConstituentModel::kBlocked),
      model(ConstituentModel::kClassic));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only_check = argc > 1 ? argv[1] : "";
  const std::string only_block = argc > 2 ? argv[2] : "";
  for (uint32_t block_bits : {512u, 1024u}) {
    if (!only_block.empty() && only_block != std::to_string(block_bits)) continue;
    for (double epsilon : {1e-3, 1e-6}) {
      for (MembershipCheck check : {MembershipCheck::kPairs, MembershipCheck::kPaper}) {
        if (!only_check.empty() && only_check != CheckName(check)) continue;
        Run(check, epsilon, block_bits);
      }
    }
  }
  return 0;
}
