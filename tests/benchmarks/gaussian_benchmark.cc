// Nanoseconds per insert and per test of the Gaussian Bloom filter (4-bit, 8-bit and
// double cells) against the blocked Bloom filter the service uses, in one run.
//
// Every filter is sized for kIds ids with kCellsPerId cells (bits, for the blocked
// filter) per id and k = 7: the service's gaussian sizing, where the Gaussian filter
// has as many cells as the Bloom filter has bits. Tests run on a filter holding kIds
// ids, with ids never inserted (the dedup hot path: most events are new) and with
// members. Inserts fill a filter from empty to kIds ids, then it is reset.
//
// Run: build/tests/benchmarks/gaussian_benchmark --benchmark_repetitions=5
//        --benchmark_report_aggregates_only=true
// (docs/BENCHMARKS.md, "Gaussian Bloom filter", records the medians).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "processor/filter/bloom/blocked_bloom.h"
#include "processor/filter/bloom/cell_coding.h"
#include "processor/filter/bloom/gaussian_bloom.h"

namespace {

using oncecount::filter::BlockedBloom;
using oncecount::filter::ExpKind;
using oncecount::filter::GaussianBloom;
using oncecount::filter::IdHash;
using oncecount::filter::SeededMix;

constexpr uint64_t kIds = 1'000'000;
constexpr uint64_t kCellsPerId = 10;
constexpr int kHashes = 7;
constexpr uint64_t kQueries = 1 << 20;

IdHash Member(uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, 0x6B1)};
}
IdHash Stranger(uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, 0x57A)};
}

// cell_bits 0 means the blocked Bloom filter.
struct Filter {
  explicit Filter(int cell_bits) : bits(cell_bits) {
    if (bits == 0) {
      blocked.emplace(std::move(BlockedBloom::Create(kIds * kCellsPerId, kHashes, 1)).value());
    } else {
      gaussian.emplace(
          std::move(GaussianBloom::Create({kIds * kCellsPerId, kHashes, bits, ExpKind::kFast, 1}))
              .value());
    }
  }
  bool MayContain(IdHash h) const {
    return bits == 0 ? blocked->MayContain(h) : gaussian->MayContain(h);
  }
  void Insert(IdHash h) {
    if (bits == 0) {
      blocked->Insert(h);
    } else {
      gaussian->Insert(h);
    }
  }
  void Reset() {
    if (bits == 0) {
      blocked->Reset(1);
    } else {
      gaussian->Reset(1);
    }
  }
  int bits;
  std::optional<BlockedBloom> blocked;
  std::optional<GaussianBloom> gaussian;
};

Filter& Full(int cell_bits) {
  static std::vector<std::unique_ptr<Filter>> cache(65);
  auto& slot = cache[static_cast<size_t>(cell_bits)];
  if (!slot) {
    slot = std::make_unique<Filter>(cell_bits);
    for (uint64_t i = 0; i < kIds; ++i) slot->Insert(Member(i));
  }
  return *slot;
}

void BM_Insert(benchmark::State& state) {
  Filter f(static_cast<int>(state.range(0)));
  uint64_t i = 0;
  for (auto _ : state) {
    f.Insert(Member(i));
    if (++i == kIds) {
      state.PauseTiming();
      f.Reset();
      i = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_TestNew(benchmark::State& state) {
  const Filter& f = Full(static_cast<int>(state.range(0)));
  uint64_t i = 0, positives = 0;
  for (auto _ : state) {
    positives += f.MayContain(Stranger(i++ & (kQueries - 1)));
  }
  state.counters["fpr"] = static_cast<double>(positives) / static_cast<double>(state.iterations());
}

void BM_TestMember(benchmark::State& state) {
  const Filter& f = Full(static_cast<int>(state.range(0)));
  uint64_t i = 0, positives = 0;
  for (auto _ : state) {
    positives += f.MayContain(Member(i++ % kIds));
  }
  benchmark::DoNotOptimize(positives);
}

// The kernel values are tabulated per filter; these show what the table saves.
void BM_StdExp(benchmark::State& state) {
  double y = -4.5, sum = 0;
  for (auto _ : state) {
    sum += std::exp(y);
    y = y < 0 ? y + 1e-6 : -4.5;
  }
  benchmark::DoNotOptimize(sum);
}

void BM_FastExp(benchmark::State& state) {
  double y = -4.5, sum = 0;
  for (auto _ : state) {
    sum += oncecount::filter::FastExp(y);
    y = y < 0 ? y + 1e-6 : -4.5;
  }
  benchmark::DoNotOptimize(sum);
}

// Argument: cell bits, 0 = blocked Bloom.
BENCHMARK(BM_Insert)->ArgName("cell_bits")->Arg(0)->Arg(4)->Arg(8)->Arg(64);
BENCHMARK(BM_TestNew)->ArgName("cell_bits")->Arg(0)->Arg(4)->Arg(8)->Arg(64);
BENCHMARK(BM_TestMember)->ArgName("cell_bits")->Arg(0)->Arg(4)->Arg(8)->Arg(64);
BENCHMARK(BM_StdExp);
BENCHMARK(BM_FastExp);

}  // namespace

BENCHMARK_MAIN();
