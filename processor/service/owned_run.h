// OwnedRun: whether a shard's changelog partition holds, from where its owner's
// restore read to, nothing but the owner's own records: its claim, then the batches
// and snapshots it committed. While it does, no rival can have claimed the shard in
// between, so a later restore from the owner's local checkpoint may start at the
// checkpoint's snapshot (LocalCheckpoint::snapshot_end, LineageFollower::Resuming)
// instead of reading back to the claim to look for one.
//
// The owner knows where each of its committed records went (the delivery reports,
// TransactionalProducer::OffsetsOfLastCommit). Its records are alone when each
// transaction's records in the partition are contiguous and each transaction starts
// where the one before ended, plus that one's marker: one offset on a cluster that
// writes transaction markers, none on the embedded cluster, which writes none. An
// offset holds one record or one marker, so a foreign record (a rival's claim, its
// marker, an aborted attempt of ours) always shows as an offset the rule does not
// expect. Where a gap of one could be either a marker or a one-record claim (a
// cluster not yet seen to write markers: Clients::WritesTransactionMarkers), the run
// breaks. A broken run stays broken: the owner's checkpoints keep the check from the
// claim, and the next restore starts a new run.
//
// Thread-safety: a plain value, owned by the shard's worker.
#pragma once

#include <map>
#include <optional>

#include "processor/base/ids.h"
#include "processor/kafka/clients.h"

namespace oncecount::service {

// Where a committed transaction's changelog records went, by partition, and whether
// the cluster is known to write transaction markers (Clients::WritesTransactionMarkers).
struct ChangelogWritten {
  std::map<base::Partition, kafka::DeliveredRecords> records;
  bool markers = false;
};

class OwnedRun {
 public:
  // For a shard whose restore read its changelog partition up to `read_to`, every
  // claim before it older than the owner's own.
  explicit OwnedRun(base::Offset read_to) : next_(read_to) {}

  // A committed transaction of the owner wrote `records` to the partition (its claim
  // first); `markers`: the cluster is known to write transaction markers.
  void Committed(const kafka::DeliveredRecords& records, bool markers) {
    if (!intact_) return;
    const bool contiguous = records.count > 0 && records.last >= records.first &&
                            records.last.value() - records.first.value() + 1 == records.count;
    const int64_t gap = records.first.value() - next_.value();
    const bool only_a_marker = gap == 1 && marker_due_ && markers;
    if (!contiguous || (gap != 0 && !only_a_marker)) {
      intact_ = false;
      return;
    }
    last_ = records.last;
    next_ = records.last.Next();
    marker_due_ = true;
  }

  // Whether the partition holds only the owner's records from `read_to` up to the
  // last record of its last committed transaction.
  bool intact() const { return intact_; }
  // That last record, while intact (nullopt before the first commit).
  std::optional<base::Offset> last() const {
    return intact_ ? last_ : std::optional<base::Offset>();
  }

 private:
  base::Offset next_;        // where the owner's next record goes if nothing else is written
  bool marker_due_ = false;  // a transaction ended at next_: its marker may be there
  bool intact_ = true;
  std::optional<base::Offset> last_;
};

}  // namespace oncecount::service
