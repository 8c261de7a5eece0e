// The memory a restore of one shard takes, with the service's default dedup settings
// (config::DedupConfig's defaults: 10,000 events a second, a 60 s window, a target of
// 1e-6) and the window full: what a pod's memory limit must leave room for
// (deploy/kubernetes/statefulset.yaml, docs/operations.md).
//
// It builds the changelog a shard leaves behind: a claim, the batches of one window of
// events at the expected rate spread over COUNTERS counters, a snapshot of the full
// shard, then as many batches again as the service writes before its next snapshot
// (max(1 MiB, the snapshot's size)). Then, with those records in memory, it resets
// the process's peak resident size (/proc/self/clear_refs) and restores the shard
// from them as a cold restore does (service::RestoreCold), and reports:
//   - the shard's steady memory: resident size after the restore, minus before;
//   - the restore's peak: the peak resident size during it, minus before;
//   - the bytes a restore keeps of what it reads (the snapshot chunks and the batches
//     after them), which a real restore holds on top, as it reads them from Kafka.
// Linux only (it reads /proc/self/status). Its own main.
//
// Usage: restore_memory [COUNTERS]   (default 100000)
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "processor/changelog/changelog_record.h"
#include "processor/service/restore.h"
#include "processor/shard/shard_state.h"

namespace {

namespace base = oncecount::base;
namespace changelog = oncecount::changelog;

using oncecount::filter::Millis;
using oncecount::shard::InputMessage;
using oncecount::shard::ShardState;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kEventsPerBatch = 1000;  // 100 ms of input at 10,000 a second
constexpr base::Epoch kEpoch(1);
constexpr uint64_t kClaim = 0xc1a1;

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), in bytes.
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

// Makes the peak resident size start again from the current one.
bool ResetPeak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear);
}

double MiB(int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Writes a shard's changelog: claim, batches of one window, snapshot, batches after.
class ChangelogWriter {
 public:
  ChangelogWriter(const oncecount::filter::DedupSpec& spec, int64_t counters)
      : spec_(spec), counters_(counters) {}

  bool Write(std::vector<std::string>& records, size_t& kept_bytes) {
    auto made = ShardState::Create(base::Partition(0), spec_, Millis{kT0});
    if (!made.ok()) {
      std::cerr << "restore_memory: " << made.message() << "\n";
      return false;
    }
    ShardState& shard = *made.value();
    shard.SetClaim(kEpoch, kClaim);
    records.emplace_back();
    changelog::EncodeRecord(changelog::ClaimRecord{base::Partition(0), kEpoch, base::Seq(), kClaim},
                            records.back());
    const auto window_events =
        static_cast<int64_t>(spec_.expected_rate) * spec_.window.count() / 1000;
    Apply(shard, window_events, records);
    const std::string snapshot = shard.EncodeSnapshot(kEpoch);
    const size_t first_kept = records.size();
    AppendSnapshot(shard, snapshot, records);
    const size_t snapshot_end = records.size();
    size_t after = 0;
    while (after < std::max<size_t>(1 << 20, snapshot.size())) {
      Apply(shard, kEventsPerBatch, records);
      after += records.back().size();
    }
    kept_bytes = 0;
    for (size_t i = first_kept; i < records.size(); ++i) kept_bytes += records[i].size();
    std::cout << "changelog: " << records.size() << " records; snapshot " << MiB(snapshot.size())
              << " MiB in " << snapshot_end - first_kept << " chunks; " << MiB(after)
              << " MiB of batches after it\n";
    return true;
  }

 private:
  void Apply(ShardState& shard, int64_t events, std::vector<std::string>& records) {
    for (int64_t i = 0; i < events; ++i, ++next_) {
      const int64_t t = kT0 + next_ * 1000 / static_cast<int64_t>(spec_.expected_rate);
      const std::string key = "client/" + std::to_string(next_);
      const std::string value =
          R"({"counter":"c)" + std::to_string(next_ % counters_) + R"(","delta":1})";
      shard.Apply(InputMessage{base::Offset(next_), key, value, t}, Millis{t});
      if ((i + 1) % kEventsPerBatch == 0 || i + 1 == events) {
        for (const changelog::BatchRecord& b : shard.Seal(kEpoch, t)) {
          records.emplace_back();
          changelog::EncodeRecord(b, records.back());
        }
        shard.MarkCommitted(kEpoch);
      }
    }
  }

  static void AppendSnapshot(const ShardState& shard, const std::string& bytes,
                             std::vector<std::string>& records) {
    const size_t chunk = changelog::kSnapshotChunkBytes;
    const auto count = static_cast<uint32_t>((bytes.size() + chunk - 1) / chunk);
    for (uint32_t i = 0; i < count; ++i) {
      records.emplace_back();
      changelog::EncodeRecord(
          changelog::SnapshotChunk{base::Partition(0), kEpoch, shard.committed_seq(), i, count,
                                   bytes.substr(i * chunk, chunk), kClaim},
          records.back());
    }
  }

  const oncecount::filter::DedupSpec spec_;
  const int64_t counters_;
  int64_t next_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t counters = argc > 1 ? std::atoll(argv[1]) : 100'000;
  const oncecount::filter::DedupSpec spec =
      oncecount::config::DedupSpecOf(oncecount::config::DedupConfig{});
  std::vector<std::string> records;
  size_t kept_bytes = 0;
  if (!ChangelogWriter(spec, counters).Write(records, kept_bytes)) return 1;

  const int64_t before = StatusBytes("VmRSS");
  if (before < 0 || !ResetPeak()) {
    std::cerr << "restore_memory: needs Linux's /proc/self/status and clear_refs\n";
    return 1;
  }
  auto restored = oncecount::service::RestoreCold(base::Partition(0), records, spec, 0xbeef);
  const int64_t peak = StatusBytes("VmHWM");
  const int64_t after = StatusBytes("VmRSS");
  if (!restored.ok()) {
    std::cerr << "restore_memory: the restore failed: " << restored.error() << "\n";
    return 1;
  }
  const ShardState& shard = *restored.value().state;
  std::cout << "restored: " << shard.counters().size() << " counters, filter "
            << MiB(static_cast<int64_t>(shard.filter().Summary().bits_total / 8)) << " MiB\n"
            << "shard steady (RSS after - before): " << MiB(after - before) << " MiB\n"
            << "restore peak (peak RSS - before): " << MiB(peak - before) << " MiB\n"
            << "records a restore keeps while it reads: " << MiB(static_cast<int64_t>(kept_bytes))
            << " MiB\n";
  return 0;
}
