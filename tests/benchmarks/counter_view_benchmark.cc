// What publishing a shard's counters and answering queries cost at 1e4..1e6
// counters: the next view made from the previous one with the counters a commit
// touched (CounterSnapshot::With, what shards do after every commit), once from a
// fresh view and as a chain of commits (folds included), against a copy and sort
// of every counter (FromMap, what they did before, and what a first view without a
// snapshot still does); the first view of a shard restored from a snapshot; and a
// lookup and a page of 1,000 names summed over 4 shards, also after commits.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/filter/filter_factory.h"
#include "processor/shard/counter_snapshot.h"
#include "processor/shard/shard_state.h"

namespace {

using oncecount::shard::CounterRef;
using oncecount::shard::CounterSnapshot;
using oncecount::shard::CountersPtr;
using oncecount::shard::CounterValue;
using oncecount::shard::ShardState;

std::string Name(int64_t i) {
  char name[40];
  std::snprintf(name, sizeof name, "campaign-%08lld/creative", static_cast<long long>(i));
  return name;
}

std::unordered_map<std::string, int64_t> Live(int64_t counters) {
  std::unordered_map<std::string, int64_t> live;
  live.reserve(static_cast<size_t>(counters));
  for (int64_t i = 0; i < counters; ++i) live[Name(i)] = i;
  return live;
}

// range(0): counters in the shard; range(1): counters a commit touched.
void BM_ViewFromPrevious(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const CounterSnapshot base = CounterSnapshot::FromMap(Live(counters));
  std::mt19937_64 rng(1);
  std::vector<CounterValue> touched;
  for (int64_t i = 0; i < state.range(1); ++i) {
    touched.push_back({Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters))), 1});
  }
  std::vector<CounterRef> refs;
  for (const CounterValue& c : touched) refs.push_back({c.name, c.value});
  for (auto _ : state) {
    CounterSnapshot next = base.With(refs);
    benchmark::DoNotOptimize(next);
  }
}
BENCHMARK(BM_ViewFromPrevious)
    ->Args({10'000, 100})
    ->Args({1'000'000, 100})
    ->Args({1'000'000, 10'000})
    ->Args({1'000'000, 100'000})
    ->Unit(benchmark::kMicrosecond);

// range(0): counters in the shard at first; range(1): counters each commit touches,
// half of them new names (as when many distinct counters arrive). Each iteration is
// one commit of a chain, so the time is the amortized cost with the folds.
void BM_ViewAfterEachCommitOfAChain(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const int64_t touched = state.range(1);
  CounterSnapshot view = CounterSnapshot::FromMap(Live(counters));
  std::mt19937_64 rng(4);
  int64_t next_new = counters;
  std::vector<std::string> names(static_cast<size_t>(touched));
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<CounterRef> refs;
    for (int64_t i = 0; i < touched; ++i) {
      std::string& name = names[static_cast<size_t>(i)];
      // New names spread over the whole range, as known ones are.
      name = i % 2 == 0 ? Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters)))
                        : Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters))) +
                              "/" + std::to_string(next_new++);
      refs.push_back({name, i});
    }
    state.ResumeTiming();
    view = view.With(std::move(refs));
    benchmark::DoNotOptimize(view);
  }
  state.counters["counters_at_end"] = static_cast<double>(view.size());
}
BENCHMARK(BM_ViewAfterEachCommitOfAChain)
    ->Args({10'000, 100})
    ->Args({1'000'000, 1'000})
    ->Args({1'000'000, 10'000})
    ->Unit(benchmark::kMicrosecond);

void BM_ViewCopyingEveryCounter(benchmark::State& state) {
  const auto live = Live(state.range(0));
  for (auto _ : state) {
    CounterSnapshot all = CounterSnapshot::FromMap(live);
    benchmark::DoNotOptimize(all);
  }
}
BENCHMARK(BM_ViewCopyingEveryCounter)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);

// A snapshot of a shard holding range(0) counters, in a small filter (no filter state
// to speak of: the counters are what is measured).
std::string SnapshotOf(int64_t counters) {
  oncecount::filter::DedupSpec spec;
  spec.mode = oncecount::filter::DedupMode::kNone;
  auto made = ShardState::Create(oncecount::base::Partition{0}, spec, oncecount::filter::Millis{0});
  if (!made.ok()) std::abort();
  oncecount::changelog::BatchRecord batch;
  batch.seq = oncecount::base::Seq{1};
  batch.input_to = oncecount::base::Offset{1};
  for (int64_t i = 0; i < counters; ++i) batch.counters.push_back({Name(i), i});
  made.value()->Replay(batch);
  return made.value()->EncodeSnapshot(oncecount::base::Epoch{1});
}

// The first view of a shard restored from a snapshot of range(0) counters (what the
// processor thread does when it adopts a restored shard); the decode is not timed.
void BM_FirstViewAfterRestore(benchmark::State& state) {
  const std::string snapshot = SnapshotOf(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    auto restored = ShardState::FromSnapshot(snapshot, {});
    if (!restored.ok()) std::abort();
    std::unique_ptr<ShardState> shard = std::move(restored).value();
    state.ResumeTiming();
    benchmark::DoNotOptimize(shard->MakeView({}, 0)->counters->size());
    state.PauseTiming();
    shard.reset();  // freeing the state is not the view's cost
    state.ResumeTiming();
  }
}
// A fixed count: the untimed decode would otherwise run until the view alone has
// taken the minimum time.
BENCHMARK(BM_FirstViewAfterRestore)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Iterations(10)
    ->Unit(benchmark::kMicrosecond);

// The decode of that snapshot (on the loader's thread, before the view).
void BM_RestoreFromSnapshot(benchmark::State& state) {
  const std::string snapshot = SnapshotOf(state.range(0));
  for (auto _ : state) {
    auto restored = ShardState::FromSnapshot(snapshot, {});
    if (!restored.ok()) std::abort();
    benchmark::DoNotOptimize(restored.value()->position());
  }
}
BENCHMARK(BM_RestoreFromSnapshot)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);

// Four shards holding range(0) counters in all, each name in two shards.
std::vector<CountersPtr> Shards(int64_t counters) {
  std::vector<std::unordered_map<std::string, int64_t>> parts(4);
  for (int64_t i = 0; i < counters; ++i) {
    parts[static_cast<size_t>(i % 4)][Name(i)] = 1;
    parts[static_cast<size_t>((i + 1) % 4)][Name(i)] = 2;
  }
  std::vector<CountersPtr> shards;
  for (const auto& p : parts) {
    shards.push_back(std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(p)));
  }
  return shards;
}

// The shards after 100 commits of 1,000 known names each: names in recent runs over
// the base (one run before issue 34; a few levels of runs since).
std::vector<CountersPtr> AfterCommits(std::vector<CountersPtr> shards, int64_t counters) {
  std::mt19937_64 rng(6);
  std::vector<std::string> names(1000);
  for (CountersPtr& shard : shards) {
    for (int commit = 0; commit < 100; ++commit) {
      std::vector<CounterRef> refs;
      for (std::string& name : names) {
        name = Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters)));
        refs.push_back({name, 3});
      }
      shard = std::make_shared<const CounterSnapshot>(shard->With(std::move(refs)));
    }
  }
  return shards;
}

