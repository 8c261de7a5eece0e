// CheckBrokersAbortInterval against the strict double's broker, which tells the
// transaction abort interval it runs with (StrictKafka::set_transaction_abort_interval).
#include "processor/cmd/broker_fencing_check.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/testing/strict_kafka.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;

struct Checked {
  base::Status status;
  std::string log;
};

// The process tests' timings: 2000 + abort interval + 500 must stay below 6000.
Checked Check(testing::StrictKafka& kafka, int64_t stated_abort_interval_ms) {
  config::KafkaConfig k;
  k.transaction_timeout_ms = 2000;
  k.transaction_abort_interval_ms = stated_abort_interval_ms;
  k.properties = {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}};
  EXPECT_TRUE(config::CheckZombieFencing(k).ok()) << "the stated interval passes the rule";
  std::unique_ptr<kafka::Clients> clients = kafka.ClientsFor("a");
  Checked out;
  out.status = CheckBrokersAbortInterval(
      k, *clients, base::Logger([&](const std::string& line) { out.log += line + "\n"; }));
  return out;
}

// Regression: the interval was taken from the configuration on trust; one lowered to
// get past the start-up rule let a frozen instance's transaction outlive its session.
TEST(BrokerFencingCheck, RefusesAStatedIntervalUnderWhichTheBrokersOwnBreaksTheRule) {
  testing::StrictKafka kafka;
  kafka.set_transaction_abort_interval(10s);  // Kafka's default
  const Checked checked = Check(kafka, 1000);
  ASSERT_FALSE(checked.status.ok()) << checked.log;
  EXPECT_EQ(checked.status.error().code(), base::Errc::kBadConfig);
  EXPECT_EQ(checked.status.error().subject(), "kafka.transaction_abort_interval_ms");
  EXPECT_NE(checked.status.error().message().find(
                "kafka.transaction_abort_interval_ms (1000 ms) is below what the brokers do: "
                "broker 1's transaction.abort.timed.out.transaction.cleanup.interval.ms is "
                "10000 ms. With theirs, kafka.transaction_timeout_ms (2000) + "
                "kafka.transaction_abort_interval_ms (10000"),
            std::string::npos)
      << checked.status.error().message();
}

TEST(BrokerFencingCheck, AcceptsAStatedIntervalTheBrokersKeepToOrBeat) {
  testing::StrictKafka kafka;
  for (const auto brokers : {1000ms, 500ms}) {
    kafka.set_transaction_abort_interval(brokers);
    const Checked checked = Check(kafka, 1000);
    EXPECT_TRUE(checked.status.ok()) << checked.status.error();
    EXPECT_EQ(checked.log, "") << "brokers at " << brokers.count() << " ms";
  }
}

TEST(BrokerFencingCheck, WarnsOfALongerBrokerIntervalUnderWhichTheRuleStillHolds) {
  testing::StrictKafka kafka;
  kafka.set_transaction_abort_interval(2000ms);
  const Checked checked = Check(kafka, 1000);
  EXPECT_TRUE(checked.status.ok()) << checked.status.error();
  EXPECT_NE(checked.log.find("is below what the brokers do (broker 1's "
                             "transaction.abort.timed.out.transaction.cleanup.interval.ms is "
                             "2000 ms); the fencing rule holds with theirs too. Set it to 2000"),
            std::string::npos)
      << checked.log;
}

TEST(BrokerFencingCheck, WarnsThatItTrustsTheStatedIntervalWhenTheBrokersDoNotTell) {
  testing::StrictKafka kafka;
  kafka.set_transaction_abort_interval(10s);
  kafka.set_broker_settings_described(false);
  const Checked checked = Check(kafka, 1000);
  EXPECT_TRUE(checked.status.ok()) << checked.status.error();
  EXPECT_NE(checked.log.find("cannot read the brokers' "
                             "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            std::string::npos)
      << checked.log;
  EXPECT_NE(checked.log.find("trusts kafka.transaction_abort_interval_ms (1000 ms)"),
            std::string::npos)
      << checked.log;
}

}  // namespace
}  // namespace oncecount::cmd
