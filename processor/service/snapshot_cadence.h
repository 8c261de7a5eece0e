// SnapshotCadence: when a shard writes its next snapshot to the changelog.
//
// A restore needs the newest complete snapshot and every batch after it. A
// changelog partition kept by size (retention.bytes; the embedded cluster keeps
// 5 MB of one) drops its oldest records as new ones come, so the snapshot must be
// renewed before it goes. And the renewal itself may abort (its transaction fails):
// the previous snapshot must then still be there. So the partition must hold two
// snapshots and the batches between them:
//
//     2 x snapshot + batches between  <=  retention (less a margin for framing)
//
// A snapshot is due once the batches since the last one reach
// max(floor, last snapshot's size), the rule when the retention is unknown: then
// snapshots take at most half the partition's bytes. With the retention known, the
// batches between are capped by what the inequality leaves, down to a minimum
// below which writing snapshots more often would cost more than it is worth; a
// snapshot too large for even that is reported (Outgrows) and the shard goes on
// with the unknown-retention rule: its restores then depend on how long the
// partition keeps data, which the operator must fix (docs/operations.md).
// A snapshot is also due after `max_interval` whatever the bytes.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "processor/base/ids.h"

namespace oncecount::service {

struct SnapshotCadence {
  size_t floor_bytes = size_t{1} << 20;
  // The smallest number of batch bytes between two snapshots that a known
  // retention may impose.
  size_t min_between_bytes = size_t{64} << 10;
  std::chrono::milliseconds max_interval{60000};
  size_t retention_bytes = 0;  // of one changelog partition; 0: unknown or unbounded
};

// The batch bytes after the last snapshot (of `last_snapshot_bytes`) at which the
// next one is due.
size_t SnapshotDueAfterBytes(const SnapshotCadence& cadence, size_t last_snapshot_bytes);

// True when two snapshots of this size and min_between_bytes of batches do not fit
// in the known retention.
bool SnapshotOutgrowsRetention(const SnapshotCadence& cadence, size_t last_snapshot_bytes);

// Where in its snapshot cycle a shard starts when it is adopted, as a fraction in
// [0, 1) of the cycle (of max_interval and of the bytes due): shards adopted together
// (a whole instance's at start, all of a failover's) would otherwise reach their
// first snapshot together and, under an even load, every later one too: at a million
// counters, every shard's whole state in one transaction. Starting part of the way
// through only brings a shard's first snapshot forward. The fractions of partitions
// 0, 1, 2... are those of the multiples of the golden ratio, which spread partitions
// 0..n-1 evenly; the partitions of one instance are a subset (with cooperative-sticky
// often every k-th), spread less evenly but still apart.
double SnapshotPhase(base::Partition partition);

// What a shard's changelog partition holds of the snapshot cycle the shard is adopted
// in: the snapshot its restore began from and the batch bytes after it.
struct SnapshotCycleKept {
  size_t snapshot_bytes = 0;  // 0: no snapshot (a shard never snapshotted)
  size_t batch_bytes = 0;
};

// Where an adopted shard's cycle starts: its last snapshot's size, the batch bytes
// counted since and the time since. The new owner goes on with the cycle its changelog holds, so
// that two snapshots and the batches between still fit in the retention (a fresh
// count would let another whole cycle of batches in on top of what is kept). It starts
// at least SnapshotPhase of the way through. `kept` nullopt: the restore cannot say
// (retention took part of a local checkpoint's snapshot); under a known retention its
// first snapshot is then due at once. A standby's state carries the cycle it followed
// (changelog::SnapshotCycle).
struct AdoptedCycle {
  size_t last_snapshot_bytes = 0;
  size_t bytes_since_snapshot = 0;
  int64_t ms_since_snapshot = 0;  // SnapshotPhase of max_interval
};
AdoptedCycle AdoptedSnapshotCycle(const SnapshotCadence& cadence, base::Partition partition,
                                  const std::optional<SnapshotCycleKept>& kept);

}  // namespace oncecount::service
