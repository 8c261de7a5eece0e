// The topics one oncecount service needs, as the embedded cluster creates them for
// `dev-kafka`, `demo` and `serve` with `kafka.bootstrap_servers: embedded`: the
// input, the dead-letter topic and the changelog with `partitions` partitions
// each, and the members topic with one.
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "config/config.h"
#include "processor/kafka/embedded_cluster.h"

namespace oncecount::cmd {

std::vector<kafka::TopicSpec> ServiceTopics(const config::KafkaConfig& kafka, int partitions);

}  // namespace oncecount::cmd
