#include "processor/service/snapshot_cadence.h"

#include <algorithm>
#include <cmath>

namespace oncecount::service {
namespace {

// The part of the retention the inequality may use: an eighth is left for record
// and batch framing, markers and dead letters, which the sizes here do not count.
size_t UsableRetention(const SnapshotCadence& c) {
  return c.retention_bytes - c.retention_bytes / 8;
}

}  // namespace

bool SnapshotOutgrowsRetention(const SnapshotCadence& c, size_t last_snapshot_bytes) {
  if (c.retention_bytes == 0) return false;
  return 2 * last_snapshot_bytes + c.min_between_bytes > UsableRetention(c);
}

size_t SnapshotDueAfterBytes(const SnapshotCadence& c, size_t last_snapshot_bytes) {
  const size_t due = std::max(c.floor_bytes, last_snapshot_bytes);
  if (c.retention_bytes == 0 || SnapshotOutgrowsRetention(c, last_snapshot_bytes)) return due;
  return std::min(due, UsableRetention(c) - 2 * last_snapshot_bytes);
}

double SnapshotPhase(base::Partition partition) {
  constexpr double kGoldenRatioFraction = 0.6180339887498949;
  double whole = 0;
  return std::modf(static_cast<double>(partition.value()) * kGoldenRatioFraction, &whole);
}

AdoptedCycle AdoptedSnapshotCycle(const SnapshotCadence& c, base::Partition partition,
                                  const std::optional<SnapshotCycleKept>& kept) {
  AdoptedCycle cycle;
  cycle.last_snapshot_bytes = kept ? kept->snapshot_bytes : 0;
  const size_t due = SnapshotDueAfterBytes(c, cycle.last_snapshot_bytes);
  const double phase = SnapshotPhase(partition);
  const auto staggered = static_cast<size_t>(phase * static_cast<double>(due));
  cycle.ms_since_snapshot =
      static_cast<int64_t>(phase * static_cast<double>(c.max_interval.count()));
  if (kept) {
    cycle.bytes_since_snapshot = std::max(kept->batch_bytes, staggered);
  } else {
    cycle.bytes_since_snapshot = c.retention_bytes > 0 ? due : staggered;
  }
  return cycle;
}

}  // namespace oncecount::service
