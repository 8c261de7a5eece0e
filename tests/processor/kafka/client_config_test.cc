// The librdkafka configurations every client of the service is built from.
#include "processor/kafka/client_config.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <map>
#include <string>

namespace oncecount::kafka {
namespace {

std::string Get(const rd_kafka_conf_t* conf, const char* name) {
  char value[256];
  size_t size = sizeof value;
  if (rd_kafka_conf_get(conf, name, value, &size) != RD_KAFKA_CONF_OK) return "<unknown>";
  return value;
}

// What a client made with `conf` (which it takes) is set to: librdkafka settles a
// producer's and a consumer's defaults only when the client is made.
std::string SettledIn(rd_kafka_type_t type, rd_kafka_conf_t* conf, const char* name) {
  char error[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return std::string("<not made: ") + error + ">";
  }
  std::string value = Get(rd_kafka_conf(rk), name);
  rd_kafka_destroy(rk);
  return value;
}

// A producer asks the brokers to create a topic it writes to by default: a deleted
// dead-letter or members topic would be made again with the brokers' defaults, in
// silence. (The embedded cluster answers Metadata v2, which carries no such flag, and
// creates whatever a client names: only the configuration can show it.)
TEST(ClientConfig, PinsEveryClientNeverToAskTheClusterToCreateATopic) {
  for (rd_kafka_type_t type : {RD_KAFKA_PRODUCER, RD_KAFKA_CONSUMER}) {
    auto made = MakeClientConfig({{"linger.ms", "5"}}, {{"security.protocol", "plaintext"}},
                                 {{"enable.idempotence", "true"}});
    ASSERT_TRUE(made.ok()) << made.error();
    EXPECT_EQ(SettledIn(type, made.value(), "allow.auto.create.topics"), "false")
        << (type == RD_KAFKA_PRODUCER ? "producer" : "consumer");
  }
  // What the pin overrides: librdkafka's producer asks.
  EXPECT_EQ(SettledIn(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), "allow.auto.create.topics"), "true");
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
