// SnapshotCycle: how far a follower of a changelog partition is through the shard's
// snapshot cycle — the size of the newest complete snapshot it read past and the
// batch bytes after it — so that a state taken over from a standby or a checkpoint
// goes on with the cycle its changelog holds (service::SnapshotCycleKept) instead of
// snapshotting at its first commit: every shard of a failover in one transaction.
//
// Thread-safety: a plain value, owned by one follower.
#pragma once

#include <cstddef>

#include "processor/changelog/changelog_record.h"

namespace oncecount::changelog {

class SnapshotCycle {
 public:
  SnapshotCycle() = default;
  SnapshotCycle(size_t snapshot_bytes, size_t batch_bytes)
      : snapshot_bytes_(snapshot_bytes), batch_bytes_(batch_bytes) {}

  // A batch the follower applied.
  void OnBatch(const BatchRecord& batch) { batch_bytes_ += BatchRecordBytes(batch); }
  // A chunk of a snapshot of the followed epoch: once the last arrives, the cycle
  // starts again from it (its batch came just before it).
  void OnChunk(const SnapshotChunk& chunk) {
    if (chunk.index == 0) partial_bytes_ = 0;
    partial_bytes_ += chunk.bytes.size();
    if (chunk.index + 1 == chunk.count) {
      snapshot_bytes_ = partial_bytes_;
      batch_bytes_ = 0;
    }
  }

  size_t snapshot_bytes() const { return snapshot_bytes_; }
  size_t batch_bytes() const { return batch_bytes_; }

 private:
  size_t snapshot_bytes_ = 0;  // 0: none read past
  size_t batch_bytes_ = 0;
  size_t partial_bytes_ = 0;  // of the snapshot whose chunks are arriving
};

}  // namespace oncecount::changelog