void BM_PageOf1000SummedOverFourShards(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const auto shards = Shards(counters);
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    const std::string after = Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters)));
    auto page = CounterSnapshot::ListSum(shards, "", 1000, after);
    benchmark::DoNotOptimize(page);
  }
}
BENCHMARK(BM_PageOf1000SummedOverFourShards)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond);

void BM_PageOf1000SummedOverFourShardsAfterCommits(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const auto shards = AfterCommits(Shards(counters), counters);
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    const std::string after = Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters)));
    auto page = CounterSnapshot::ListSum(shards, "", 1000, after);
    benchmark::DoNotOptimize(page);
  }
}
BENCHMARK(BM_PageOf1000SummedOverFourShardsAfterCommits)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond);

void BM_LookupSummedOverFourShardsAfterCommits(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const auto shards = AfterCommits(Shards(counters), counters);
  std::mt19937_64 rng(3);
  for (auto _ : state) {
    auto value = CounterSnapshot::FindSum(
        shards, Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters))));
    benchmark::DoNotOptimize(value);
  }
}
BENCHMARK(BM_LookupSummedOverFourShardsAfterCommits)->Arg(1'000'000);

void BM_LookupSummedOverFourShards(benchmark::State& state) {
  const int64_t counters = state.range(0);
  const auto shards = Shards(counters);
  std::mt19937_64 rng(3);
  for (auto _ : state) {
    auto value = CounterSnapshot::FindSum(
        shards, Name(static_cast<int64_t>(rng() % static_cast<uint64_t>(counters))));
    benchmark::DoNotOptimize(value);
  }
}
// What /v1/stats's distinct counter count costs (at most once a second past 100,000
// counters): range(0) counters over 24 shards, each name in two of them.
void BM_DistinctNamesOverTwentyFourShards(benchmark::State& state) {
  const int64_t counters = state.range(0);
  std::vector<std::unordered_map<std::string, int64_t>> parts(24);
  for (int64_t i = 0; i < counters; ++i) {
    parts[static_cast<size_t>(i % 24)][Name(i)] = 1;
    parts[static_cast<size_t>((i + 1) % 24)][Name(i)] = 2;
  }
  std::vector<CountersPtr> shards;
  for (const auto& p : parts) {
    shards.push_back(std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(p)));
  }
  for (auto _ : state) benchmark::DoNotOptimize(CounterSnapshot::DistinctNames(shards));
}
BENCHMARK(BM_DistinctNamesOverTwentyFourShards)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_LookupSummedOverFourShards)->Arg(10'000)->Arg(1'000'000);

}  // namespace

BENCHMARK_MAIN();
