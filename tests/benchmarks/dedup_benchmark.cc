// Nanoseconds per dedup operation (test + insert) at steady state, for the fbf
// (both checks), bloom and exact modes, at windows of 1e4..1e8 ids. Mode `none`
// (no filter) measures what the benchmark itself costs per operation: making the
// ids, advancing the clock and counting the verdicts, which every other mode's
// figure includes. At 1e4 ids every filter is in cache: the instructions alone.
//
// Workload: the filter is sized for a 60 s window holding W ids (rate W/60 per
// second) and pre-filled with one full window of ids on its simulated clock. Each
// measured batch of 256 operations holds 90% fresh ids and 10% retries of ids
// applied earlier inside the window; the clock advances with the operations, so
// refreshes (and expiry, for exact) are part of the measured cost.
//
// Retries are drawn uniformly from the newer half of the window.
//
// Run: build/tests/benchmarks/dedup_benchmark --benchmark_repetitions=5
//        --benchmark_report_aggregates_only=true
// (scripts/bench does this and records the medians in docs/BENCHMARKS.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "processor/filter/filter_factory.h"
#include "processor/filter/id_hash.h"

namespace {

using oncecount::filter::Constituent;
using oncecount::filter::DedupFilter;
using oncecount::filter::DedupMode;
using oncecount::filter::DedupSpec;
using oncecount::filter::IdHash;
using oncecount::filter::MembershipCheck;
using oncecount::filter::Millis;
using oncecount::filter::SeededMix;
using oncecount::filter::Verdict;

constexpr int64_t kWindowMs = 60000;
constexpr size_t kBatch = 256;

IdHash IdAt(uint64_t index) {
  return IdHash{SeededMix(IdHash{index}, 0xBE1C4)};
}

// One pre-filled filter at a time: the largest ones take gigabytes.
struct Fixture {
  std::string key;
  std::unique_ptr<DedupFilter> filter;
  double rate = 0;       // ids per simulated second
  uint64_t next_id = 0;  // ids [0, next_id) were offered, in order
  double clock_ms = 0;
  std::mt19937_64 rng{42};
};

struct Mode {
  const char* name;
  DedupMode mode;
  MembershipCheck check;
  Constituent constituent;
};

Fixture& Prepared(const Mode& m, uint64_t window_ids) {
  static Fixture fixture;
  const std::string key = std::string(m.name) + "/" + std::to_string(window_ids);
  if (fixture.key == key) return fixture;
  fixture = Fixture{};
  fixture.key = key;
  fixture.rate = static_cast<double>(window_ids) / (kWindowMs / 1000.0);
  DedupSpec spec;
  spec.mode = m.mode;
  spec.check = m.check;
  spec.constituent = m.constituent;
  spec.expected_rate = fixture.rate;
  spec.window = Millis{kWindowMs};
  spec.target_fpp = 1e-6;
  spec.adaptive = true;
  auto made = oncecount::filter::MakeDedupFilter(spec, Millis{0});
  if (!made) {
    fixture.key.clear();
    return fixture;
  }
  fixture.filter = std::move(made).value();
  // Pre-fill: one window and one refresh period's worth of ids, in batches.
  std::vector<IdHash> batch(kBatch);
  std::vector<Verdict> verdicts(kBatch);
  const uint64_t prefill = window_ids + window_ids / 8;
  while (fixture.next_id < prefill) {
    for (size_t i = 0; i < kBatch; ++i) batch[i] = IdAt(fixture.next_id++);
    fixture.clock_ms += kBatch * 1000.0 / fixture.rate;
    fixture.filter->AdvanceTo(Millis{static_cast<int64_t>(fixture.clock_ms)});
    fixture.filter->TestAndInsertBatch(batch, verdicts);
  }
  return fixture;
}

void BM_Dedup(benchmark::State& state, Mode m) {
  const auto window_ids = static_cast<uint64_t>(state.range(0));
  Fixture& f = Prepared(m, window_ids);
  if (!f.filter) {
    state.SkipWithError("could not build the filter");
    return;
  }
  std::vector<IdHash> batch(kBatch);
  std::vector<Verdict> verdicts(kBatch);
  const uint64_t retry_span = window_ids / 2;  // retries of ids well inside the window
  uint64_t duplicates = 0, ops = 0;
  for (auto _ : state) {
    // Id generation (a 64-bit mix per id, ~1 ns) stays in the timed loop: pausing
    // the timer costs more than it.
    for (size_t i = 0; i < kBatch; ++i) {
      if (i % 10 == 9) {
        batch[i] = IdAt(f.next_id - 1 - f.rng() % retry_span);
      } else {
        batch[i] = IdAt(f.next_id++);
      }
    }
    f.clock_ms += kBatch * 1000.0 / f.rate;
    f.filter->AdvanceTo(Millis{static_cast<int64_t>(f.clock_ms)});
    f.filter->TestAndInsertBatch(batch, verdicts);
    for (Verdict v : verdicts) duplicates += v != Verdict::kNew ? 1 : 0;
    ops += kBatch;
  }
  state.SetItemsProcessed(static_cast<int64_t>(ops));
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(ops), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["dup_fraction"] = static_cast<double>(duplicates) / static_cast<double>(ops);
  const auto summary = f.filter->Summary();
  state.counters["bits_per_window_id"] =
      static_cast<double>(summary.bits_total) / static_cast<double>(window_ids);
  state.counters["filters"] = summary.filters;
}

// One id's hash as the service computes it: XXH3-64 of "<client>/<seq>". The ids are
// formatted before the timed loop.
void BM_HashIdempotencyId(benchmark::State& state) {
  std::vector<std::string> ids;
  for (uint64_t seq = 0; seq < 4096; ++seq) {
    ids.push_back("client-" + std::to_string(seq % 997) + "/" + std::to_string(1000000 + seq));
  }
  // Arg 0: unkeyed (shards from before keys); 1: under a shard's key.
  const oncecount::filter::IdHashKey key = state.range(0) != 0
                                               ? oncecount::filter::IdHashKey{0x9E3779B97F4A7C15ULL}
                                               : oncecount::filter::kUnkeyed;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(oncecount::filter::HashIdempotencyId(ids[i], key));
    i = (i + 1) & 4095;
  }
}
BENCHMARK(BM_HashIdempotencyId)->Arg(0)->Arg(1);

}  // namespace

// Windows outermost, so that the modes compared at one window run back to back.
int main(int argc, char** argv) {
  const Constituent bloom = Constituent::kBlockedBloom;
  const Mode modes[] = {
      {"fbf_fingerprint", DedupMode::kFbf, MembershipCheck::kPairs, Constituent::kFingerprint},
      {"fbf_pairs", DedupMode::kFbf, MembershipCheck::kPairs, bloom},
      {"fbf_paper", DedupMode::kFbf, MembershipCheck::kPaper, bloom},
      {"bloom", DedupMode::kBloom, MembershipCheck::kPairs, bloom},
      {"exact", DedupMode::kExact, MembershipCheck::kPairs, bloom},
      {"none", DedupMode::kNone, MembershipCheck::kPairs, bloom}};
  for (int64_t ids : {10'000, 100'000, 1'000'000, 10'000'000, 100'000'000}) {
    for (const Mode& m : modes) {
      benchmark::RegisterBenchmark((std::string("BM_Dedup/") + m.name).c_str(), BM_Dedup, m)
          ->Arg(ids)
          ->Unit(benchmark::kNanosecond)
          ->Iterations(20000);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
