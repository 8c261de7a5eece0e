// The start of a renamed deployment (kafka.previous_group_id) waits until the old
// group has no members. An instance of the old group still running would keep the
// shards its group holds while this one claims them as well: the two groups fence
// nothing of each other's, both count the input from their own offsets, write dead
// letters twice and serve different counts (docs/operations.md, "Renaming the group").
//
// Called once by ServiceRuntime::Start, on its thread, before the processor starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

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

struct PreviousGroupState {
  PreviousGroup verdict = PreviousGroup::kNone;
  std::string why_unverified;  // kUnverified: what the brokers answered, for /readyz
};

// How long no broker may list the group, asked again and again, before the start goes
// on unverified: librdkafka 2.0.2 keeps one broker's error of a round and drops the
// list of a broker that answered with one, so a group missing once (its coordinator
// loading, a broker restarting) may be listed at the next.
inline constexpr std::chrono::milliseconds kNotListedFor{60000};

// Asks the brokers about the previous group until they describe it with no member.
// While it has members, logs a warning naming them at each of `wait`'s back-offs; a
// member whose process died without leaving goes when its session times out. A
// question that failed and may pass is asked again, as long as it takes. Unless members
// were seen, the wait ends unverified (a warning) when no broker listed the group in
// the answers of kNotListedFor in a row, or at a refusal that asking again does not
// change (the embedded cluster implements no DescribeGroups; a principal allowed
// Describe on the cluster, not on the group). kStopped (the error) on a stop request. The check is
// made at start only: an old instance started later is not seen.
base::Result<PreviousGroupState> AwaitPreviousGroupStopped(const config::KafkaConfig& k,
                                                           kafka::Clients& clients,
                                                           const base::StartWait& wait);

}  // namespace oncecount::cmd
