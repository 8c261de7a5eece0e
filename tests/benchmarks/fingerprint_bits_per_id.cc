// Bits per remembered id of the fingerprint filter with the service's own sizing,
// and the false-positive rate measured at the worst point of the sized load.
//
// For each target epsilon: SizeFingerprintFilter for 20,000 ids/s over a 60 s window
// (as `serve` sizes dedup.filter: fingerprint), a steady load at that rate until the
// ring is full, then 200/epsilon never-inserted ids tested in the last millisecond
// before a refresh (every slice full). "Remembered ids" are the ids of one
// guaranteed window (rate x window), as in bits_per_id.
//
// Output: one JSON object per line.
// Run: build/tests/benchmarks/fingerprint_bits_per_id [EPSILON...]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "processor/filter/fingerprint/fingerprint_sizing.h"
#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"

namespace {

using namespace oncecount::filter;

constexpr double kRate = 20000;
constexpr int64_t kWindowMs = 60000;

IdHash Id(uint64_t stream, uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, stream)};
}

void Run(double epsilon) {
  auto sized = SizeFingerprintFilter({kRate, Millis{kWindowMs}, epsilon});
  if (!sized) {
    std::fprintf(stderr, "%s\n", sized.message().c_str());
    std::exit(1);
  }
  const FingerprintFilterConfig c = sized.value();
  auto made = MakeFingerprintFilter(c, Millis{0});
  if (!made) std::exit(1);
  DedupFilter& f = *made.value();
  const int64_t t = c.refresh.count();
  const int64_t periods = c.window_slices + 3;
  const auto per_ms = static_cast<uint64_t>(kRate / 1000);
  uint64_t next = 0;
  for (int64_t ms = 0; ms < periods * t; ++ms) {
    f.AdvanceTo(Millis{ms});
    for (uint64_t i = 0; i < per_ms; ++i) f.TestAndInsert(Id(1, next++));
  }
  // The last millisecond of a period: N + 1 full slices.
  f.AdvanceTo(Millis{periods * t - 1});
  const auto queries = static_cast<uint64_t>(std::ceil(200 / epsilon));
  uint64_t positives = 0;
  for (uint64_t q = 0; q < queries; ++q) positives += f.Contains(Id(2, q)) ? 1 : 0;
  const FilterSummary s = f.Summary();
  const double remembered = kRate * kWindowMs / 1000.0;
  const double per_id = static_cast<double>(s.bits_total) / remembered;
  std::printf(
      "{\"filter\":\"fingerprint\",\"epsilon\":%g,\"bucket_bits\":%u,\"fingerprint_bits\":%u,"
      "\"window_slices\":%u,\"slices\":%u,\"groups\":%llu,\"max_load\":%.4f,\"queries\":%llu,"
      "\"false_positives\":%llu,\"measured_fpp\":%.3g,\"estimated_fpp\":%.3g,"
      "\"bits_per_remembered_id\":%.2f,\"bits_per_id_over_log2_inv_eps\":%.3f}\n",
      epsilon, c.bucket_bits, c.fingerprint_bits, c.window_slices, s.filters,
      static_cast<unsigned long long>(c.groups), c.max_load,
      static_cast<unsigned long long>(queries), static_cast<unsigned long long>(positives),
      static_cast<double>(positives) / static_cast<double>(queries), s.estimated_fpp, per_id,
      per_id / std::log2(1 / epsilon));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> epsilons;
  for (int i = 1; i < argc; ++i) epsilons.push_back(std::atof(argv[i]));
  if (epsilons.empty()) epsilons = {1e-3, 1e-4, 1e-5, 1e-6};
  for (double e : epsilons) Run(e);
  return 0;
}
