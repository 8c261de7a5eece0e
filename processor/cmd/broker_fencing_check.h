// The start-up rule of zombie fencing (config::CheckZombieFencing) judged again with
// the brokers' own transaction abort interval. kafka.transaction_abort_interval_ms is
// what the operator says of the brokers (their
// transaction.abort.timed.out.transaction.cleanup.interval.ms); a value below theirs
// lets the rule pass where a frozen instance's transaction outlives its session, and
// what it applied would be counted twice after another instance took its shards.
//
// Called once by ServiceRuntime::Start, on its thread, before the processor starts.
#pragma once

#include "config/config.h"
#include "processor/base/logger.h"
#include "processor/base/result.h"
#include "processor/kafka/clients.h"

namespace oncecount::cmd {

inline constexpr const char* kBrokersAbortInterval =
    "transaction.abort.timed.out.transaction.cleanup.interval.ms";

// kBadConfig (subject kafka.transaction_abort_interval_ms) when a broker's interval
// breaks the rule; ok otherwise. A cluster that does not tell its interval, or a
// broker's longer interval under which the rule still holds, is a warning in `log`.
base::Status CheckBrokersAbortInterval(const config::KafkaConfig& k, kafka::Clients& clients,
                                       const base::Logger& log);

}  // namespace oncecount::cmd
