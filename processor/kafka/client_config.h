// Building librdkafka configurations: the service's own settings first, then the
// user's `kafka.properties` (security.protocol, sasl.*, ssl.* ...), which may
// override anything except the settings exactly-once depends on (refused by name).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "processor/base/result.h"

struct rd_kafka_conf_s;

namespace oncecount::kafka {

using Settings = std::vector<std::pair<std::string, std::string>>;

// A new rd_kafka_conf_t (the caller owns it), or a kBadConfig error (subject
// "kafka.properties") naming the property. `pinned` are applied last; `user` may not
// name any service-owned property (service_owned_properties.h), and `pinned` only
// those (kInternal otherwise). Every client is also pinned never to ask the brokers
// to create a topic (allow.auto.create.topics=false): a producer asks by default, and
// would make a deleted dead-letter or members topic again with the brokers' defaults
// (one partition, a week's retention) without a word.
base::Result<rd_kafka_conf_s*> MakeClientConfig(const Settings& defaults,
                                                const std::map<std::string, std::string>& user,
                                                const Settings& pinned);

}  // namespace oncecount::kafka
