// The memory a restore of one shard takes, with the service's default dedup settings
// (config::DedupConfig's defaults: 10,000 events a second, a 60 s window, a target of
// 1e-6) and the window full: what a pod's memory limit must leave room for
// (deploy/kubernetes/statefulset.yaml, docs/operations.md).
//
// It builds the changelog a shard leaves behind: a claim, the batches of one window of
// events at the expected rate spread over COUNTERS counters with a snapshot each time
// the batches since the last reach max(1 MiB, its size) (the service's cadence), a
// snapshot of the full shard, then as many batches again as the service writes before
// its next snapshot, and writes it to a file. Then it runs itself again
// (a fresh process, so that no memory freed by the writer is reused by the restore),
// which streams the records from the file one at a time into a lineage that keeps what
// follows the newest snapshot, as the service's cold restore reads them from Kafka
// (ShardLoader::Stream), restores the shard from it (service::RestoreCold), and
// reports, against its resident size before the first record:
//   - the restore's peak: the peak resident size (reset through /proc/self/clear_refs);
//   - the restored shard's memory: the resident size after, once malloc_trim has given
//     back what the restore freed.
// With LOAD above 1 the events come LOAD times faster than dedup.expected_rate and the
// filter grows with them, up to its limit: MAX_FILTER_MIB (dedup.max_filter_mib, 256
// by default), or for the default Bloom filter its ring of 64 filters, which it
// reaches first with the default sizing (about 20 MiB). The restore of a shard whose
// filter is at its limit is the most a pod must leave room for.
// FILTER picks dedup.filter (bloom, the default, or fingerprint, whose size is bounded
// by MAX_FILTER_MIB only).
// The restore must give back the shard written: every counter, from the newest
// snapshot, no record skipped; otherwise it fails (ctest runs it small).
// Linux only (/proc/self/status, clear_refs). Its own main.
//
// Usage: restore_memory [COUNTERS [LOAD [MAX_FILTER_MIB [FILTER]]]]   (100000 1 256 bloom)
//        restore_memory --restore FILE MAX_FILTER_MIB FILTER COUNTERS_WRITTEN   (the
//        second process)
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "processor/base/enum_names.h"
#include "processor/changelog/changelog_record.h"
#include "processor/changelog/lineage.h"
#include "processor/filter/constituent.h"
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
constexpr oncecount::filter::IdHashKey kHashKey{0x5eed};

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
  clear.flush();
  return static_cast<bool>(clear);
}

