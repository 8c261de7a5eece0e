// The librdkafka configurations every client of the service is built from.
#include "processor/kafka/client_config.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <map>
#include <string>

namespace oncecount::kafka {
namespace {

std::string Get(rd_kafka_conf_t* conf, const char* name) {
  char value[256];
  size_t size = sizeof value;
  if (rd_kafka_conf_get(conf, name, value, &size) != RD_KAFKA_CONF_OK) return "<unknown>";
  return value;
}

// A producer asks the brokers to create a topic it writes to by default: a deleted
// dead-letter or members topic would be made again with the brokers' defaults, in
// silence. (The embedded cluster answers Metadata v2, which carries no such flag, and
// creates whatever a client names: only the configuration can show it.)
TEST(ClientConfig, PinsEveryClientNeverToAskTheClusterToCreateATopic) {
  auto made = MakeClientConfig({{"linger.ms", "5"}}, {{"security.protocol", "plaintext"}},
                               {{"enable.idempotence", "true"}});
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_EQ(Get(made.value(), "allow.auto.create.topics"), "false");
  EXPECT_EQ(Get(made.value(), "linger.ms"), "5");
  EXPECT_EQ(Get(made.value(), "enable.idempotence"), "true");
  rd_kafka_conf_destroy(made.value());
}

TEST(ClientConfig, RefusesAUserPropertyTheServiceSetsNamingIt) {
  for (const char* name : {"allow.auto.create.topics", "log.queue", "isolation.level"}) {
    auto made = MakeClientConfig({}, {{name, "true"}}, {});
    ASSERT_FALSE(made.ok()) << name;
    EXPECT_EQ(made.error().code(), base::Errc::kBadConfig);
    EXPECT_EQ(made.error().subject(), std::string("kafka.properties.") + name);
  }
}

}  // namespace
}  // namespace oncecount::kafka
