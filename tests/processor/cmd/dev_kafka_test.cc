// `oncecount dev-kafka` as a real process: bootstrap line, bootstrap file, a message
// through the cluster, and a clean exit on SIGTERM.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "tests/processor/cmd/child_process.h"
#include "tests/processor/kafka/kafka_test_client.h"

namespace {

using namespace std::chrono_literals;
using oncecount::testing::ChildProcess;

TEST(DevKafka, PrintsItsBootstrapServersServesClientsAndStopsOnSigterm) {
  const std::string file =
      ::testing::TempDir() + "dev-kafka-bootstrap-" + std::to_string(getpid()) + ".txt";
  std::remove(file.c_str());
  ChildProcess child({ONCECOUNT_BINARY, "dev-kafka", "--partitions", "2", "--topic", "clicks",
                      "--bootstrap-file", file});
  ASSERT_GT(child.pid(), 0);
  const std::string bootstrap = child.NextLine(20s);
  ASSERT_EQ(bootstrap.rfind("127.0.0.1:", 0), 0u) << "first line: " << bootstrap;
  std::ifstream written(file);
  std::string from_file;
  std::getline(written, from_file);
  EXPECT_EQ(from_file, bootstrap);

  ASSERT_EQ(oncecount::kafka::testing::ProduceOne(bootstrap, "clicks", 1, "c/1", "v"), "");
  const auto message = oncecount::kafka::testing::ConsumeFirst(bootstrap, "clicks", 1, 15s);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->value, "v");

  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(20s), 0);
}

TEST(DevKafka, ExitsWithAUsageErrorOnBadOptions) {
  ChildProcess child({ONCECOUNT_BINARY, "dev-kafka", "--brokers", "0"});
  ASSERT_GT(child.pid(), 0);
  EXPECT_EQ(child.Wait(20s), 2);
}

}  // namespace
