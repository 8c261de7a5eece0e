// `oncecount serve` and bad input, one dead-letter reason per test (SPEC §1): the
// message goes to events.dlq with its original key, value and headers plus
// oncecount.error and oncecount.source, the shard's stats count it under its
// reason, and the service goes on counting the events after it. Real processes
// (dev-kafka, serve) over loopback.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/processor/cmd/dlq_reader.h"
#include "tests/processor/cmd/record_producer.h"
#include "tests/processor/cmd/service_fixture.h"

namespace oncecount::cmd {
namespace {

struct Message {
  std::optional<std::string> key;
  std::string value;
};

struct BadInput {
  const char* reason;
  // Sent in order to partition 0; the last one is the bad one (overflow needs a
  // valid event before it to bring the counter to the edge).
  std::vector<Message> messages;
};

void PrintTo(const BadInput& b, std::ostream* os) {
  *os << b.reason;
}

// Produces `messages` to events/0 in order, each with the header trace=t<i>.
void Produce(const std::string& bootstrap, const std::vector<Message>& messages) {
  std::vector<ProducedRecord> records;
  for (size_t i = 0; i < messages.size(); ++i) {
    records.push_back(
        {0, messages[i].key, messages[i].value, {{"trace", "t" + std::to_string(i)}}});
  }
  ProduceInOrder(bootstrap, records);
}

class DeadLetterTest : public ServiceFixture, public ::testing::WithParamInterface<BadInput> {};

TEST_P(DeadLetterTest, SendsTheMessageToTheDlqAsItCameCountsItsReasonAndKeepsCounting) {
  const BadInput& bad = GetParam();
  auto [serve, url] = Serve("a");
  std::vector<Message> messages = bad.messages;
  messages.push_back({"dl/after", R"({"counter":"after","delta":1})"});
  Produce(bootstrap_, messages);

  // The valid event after the bad one is counted: the service did not stop.
  std::string after;
  for (int attempt = 0; attempt < 300; ++attempt) {
    after = Get(url, "/v1/counters/after");
    if (after.find("\"value\":1,") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_NE(after.find("\"value\":1,"), std::string::npos) << after;

  const size_t bad_index = bad.messages.size() - 1;
  const Message& sent = bad.messages[bad_index];
  const std::vector<DlqRecord> dlq = ReadDlq(bootstrap_);
  ASSERT_EQ(dlq.size(), 1u);
  const DlqRecord& r = dlq[0];
  EXPECT_EQ(r.headers.at("oncecount.error"), bad.reason);
  EXPECT_EQ(r.headers.at("oncecount.source"), "events/0/" + std::to_string(bad_index));
  EXPECT_EQ(r.headers.at("trace"), "t" + std::to_string(bad_index)) << "original headers kept";
  EXPECT_EQ(r.key, sent.key.value_or(""));
  EXPECT_EQ(r.value, sent.value);

  const std::string shard = Get(url, "/v1/shards/0");
  EXPECT_NE(shard.find("\"dead_lettered\":1,"), std::string::npos) << shard;
  EXPECT_NE(shard.find(std::string("\"") + bad.reason + "\":1"), std::string::npos) << shard;
  EXPECT_NE(shard.find("\"events_applied\":" + std::to_string(bad.messages.size()) + ","),
            std::string::npos)
      << "every valid event applied (the bad one is not): " << shard;
  if (std::string(bad.reason) == "overflow") {
    EXPECT_NE(Get(url, "/v1/counters/big").find("\"value\":" + std::to_string(INT64_MAX) + ","),
              std::string::npos)
        << "the counter is left as it was";
  }
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0);
}

const std::string kMaxDelta = std::to_string(INT64_MAX);

INSTANTIATE_TEST_SUITE_P(
    EveryReason, DeadLetterTest,
    ::testing::Values(BadInput{"missing_key", {{std::nullopt, R"({"counter":"c","delta":1})"}}},
                      BadInput{"key_too_long",
                               {{std::string(257, 'k'), R"({"counter":"c","delta":1})"}}},
                      BadInput{"invalid_json", {{"dl/1", R"({"counter":"c","delta":)"}}},
                      BadInput{"missing_counter", {{"dl/1", R"({"delta":2})"}}},
                      BadInput{"invalid_counter", {{"dl/1", R"({"counter":7})"}}},
                      BadInput{"invalid_delta", {{"dl/1", R"({"counter":"c","delta":1.5})"}}},
                      BadInput{"overflow",
                               {{"dl/0", R"({"counter":"big","delta":)" + kMaxDelta + "}"},
                                {"dl/1", R"({"counter":"big","delta":1})"}}}),
    [](const ::testing::TestParamInfo<BadInput>& param) {
      return std::string(param.param.reason);
    });

}  // namespace
}  // namespace oncecount::cmd
