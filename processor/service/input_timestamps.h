// InputTimestamps: whether the input topic's own settings keep producer clocks from
// moving the shards' clocks (the guard that holds in a backlog; SPEC §2.1).
//
// A shard's clock is the largest record timestamp it applied. The processor does not
// let a record stamped more than dedup.timestamp_tolerance_ms ahead of the instance's
// wall clock move it, but that check bites only while records are processed as they
// come: in a backlog (an outage, a restore, a replay) every record is behind the wall
// clock, and a producer whose clock ran ten minutes ahead moves the shard's clock ten
// minutes on, so that the filter forgets early and the records after it are late. No
// rule inside the processor can tell such a record from the first record after a quiet
// spell without refusing the latter too. The broker can: it checks each timestamp
// against its own clock at append (message.timestamp.after.max.ms, or before Kafka 3.6
// message.timestamp.difference.max.ms) and refuses those too far ahead, or stamps
// records itself (message.timestamp.type=LogAppendTime). The processor reads these
// settings at start and says which holds.
//
// Thread-safety: pure function.
#pragma once

#include <chrono>
#include <string>

#include "processor/kafka/clients.h"

namespace oncecount::service {

struct InputTimestampVerdict {
  enum class Guard : int8_t { kUnknown = -1, kUnguarded = 0, kGuarded = 1 };
  Guard guard = Guard::kUnknown;
  std::string sentence;  // what holds and, unless guarded, what to set
};

// The verdict on the input topic `topic`'s settings as DescribeTopic told them.
InputTimestampVerdict JudgeInputTimestamps(const std::string& topic,
                                           const kafka::TopicSettings& told,
                                           std::chrono::milliseconds tolerance);

}  // namespace oncecount::service
