// The librdkafka properties the service sets itself, on one client or another, which
// `kafka.properties` may not set: exactly-once depends on them, or a config key of the
// service's own sets them. Config refuses them by name (check-config says so before
// a start), and MakeClientConfig refuses a client whose pinned settings are not all
// listed here, so the list cannot fall behind the clients.
//
// Thread-safety: constants.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace oncecount::kafka {

inline constexpr std::array<std::string_view, 18> kServiceOwnedProperties = {
    // kafka.bootstrap_servers: given here as well, it would win over the key (and its
    // ONCECOUNT_ variable), while "embedded" still started an in-process cluster.
    "bootstrap.servers",
    "metadata.broker.list",  // librdkafka's other name for it
    "group.id",
    "group.instance.id",  // kafka.static_membership and --instance-id
    "transactional.id",
    "transaction.timeout.ms",  // kafka.transaction_timeout_ms
    "isolation.level",
    "enable.idempotence",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "partition.assignment.strategy",
    "enable.partition.eof",
    "message.max.bytes",
    "batch.size",
    "max.in.flight.requests.per.connection",  // 1 where order across retries matters
    // A position retention removed must be reported, not reset: "earliest" would
    // skip the count of what was lost, "latest" the whole retained backlog.
    "auto.offset.reset",
    // Every client: the service never creates topics (MakeClientConfig).
    "allow.auto.create.topics",
    // librdkafka's lines go to the service's log from its own threads (ClientLog); on
    // a log queue nothing would serve them.
    "log.queue",
};

inline bool IsServiceOwnedProperty(std::string_view name) {
  return std::find(kServiceOwnedProperties.begin(), kServiceOwnedProperties.end(), name) !=
         kServiceOwnedProperties.end();
}

}  // namespace oncecount::kafka