double MiB(int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Writes a shard's changelog: claim, batches of one window, snapshot, batches after.
class ChangelogWriter {
 public:
  ChangelogWriter(const oncecount::filter::DedupSpec& spec, int64_t counters, int64_t load)
      : spec_(spec),
        counters_(counters),
        events_per_s_(static_cast<int64_t>(spec.expected_rate) * load) {}

  // The distinct counters the events written touched.
  int64_t counters_written() const { return std::min(counters_, next_); }

  bool Write(std::vector<std::string>& records) {
    auto made = ShardState::Create(base::Partition(0), spec_, Millis{kT0});
    if (!made.ok()) {
      std::cerr << "restore_memory: " << made.message() << "\n";
      return false;
    }
    ShardState& shard = *made.value();
    shard.SetClaim(kEpoch, kClaim, kHashKey);
    records.emplace_back();
    // The claim carries the key the shard hashes ids with, as the service's do (a
    // restore refuses a changelog that disagrees on it).
    changelog::EncodeRecord(
        changelog::ClaimRecord{base::Partition(0), kEpoch, base::Seq(), kClaim, kHashKey.value},
        records.back());
    const int64_t window_events = events_per_s_ * spec_.window.count() / 1000;
    // The window, with a snapshot each time the batches since the last one reach
    // max(1 MiB, its size), as the service's cadence writes them: a restore holds the
    // newest complete snapshot and the batches after it, never the whole window.
    size_t snapshot_bytes = 0;
    size_t since = 0;
    int snapshots = 0;
    for (int64_t done = 0; done < window_events; done += kEventsPerBatch) {
      since += Apply(shard, std::min(kEventsPerBatch, window_events - done), records);
      if (since >= std::max<size_t>(1 << 20, snapshot_bytes)) {
        snapshot_bytes = WriteSnapshot(shard, records);
        since = 0;
        ++snapshots;
      }
    }
    // The newest snapshot, of the full window, and as many batches after it as the
    // service writes before the next: the most a restore reads past a snapshot.
    const size_t first_kept = records.size();
    snapshot_bytes = WriteSnapshot(shard, records);
    const size_t chunks = records.size() - first_kept;
    ++snapshots;
    size_t after = 0;
    while (after < std::max<size_t>(1 << 20, snapshot_bytes)) {
      after += Apply(shard, kEventsPerBatch, records);
    }
    std::cout << "changelog: " << records.size() << " records, " << snapshots
              << " snapshots; the newest " << MiB(static_cast<int64_t>(snapshot_bytes))
              << " MiB in " << chunks << " chunks, then " << MiB(static_cast<int64_t>(after))
              << " MiB of batches\n";
    return true;
  }

 private:
  // Appends the shard's snapshot in chunks; returns its size.
  static size_t WriteSnapshot(const ShardState& shard, std::vector<std::string>& records) {
    const std::string snapshot = shard.EncodeSnapshot(kEpoch);
    for (std::string& chunk : changelog::EncodeSnapshotChunks(
             base::Partition(0), kEpoch, kClaim, "oncecount", shard.committed_seq(), snapshot,
             changelog::kMaxRecordBytes)) {
      records.push_back(std::move(chunk));
    }
    return snapshot.size();
  }

  // Applies `events` events in batches of kEventsPerBatch; returns the bytes of the
  // batch records it appended.
  size_t Apply(ShardState& shard, int64_t events, std::vector<std::string>& records) {
    size_t bytes = 0;
    for (int64_t i = 0; i < events; ++i, ++next_) {
      const int64_t t = kT0 + next_ * 1000 / events_per_s_;
      const std::string key = "client/" + std::to_string(next_);
      const std::string value =
          R"({"counter":"c)" + std::to_string(next_ % counters_) + R"(","delta":1})";
      shard.Apply(InputMessage{base::Offset(next_), key, value, t}, Millis{t});
      if ((i + 1) % kEventsPerBatch == 0 || i + 1 == events) {
        for (const changelog::BatchRecord& b : shard.Seal(kEpoch, t)) {
          records.emplace_back();
          changelog::EncodeRecord(b, records.back());
          bytes += records.back().size();
        }
        shard.MarkCommitted(kEpoch);
      }
    }
    return bytes;
  }

  const oncecount::filter::DedupSpec spec_;
  const int64_t counters_;
  const int64_t events_per_s_;
  int64_t next_ = 0;
};

// The records, each as an 8-byte length and its bytes.
bool WriteRecords(const std::string& path, const std::vector<std::string>& records) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const std::string& r : records) {
    const uint64_t size = r.size();
    out.write(reinterpret_cast<const char*>(&size), sizeof size);
    out.write(r.data(), static_cast<std::streamsize>(r.size()));
  }
  return static_cast<bool>(out.flush());
}

