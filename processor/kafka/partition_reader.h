// ReadPartitions: every committed record of some partitions of a topic, from the
// oldest retained (or a given offset) to the end, in log order — how a shard reads
// its changelog when it restores, or the tail after a hot replica's position when
// it takes over.
//
// It uses its own short-lived consumer (no group; read_committed) and stops at each
// partition's end as the broker reports it when the read starts.
//
// Thread-safety: a blocking call; call it from the thread that needs the records.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "processor/kafka/client_config.h"

namespace oncecount::kafka {

using PartitionRecords = std::map<int32_t, std::vector<std::string>>;

// `start`: where to begin reading each partition (absent: its oldest record).
std::variant<PartitionRecords, std::string> ReadPartitions(
    const Settings& connection, const std::map<std::string, std::string>& user_properties,
    const std::string& topic, const std::vector<int32_t>& partitions,
    std::chrono::milliseconds timeout, const std::map<int32_t, int64_t>& start = {});

}  // namespace oncecount::kafka
