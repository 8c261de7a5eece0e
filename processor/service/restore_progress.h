// RestoreProgress: how far each shard being restored has read its changelog, for
// /metrics while the processor's thread is blocked in the read (a cold restore of a
// large shard reads for minutes; without this an operator sees nothing move).
//
// A shard's entry exists from the first report of its read to End; its fraction is
// the share of the offsets between where the read began and the high watermark it
// must reach (partition_reader.h) that it has read.
//
// Thread-safety: Report and End on the restoring thread; Read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "processor/base/ids.h"

namespace oncecount::service {

class RestoreProgress {
 public:
  struct Shard {
    base::Partition partition;
    int64_t remaining_offsets = 0;  // to the high watermark the read must reach
    double fraction = 0;            // of the read done, 0..1
  };

  // The read of `partition` has reached offset `reached` of `target`.
  void Report(base::Partition partition, base::Offset reached, base::Offset target);
  // The read of `partition` ended (done or failed).
  void End(base::Partition partition);
  // The shards whose read is under way, by partition.
  std::vector<Shard> Read() const;

 private:
  struct Reading {
    base::Offset began;  // the first offset reported
    base::Offset reached;
    base::Offset target;
  };
  mutable std::mutex mu_;
  std::map<base::Partition, Reading> reads_;
};

}  // namespace oncecount::service
