// The start of a renamed deployment (kafka.previous_group_id) waits until the old
// group has no members. An instance of the old group still running would keep the
// shards its group holds while this one claims them as well: the two groups fence
// nothing of each other's, both count the input from their own offsets, write dead
// letters twice and serve different counts (docs/operations.md, "Renaming the group").
//
// Called once by ServiceRuntime::Start, on its thread, before the processor starts.
#pragma once

#include "config/config.h"
#include "processor/base/result.h"
#include "processor/base/start_wait.h"
#include "processor/kafka/clients.h"

namespace oncecount::cmd {

// Ok at once without a previous group; ok once it has no members (a member whose
// process died without leaving goes when its session times out). While it has some,
// logs a warning naming them at each of `wait`'s back-offs; kStopped on a stop
// request. A cluster that cannot describe the group is a warning, and the start goes
// on trusting the operator.
base::Status AwaitPreviousGroupStopped(const config::KafkaConfig& k, kafka::Clients& clients,
                                       const base::StartWait& wait);

}  // namespace oncecount::cmd
