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
  // A chunk of a snapshot of the claim followed (LineageFollower::IsCurrentClaim):
  // once every chunk of one snapshot arrived in order, the cycle starts again from it
  // (its batch came before it). A snapshot with a chunk missing or out of order
  // is one a restore would not use, and changes nothing.
  void OnChunk(const SnapshotChunk& chunk) {
    if (chunk.index == 0) {
      partial_ = Partial{chunk.epoch, chunk.seq, chunk.count, 0, 0};
    } else if (partial_.count == 0 || chunk.epoch != partial_.epoch || chunk.seq != partial_.seq ||
               chunk.count != partial_.count || chunk.index != partial_.next) {
      partial_.count = 0;  // not usable
      return;
    }
    partial_.bytes += chunk.bytes.size();
    if (++partial_.next == partial_.count) {
      snapshot_bytes_ = partial_.bytes;
      batch_bytes_ = 0;
      partial_.count = 0;
    }
  }

  size_t snapshot_bytes() const { return snapshot_bytes_; }
  size_t batch_bytes() const { return batch_bytes_; }

 private:
  size_t snapshot_bytes_ = 0;  // 0: none read past
  size_t batch_bytes_ = 0;
  // The snapshot whose chunks are arriving (count 0: none, or not usable).
  struct Partial {
    Epoch epoch;
    Seq seq;
    uint32_t count = 0;
    uint32_t next = 0;
    size_t bytes = 0;
  };
  Partial partial_;
};

}  // namespace oncecount::changelog
