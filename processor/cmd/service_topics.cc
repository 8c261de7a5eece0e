#include "processor/cmd/service_topics.h"

namespace oncecount::cmd {

std::vector<kafka::TopicSpec> ServiceTopics(const config::KafkaConfig& kafka, int partitions) {
  return {{kafka.input_topic, partitions},
          {kafka.EffectiveDlqTopic(), partitions},
          {kafka.ChangelogTopic(), partitions},
          {kafka.MembersTopic(), 1}};
}

}  // namespace oncecount::cmd
