// Nanoseconds per insert and per test of the Gaussian Bloom filter (double, 8-bit
// and 4-bit cells) against the blocked Bloom filter every dedup mode uses, in one
// run. Every filter has 2^20 cells (bits for the blocked filter, plus one at equal
// memory to the 4-bit cells: 2^22 bits) and k = 7, and holds 100,000 ids before
// the timed loop. Tests of absent ids mostly stop at the first unset peak; tests
// of present ids walk the whole signature (sum of 6i + 1 cells).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include "processor/filter/blocked_bloom.h"
#include "processor/filter/gaussian_bloom.h"

namespace oncecount::filter {
namespace {

constexpr uint32_t kCells = 1u << 20;
constexpr int kHashes = 7;
constexpr uint64_t kPrefill = 100'000;

IdHash Nth(uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, 77)};
}

template <class Filter>
void Prefill(Filter& f) {
  for (uint64_t i = 0; i < kPrefill; ++i) f.Insert(Nth(i));
}

GaussianBloom MakeGaussian(CellCoding coding) {
  return GaussianBloom::Create(kCells, kHashes, coding, 1).value();
}

void BM_GaussianInsert(benchmark::State& state) {
  GaussianBloom f = MakeGaussian(static_cast<CellCoding>(state.range(0)));
  Prefill(f);
  uint64_t i = kPrefill;
  for (auto _ : state) f.Insert(Nth(i++));
}
void BM_GaussianTestAbsent(benchmark::State& state) {
  GaussianBloom f = MakeGaussian(static_cast<CellCoding>(state.range(0)));
  Prefill(f);
  uint64_t i = 1u << 30;
  for (auto _ : state) benchmark::DoNotOptimize(f.MayContain(Nth(i++)));
}
void BM_GaussianTestPresent(benchmark::State& state) {
  GaussianBloom f = MakeGaussian(static_cast<CellCoding>(state.range(0)));
  Prefill(f);
  uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f.MayContain(Nth(i++ % kPrefill)));
}
// Arg: 0 = double cells, 8, 4 = coded cells.
BENCHMARK(BM_GaussianInsert)->Arg(0)->Arg(8)->Arg(4);
BENCHMARK(BM_GaussianTestAbsent)->Arg(0)->Arg(8)->Arg(4);
BENCHMARK(BM_GaussianTestPresent)->Arg(0)->Arg(8)->Arg(4);

// Arg: bits (2^20: the same cells; 2^22: the memory of 2^20 4-bit cells).
void BM_BlockedInsert(benchmark::State& state) {
  BlockedBloom f = BlockedBloom::Create(static_cast<uint64_t>(state.range(0)), kHashes, 1).value();
  Prefill(f);
  uint64_t i = kPrefill;
  for (auto _ : state) f.Insert(Nth(i++));
}
void BM_BlockedTestAbsent(benchmark::State& state) {
  BlockedBloom f = BlockedBloom::Create(static_cast<uint64_t>(state.range(0)), kHashes, 1).value();
  Prefill(f);
  uint64_t i = 1u << 30;
  for (auto _ : state) benchmark::DoNotOptimize(f.MayContain(Nth(i++)));
}
void BM_BlockedTestPresent(benchmark::State& state) {
  BlockedBloom f = BlockedBloom::Create(static_cast<uint64_t>(state.range(0)), kHashes, 1).value();
  Prefill(f);
  uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f.MayContain(Nth(i++ % kPrefill)));
}
BENCHMARK(BM_BlockedInsert)->Arg(1 << 20)->Arg(1 << 22);
BENCHMARK(BM_BlockedTestAbsent)->Arg(1 << 20)->Arg(1 << 22);
BENCHMARK(BM_BlockedTestPresent)->Arg(1 << 20)->Arg(1 << 22);

}  // namespace
}  // namespace oncecount::filter

BENCHMARK_MAIN();
