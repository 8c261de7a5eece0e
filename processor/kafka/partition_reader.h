// ReadPartitions: every committed record of some partitions of a topic, from the
// oldest retained (or a given offset) up to the high watermark each partition had
// when the read began — how a shard reads its changelog when it restores, or the
// tail after a hot replica's position when it takes over.
//
// Why the high watermark and not the reader's end: a read_committed reader's end is
// the last stable offset, which an open transaction pins (an owner killed inside a
// transaction keeps it open for up to transaction.timeout.ms). Records committed
// after that point (a later owner's claim) would be missed, and a restore could
// claim an epoch someone else holds. Reaching the high watermark observed at the
// start means every transaction that began before the read has been decided:
// committed (its records are here) or aborted (they never will be). The read waits
// for that: once no partition has moved for `wait_limit` it fails (Errc::kUnavailable)
// saying which offset holds it back. A long read that keeps moving does not fail.
//
// Thread-safety: a blocking call; call it from the thread that needs the records.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/result.h"
#include "processor/kafka/clients.h"

namespace oncecount::kafka {

struct PartitionRecords {
  std::vector<std::string> records;  // in log order
  base::Offset next_offset;          // the offset after the last record read
};

using ReadResult = std::map<base::Partition, PartitionRecords>;

// Hands each record's value to `sink` as it is read (a record's bytes are valid
// only during the call), in log order per partition, and returns each partition's
// next offset: a read that holds nothing but what the sink keeps.
using RecordSink = std::function<void(base::Partition partition, std::string_view value)>;
// Told, when a partition's read begins (from a given offset; from the oldest record,
// when it reads the first) and each time it moves, the offset it has reached and
// the high watermark it must reach.
using ProgressSink =
    std::function<void(base::Partition partition, base::Offset reached, base::Offset target)>;
base::Result<std::map<base::Partition, base::Offset>> StreamPartitions(
    Clients& clients, base::Clock& clock, const std::string& topic,
    const std::vector<base::Partition>& partitions, std::chrono::milliseconds wait_limit,
    const RecordSink& sink, const std::map<base::Partition, base::Offset>& start = {},
    const ProgressSink& progress = {});

// The same read, every record's value kept.
// `start`: where to begin reading each partition (absent: its oldest record).
base::Result<ReadResult> ReadPartitions(Clients& clients, base::Clock& clock,
                                        const std::string& topic,
                                        const std::vector<base::Partition>& partitions,
                                        std::chrono::milliseconds wait_limit,
                                        const std::map<base::Partition, base::Offset>& start = {});

}  // namespace oncecount::kafka