// Streams the file's records into a lineage, restores from it, and reports memory.
int Restore(const std::string& path, const oncecount::filter::DedupSpec& spec,
            uint64_t counters_written) {
  std::ifstream in(path, std::ios::binary);
  const int64_t before = StatusBytes("VmRSS");
  if (!in || before < 0 || !ResetPeak()) {
    std::cerr << "restore_memory: cannot read " << path << " or /proc/self (Linux only)\n";
    return 1;
  }
  changelog::LineageBuilder lineage(changelog::LineageBuilder::Keep::kFromNewestSnapshot);
  std::string record;
  uint64_t size = 0;
  while (in.read(reinterpret_cast<char*>(&size), sizeof size)) {
    record.resize(size);
    if (!in.read(record.data(), static_cast<std::streamsize>(size))) break;
    lineage.Add(std::string_view(record));
  }
  std::string().swap(record);
  auto restored = oncecount::service::RestoreCold(
      base::Partition(0), std::move(lineage), spec,
      oncecount::service::ClaimDraw{0xbeef, oncecount::filter::IdHashKey{1}});
  const int64_t peak = StatusBytes("VmHWM");
  malloc_trim(0);
  const int64_t after = StatusBytes("VmRSS");
  if (!restored.ok()) {
    std::cerr << "restore_memory: the restore failed: " << restored.error() << "\n";
    return 1;
  }
  const ShardState& shard = *restored.value().state;
  const oncecount::filter::FilterSummary filter = shard.filter().Summary();
  if (shard.counters().size() != counters_written || restored.value().unreadable_records != 0 ||
      !restored.value().kept || restored.value().kept->snapshot_bytes == 0 ||
      filter.inserted == 0) {
    std::cerr << "restore_memory: the restore did not give back the shard written ("
              << shard.counters().size() << " of " << counters_written << " counters, "
              << restored.value().unreadable_records
              << " records skipped): " << restored.value().summary << "\n";
    return 1;
  }
  std::cout << "restored: " << shard.counters().size() << " counters, filter "
            << MiB(static_cast<int64_t>(filter.bits_total / 8)) << " MiB of its bound "
            << MiB(static_cast<int64_t>(filter.memory_limit_bytes)) << " MiB (forgot "
            << filter.forgotten_early << " ids early)\n"
            << "restore peak (peak RSS - before): " << MiB(peak - before) << " MiB\n"
            << "restored shard (RSS after malloc_trim - before): " << MiB(after - before)
            << " MiB\n";
  return 0;
}

}  // namespace

// The service's dedup settings, the defaults but for dedup.max_filter_mib and
// dedup.filter.
oncecount::filter::DedupSpec SpecWith(int64_t max_filter_mib,
                                      oncecount::filter::Constituent constituent) {
  oncecount::config::DedupConfig dedup;
  dedup.max_filter_mib = max_filter_mib;
  dedup.filter = constituent;
  return oncecount::config::DedupSpecOf(dedup);
}

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--restore") == 0) {
    const auto constituent =
        oncecount::base::ParseName(oncecount::filter::kConstituentNames, argv[4]);
    if (!constituent) return 2;
    return Restore(argv[2], SpecWith(std::atoll(argv[3]), *constituent),
                   static_cast<uint64_t>(std::atoll(argv[5])));
  }
  const int64_t counters = argc > 1 ? std::atoll(argv[1]) : 100'000;
  const int64_t load = argc > 2 ? std::atoll(argv[2]) : 1;
  const int64_t max_filter_mib =
      argc > 3 ? std::atoll(argv[3]) : oncecount::config::DedupConfig{}.max_filter_mib;
  const std::string filter_name = argc > 4 ? argv[4] : "bloom";
  const auto constituent =
      oncecount::base::ParseName(oncecount::filter::kConstituentNames, filter_name);
  if (counters < 1 || load < 1 || max_filter_mib < 1 || !constituent) {
    std::cerr << "usage: restore_memory [COUNTERS [LOAD [MAX_FILTER_MIB [FILTER]]]] (each "
                 "number at least 1; FILTER bloom or fingerprint)\n";
    return 2;
  }
  const oncecount::filter::DedupSpec spec = SpecWith(max_filter_mib, *constituent);
  std::vector<std::string> records;
  ChangelogWriter writer(spec, counters, load);
  if (!writer.Write(records)) return 1;
  const std::string path = "/tmp/restore-memory-" + std::to_string(getpid()) + ".log";
  if (!WriteRecords(path, records)) {
    std::cerr << "restore_memory: cannot write " << path << "\n";
    return 1;
  }
  std::cout.flush();
  // This binary by its path (a shell's /proc/self/exe would be the shell).
  std::vector<char> self(4096, '\0');
  if (readlink("/proc/self/exe", self.data(), self.size() - 1) <= 0) return 1;
  const std::string command = std::string(self.data()) + " --restore " + path + " " +
                              std::to_string(max_filter_mib) + " " + filter_name + " " +
                              std::to_string(writer.counters_written());
  const int status = std::system(command.c_str());
  std::remove(path.c_str());
  return status == 0 ? 0 : 1;
}
