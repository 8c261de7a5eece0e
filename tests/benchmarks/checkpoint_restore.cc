// The local part of a restart from a local checkpoint, at the scale of the issue's
// goal: a shard with 1e6 counters whose filter remembers a window of 1e7 ids. Times
// encoding its snapshot (what the worker does after a commit), writing the
// checkpoint durably, reading it back and decoding the shard from it (what a restart
// does before it reads the changelog's tail), and, as the baseline in the same run,
// the same decode from the snapshot bytes alone (what a restore from the changelog
// does once it has read them). Medians of a few rounds; its own main.
//
// Usage: checkpoint_restore [COUNTERS] [IDS] [DIR]   (default 1000000 10000000 /tmp)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "processor/filter/filter_factory.h"
#include "processor/service/local_checkpoint.h"
#include "processor/shard/shard_state.h"

namespace {

namespace base = oncecount::base;

using oncecount::filter::Millis;
using oncecount::service::LocalCheckpoint;
using oncecount::shard::InputMessage;
using oncecount::shard::ShardState;
using Clock = std::chrono::steady_clock;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int kRounds = 5;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t counters = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int64_t ids = argc > 2 ? std::atoll(argv[2]) : 10'000'000;
  const std::string dir = (argc > 3 ? std::string(argv[3]) : std::string("/tmp")) +
                          "/checkpoint-restore-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  // 100,000 ids a second over a 100 s window: the filter holds `ids` at the end.
  oncecount::filter::DedupSpec spec;
  spec.expected_rate = 100'000;
  spec.window = Millis{ids / 100};
  auto made = ShardState::Create(base::Partition(0), spec, Millis{0});
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.message().c_str());
    return 1;
  }
  std::unique_ptr<ShardState> s = std::move(made).value();
  s->SetClaim(oncecount::base::Epoch(1), 1, oncecount::filter::IdHashKey{0x5eed});
  char key[32], value[96];
  for (int64_t i = 0; i < ids; ++i) {
    std::snprintf(key, sizeof key, "client/%lld", static_cast<long long>(i));
    const int n = std::snprintf(value, sizeof value, R"({"counter":"campaign-%08lld/creative"})",
                                static_cast<long long>(i % counters));
    const int64_t t = kT0 + i / 100;  // 100,000 a second
    s->Apply({base::Offset(i), std::string_view(key),
              std::string_view(value, static_cast<size_t>(n)), t},
             Millis{t});
    if ((i + 1) % 100'000 == 0) s->MarkCommitted(oncecount::base::Epoch(1));
  }
  s->MarkCommitted(oncecount::base::Epoch(1));
  std::vector<double> encode, write, read, decode;
  std::string snapshot;
  for (int round = 0; round < kRounds; ++round) {
    auto start = Clock::now();
    snapshot = s->EncodeSnapshot(oncecount::base::Epoch(1));
    encode.push_back(MsSince(start));
    const LocalCheckpoint checkpoint{base::Partition(0),
                                     oncecount::base::Epoch(1),
                                     1,
                                     s->committed_seq(),
                                     base::Offset(0),
                                     snapshot,
                                     base::Offset(0),
                                     std::nullopt};
    start = Clock::now();
    if (const oncecount::base::Status written =
            oncecount::service::WriteCheckpoint(dir, "events.changelog", checkpoint);
        !written) {
      std::fprintf(stderr, "%s\n", written.message().c_str());
      return 1;
    }
    write.push_back(MsSince(start));
    start = Clock::now();
    auto loaded = oncecount::service::ReadCheckpoint(dir, "events.changelog", base::Partition(0));
    auto restored = ShardState::FromSnapshot(loaded.value()->snapshot, {});
    read.push_back(MsSince(start));
    if (!restored.ok() || restored.value()->counters().size() != s->counters().size()) {
      std::fprintf(stderr, "restore failed\n");
      return 1;
    }
    start = Clock::now();
    auto again = ShardState::FromSnapshot(snapshot, {});
    decode.push_back(MsSince(start));
  }
  std::filesystem::remove_all(dir);
  std::printf(
      "{\"counters\": %zu, \"ids\": %lld, \"filter_bytes\": %llu, \"snapshot_bytes\": %zu, "
      "\"encode_ms\": %.0f, \"write_checkpoint_ms\": %.0f, \"read_and_decode_checkpoint_ms\": "
      "%.0f, \"decode_snapshot_bytes_ms\": %.0f}\n",
      s->counters().size(), static_cast<long long>(ids),
      static_cast<unsigned long long>(s->filter().Summary().bits_total / 8), snapshot.size(),
      Median(encode), Median(write), Median(read), Median(decode));
  return 0;
}
