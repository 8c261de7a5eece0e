// The start of a renamed deployment (kafka.previous_group_id) waits until the old
// group has no members. An instance of the old group still running would keep the
// shards its group holds while this one claims them as well: the two groups fence
// nothing of each other's, both count the input from their own offsets, write dead
// letters twice and serve different counts (docs/operations.md, "Renaming the group").
//
// Called once by ServiceRuntime::Start, on its thread, before the processor starts.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "processor/base/result.h"
#include "processor/base/start_wait.h"
#include "processor/kafka/clients.h"

namespace oncecount::cmd {

enum class PreviousGroup : uint8_t {
  kNone,        // no kafka.previous_group_id
  kStopped,     // the brokers describe it with no member
  kUnverified,  // the brokers would not tell; the start trusts the operator (a warning)
};

// How many answers in a row that prove nothing (a question that failed and may pass,
// a group no broker lists) the start waits through before it goes on unverified.
inline constexpr int kInconclusiveAnswers = 5;

// Asks the brokers about the previous group until they describe it with no member.
// While it has members, logs a warning naming them at each of `wait`'s back-offs; a
// member whose process died without leaving goes when its session times out. A
// refusal that asking again does not change (the embedded cluster implements no
// DescribeGroups; a principal not allowed Describe on the group), or
// kInconclusiveAnswers answers in a row that prove nothing, end the wait unverified
// (a warning), unless members were seen: then only an answer without them does.
// kStopped (the error) on a stop request.
base::Result<PreviousGroup> AwaitPreviousGroupStopped(const config::KafkaConfig& k,
                                                      kafka::Clients& clients,
                                                      const base::StartWait& wait);

}  // namespace oncecount::cmd
