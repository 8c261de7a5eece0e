// The librdkafka implementation of the Kafka layer (clients.h): the only one the
// product uses. It owns every client setting oncecount depends on, so that the
// processor and the replicator configure their clients in one place:
//
//  - connection: bootstrap servers, then the user's kafka.properties (TLS, SASL...),
//    then the settings exactly-once needs, which the user cannot override;
//  - consumers read read_committed with no automatic commits; the group consumer
//    rebalances cooperatively (cooperative-sticky) and reports a position removed
//    by retention instead of jumping (auto.offset.reset=error);
//  - the transactional producer is idempotent, with the transaction timeout the
//    service chose (kafka.transaction_timeout_ms);
//  - librdkafka's errors are sorted into ErrorKind (ClassifyTxnError);
//  - librdkafka's own log lines go to the service's log when given one (ClientLog).
//
// Thread-safety: as clients.h says.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "processor/base/logger.h"
#include "processor/base/metrics.h"
#include "processor/kafka/client_config.h"
#include "processor/kafka/clients.h"

struct rd_kafka_error_s;

namespace oncecount::kafka {

// The ErrorKind of an error a transactional call returned.
KafkaError ClassifyTxnError(const rd_kafka_error_s* error);

// Where librdkafka's own log lines go: what its threads see outside any call (a
// broker that cannot be reached, authentication refused, a consumer past
// max.poll.interval.ms, errors with no call to return them), which librdkafka
// otherwise writes to stderr in its own format, beside the service's log and
// outside its JSON lines. Called from librdkafka's threads.
struct ClientLog {
  base::Logger log;  // at the line's level; none: librdkafka's own (stderr)
  // Counts the lines at warning level or worse; may be null. Outlives every client.
  base::Counter* warnings = nullptr;
};

// Clients that connect to `bootstrap_servers` with the user's `properties`.
std::unique_ptr<Clients> MakeRdKafkaClients(std::string bootstrap_servers,
                                            std::map<std::string, std::string> properties,
                                            ClientLog client_log = {});

}  // namespace oncecount::kafka
