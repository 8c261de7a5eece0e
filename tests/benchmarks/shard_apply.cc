// The apply rate of an instance's shards as the number of distinct counters grows,
// without Kafka: what a worker thread does per event and per commit. 24 shards take
// the same stream of events in turn (as the 24 partitions of scripts/bench-scale do)
// and each commits every kPerCommit of its events: it seals its batches, encodes
// them as changelog records, writes a snapshot when the cadence of a 5 MB changelog
// partition says it is due, marks the commit and publishes its view. The events are
// the same number at every size, drawn uniformly over that many counters (as
// `oncecount inject --counters` draws them); parsing them is part of the work.
//
// Baseline: the first size (100 counters by default), in the same run; the sizes
// take turns for kRounds rounds and the medians are reported. Its own main.
//
// Usage: shard_apply [EVENTS] [COUNTERS...]   (default 1000000 100 10000 1000000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/filter/filter_factory.h"
#include "processor/service/snapshot_cadence.h"
#include "processor/shard/shard_state.h"

namespace {

using oncecount::filter::Millis;
using oncecount::shard::Decision;
using oncecount::shard::InputMessage;
using oncecount::shard::ShardState;
using Clock = std::chrono::steady_clock;

constexpr int kShards = 24;
constexpr size_t kPerCommit = 800;  // 200,000 events a second, 24 shards, 100 ms commits
constexpr size_t kPerApply = 64;    // messages handed to ApplyAll at once
constexpr int kRounds = 5;
constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kEventsPerSecond = 200'000;

struct Workload {
  std::vector<std::string> keys;
  std::vector<std::string> values;
};

Workload Make(int64_t events, int64_t counters) {
  Workload w;
  w.keys.reserve(static_cast<size_t>(events));
  w.values.reserve(static_cast<size_t>(events));
  std::mt19937_64 rng(42);
  for (int64_t i = 0; i < events; ++i) {
    const uint64_t counter = rng() % static_cast<uint64_t>(counters);
    w.keys.push_back("client-" + std::to_string(i % 1000) + "/" + std::to_string(i));
    w.values.push_back(R"({"counter":"counter-)" + std::to_string(counter) + R"(","delta":1})");
  }
  return w;
}

struct Shard {
  std::unique_ptr<ShardState> state;
  std::vector<InputMessage> pending;
  size_t since_commit = 0;
  size_t bytes_since_snapshot = 0;
  size_t last_snapshot_bytes = 0;
};

std::unique_ptr<ShardState> NewShard(oncecount::base::Partition partition) {
  oncecount::filter::DedupSpec spec;  // as scripts/bench-scale configures it
  spec.expected_rate = 5000;
  spec.window = Millis{10'000};
  spec.target_fpp = 1e-9;
  auto made = ShardState::Create(partition, spec, Millis{kT0});
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.message().c_str());
    std::exit(1);
  }
  auto state = std::move(made).value();
  state->SetClaim(oncecount::base::Epoch(1), 1, oncecount::filter::IdHashKey{0x5eed});
  oncecount::shard::ShardRules rules;
  rules.changelog_retention_bytes = size_t{5} << 20;
  state->set_rules(rules);
  return state;
}

void Commit(Shard& shard, std::string& scratch) {
  ShardState& state = *shard.state;
  for (const auto& batch : state.Seal(oncecount::base::Epoch(1), 0)) {
    scratch.clear();
    oncecount::changelog::EncodeRecord(batch, scratch);
    shard.bytes_since_snapshot += scratch.size();
  }
  oncecount::service::SnapshotCadence cadence;
  cadence.retention_bytes = state.rules().changelog_retention_bytes;
  if (shard.bytes_since_snapshot >=
      oncecount::service::SnapshotDueAfterBytes(cadence, shard.last_snapshot_bytes)) {
    shard.last_snapshot_bytes = state.EncodeSnapshot(oncecount::base::Epoch(1)).size();
    shard.bytes_since_snapshot = 0;
  }
  state.MarkCommitted(oncecount::base::Epoch(1));
  state.MakeView({}, 0, ShardState::FilterDetail::kReuse);
}

// Events a second through all the shards.
double Run(const Workload& w) {
  std::vector<Shard> shards(kShards);
  for (int p = 0; p < kShards; ++p) shards[p].state = NewShard(oncecount::base::Partition(p));
  std::vector<Decision> decisions(kPerApply);
  std::string scratch;
  uint64_t applied = 0;
  const auto start = Clock::now();
  for (size_t i = 0; i < w.keys.size(); ++i) {
    Shard& shard = shards[i % kShards];
    const int64_t t = kT0 + static_cast<int64_t>(i) * 1000 / kEventsPerSecond;
    shard.pending.push_back({oncecount::base::Offset(static_cast<int64_t>(i / kShards)),
                             std::string_view(w.keys[i]), std::string_view(w.values[i]), t});
    if (shard.pending.size() < kPerApply && i + kShards < w.keys.size()) continue;
    shard.state->ApplyAll(shard.pending, Millis{t}, decisions);
    shard.since_commit += shard.pending.size();
    shard.pending.clear();
    if (shard.since_commit >= kPerCommit || i + kShards >= w.keys.size()) {
      Commit(shard, scratch);
      shard.since_commit = 0;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Shard& shard : shards) applied += shard.state->stats().applied;
  if (applied + 100 < w.keys.size()) {
    std::fprintf(stderr, "only %llu of %zu events applied\n",
                 static_cast<unsigned long long>(applied), w.keys.size());
    std::exit(1);
  }
  return static_cast<double>(w.keys.size()) / seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t events = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  std::vector<int64_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {100, 10'000, 1'000'000};
  std::vector<Workload> workloads;
  for (int64_t n : sizes) workloads.push_back(Make(events, n));
  std::vector<std::vector<double>> rates(sizes.size());
  for (int round = 0; round < kRounds; ++round) {
    for (size_t s = 0; s < sizes.size(); ++s) rates[s].push_back(Run(workloads[s]));
  }
  const double baseline = Median(rates[0]);
  for (size_t s = 0; s < sizes.size(); ++s) {
    const double rate = Median(rates[s]);
    std::printf("{\"counters\": %lld, \"events_per_s\": %.0f, \"against_first\": %.2f}\n",
                static_cast<long long>(sizes[s]), rate, rate / baseline);
  }
  return 0;
}
