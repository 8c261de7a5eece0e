// The librdkafka implementation of the Kafka layer, on the embedded cluster over
// loopback: the answers the service builds on that the strict double only imitates.
#include "processor/kafka/rdkafka_clients.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "processor/base/clock.h"
#include "processor/kafka/embedded_cluster.h"
#include "processor/kafka/partition_reader.h"

namespace oncecount::kafka {
namespace {

using namespace std::chrono_literals;

class RdKafkaClientsTest : public ::testing::Test {
 protected:
  RdKafkaClientsTest() {
    auto started = EmbeddedCluster::Start(1, {{"log", 2}});
    if (auto* error = (started.ok() ? nullptr : &started.message())) {
      ADD_FAILURE() << *error;
      return;
    }
    cluster_ = std::move(started).value();
    clients_ = MakeRdKafkaClients(cluster_->bootstrap_servers(), {});
  }

  std::unique_ptr<TransactionalProducer> Producer() {
    auto made = clients_->NewTransactionalProducer({"rdkafka-clients-test", 10s});
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.message());
    if (!made.ok()) return nullptr;
    EXPECT_FALSE(made.value()->InitTransactions(30s));
    return std::move(made).value();
  }

  static void Produce(TransactionalProducer& p, base::Partition partition, std::string_view value) {
    EXPECT_FALSE(p.Produce({"log", partition, std::nullopt, value, {}}));
  }

  std::unique_ptr<EmbeddedCluster> cluster_;
  std::unique_ptr<Clients> clients_;
};

// A sink that keeps what it is given, from librdkafka's threads.
class KeptLines : public base::LogSink {
 public:
  void Write(base::LogLevel level, std::string_view context, std::string_view message) override {
    std::lock_guard lock(mu_);
    lines_.push_back(std::string(base::LogLevelName(level)) + " [" + std::string(context) + "] " +
                     std::string(message));
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// What librdkafka's threads see outside any call (here: a broker that refuses the
// connection) goes to the service's log at its level, not to stderr, and lines at
// warning level or worse are counted.
TEST(RdKafkaClientLog, SendsLibrdkafkasOwnLinesToTheLogItIsGivenAndCountsItsWarnings) {
  auto sink = std::make_shared<KeptLines>();
  base::Counter warnings;
  // Port 1 on loopback: nothing listens, every connection is refused at once.
  auto clients = MakeRdKafkaClients("127.0.0.1:1", {}, {base::Logger(sink, "a kafka"), &warnings});
  auto producer = clients->NewPlainProducer({});
  ASSERT_TRUE(producer.ok()) << producer.message();
  ASSERT_FALSE(producer.value()->Produce({"log", base::Partition(0), std::nullopt, "x", {}}));
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  auto refused = [&] {
    for (const std::string& line : sink->lines()) {
      if (line.find("127.0.0.1:1") != std::string::npos &&
          line.find("refused") != std::string::npos) {
        return line;
      }
    }
    return std::string();
  };
  while (refused().empty() && std::chrono::steady_clock::now() < deadline) {
    producer.value()->Poll(100ms);
  }
  const std::string line = refused();
  ASSERT_FALSE(line.empty()) << "no line about the refused connection in 30 s";
  EXPECT_EQ(line.rfind("error [a kafka] producer FAIL: ", 0), 0u) << line;
  producer.value().reset();  // librdkafka says what it drops while it is destroyed
  size_t worse_than_info = 0;
  bool dropped = false;
  for (const std::string& kept : sink->lines()) {
    worse_than_info += kept.starts_with("warn ") || kept.starts_with("error ") ? 1 : 0;
    dropped = dropped || kept.find("still in queue") != std::string::npos;
  }
  EXPECT_EQ(warnings.value(), worse_than_info);
  EXPECT_TRUE(dropped) << "the line of the destroyed producer's undelivered record";
}

TEST_F(RdKafkaClientsTest, TellsWhereTheRecordsOfTheLastCommittedTransactionWent) {
  std::unique_ptr<TransactionalProducer> p = Producer();
  ASSERT_NE(p, nullptr);
  ASSERT_FALSE(p->BeginTransaction());
  for (int i = 0; i < 3; ++i) Produce(*p, base::Partition(0), "before");
  ASSERT_FALSE(p->CommitTransaction(30s));
  EXPECT_EQ(p->OffsetsOfLastCommit("log"),
            (std::map<base::Partition, DeliveredRecords>{
                {base::Partition(0), {base::Offset(0), base::Offset(2), 3}}}));

  // The next records go to the ends (a real broker's commit marker took an offset
  // after the three records; the embedded cluster writes none).
  auto end0 = clients_->HighWatermark("log", base::Partition(0), 10s);
  ASSERT_TRUE(end0.ok()) << end0.error();
  EXPECT_GE(end0.value(), base::Offset(3));
  ASSERT_FALSE(p->BeginTransaction());
  EXPECT_TRUE(p->OffsetsOfLastCommit("log").empty()) << "a new transaction clears them";
  Produce(*p, base::Partition(0), "a");
  Produce(*p, base::Partition(0), "b");
  Produce(*p, base::Partition(1), "c");
  ASSERT_FALSE(p->CommitTransaction(30s));
  EXPECT_EQ(p->OffsetsOfLastCommit("log"),
            (std::map<base::Partition, DeliveredRecords>{
                {base::Partition(0), {end0.value(), end0.value().Next(), 2}},
                {base::Partition(1), {base::Offset(0), base::Offset(0), 1}}}));
  EXPECT_TRUE(p->OffsetsOfLastCommit("other").empty());

  ASSERT_FALSE(p->BeginTransaction());
  Produce(*p, base::Partition(1), "aborted");
  ASSERT_FALSE(p->AbortTransaction(30s));
  EXPECT_TRUE(p->OffsetsOfLastCommit("log").empty()) << "an abort commits nothing";
}

// A broker's refusal of a record as too large makes the transaction abortable, and
// librdkafka refuses every later produce with _STATE: the error a produce returns then
// names the refusal, so that the processor learns the record limit (IsRecordTooLarge)
// whichever call, produce or commit, sees the failure first.
TEST_F(RdKafkaClientsTest, AProduceRefusedAfterARecordWasTooLargeSaysSo) {
  std::unique_ptr<TransactionalProducer> p = Producer();
  ASSERT_NE(p, nullptr);
  constexpr int16_t kProduceApiKey = 0;
  rd_kafka_mock_push_request_errors(cluster_->mock(), kProduceApiKey, 1,
                                    RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  ASSERT_FALSE(p->BeginTransaction());
  ASSERT_FALSE(p->Produce({"log", base::Partition(0), std::nullopt, "too large", {}}));
  KafkaError refused;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!refused && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // the broker's answer arrives on librdkafka's thread
    refused = p->Produce({"log", base::Partition(0), std::nullopt, "next", {}});
  }
  ASSERT_TRUE(refused) << "no produce refused in 30 s";
  EXPECT_EQ(refused.kind, ErrorKind::kAbortable) << refused.ToString();
  EXPECT_TRUE(IsRecordTooLarge(refused)) << refused.ToString();
  EXPECT_FALSE(p->AbortTransaction(30s));
}

// The embedded cluster writes no transaction markers: a read across transactions
// finds every offset holding a record, and the clients cannot tell a marker from
// another writer's record (processor/service/owned_run.h).
TEST_F(RdKafkaClientsTest, AReadOfTheEmbeddedClusterFindsNoTransactionMarkers) {
  std::unique_ptr<TransactionalProducer> p = Producer();
  ASSERT_NE(p, nullptr);
  for (int t = 0; t < 3; ++t) {
    ASSERT_FALSE(p->BeginTransaction());
    Produce(*p, base::Partition(0), "a");
    Produce(*p, base::Partition(0), "b");
    ASSERT_FALSE(p->CommitTransaction(30s));
    EXPECT_EQ(p->OffsetsOfLastCommit("log").at(base::Partition(0)),
              (DeliveredRecords{base::Offset(2 * t), base::Offset(2 * t + 1), 2}))
        << "each transaction right after the last one's records";
  }
  base::SystemClock clock;
  auto read = ReadPartitions(*clients_, clock, "log", {base::Partition(0)}, 10s);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read.value()[base::Partition(0)].records.size(), 6u);
  EXPECT_FALSE(clients_->WritesTransactionMarkers());
}

TEST_F(RdKafkaClientsTest, AProducerThatLookedUpItsTopicsWritesToThem) {
  std::unique_ptr<TransactionalProducer> p = Producer();
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->LookUpTopics({"log"}, 10s));
  ASSERT_FALSE(p->BeginTransaction());
  Produce(*p, base::Partition(1), "after the look-up");
  ASSERT_FALSE(p->CommitTransaction(30s));
  EXPECT_EQ(p->OffsetsOfLastCommit("log"),
            (std::map<base::Partition, DeliveredRecords>{
                {base::Partition(1), {base::Offset(0), base::Offset(0), 1}}}));
}

TEST_F(RdKafkaClientsTest, TellsAPartitionsStartAndEnd) {
  std::unique_ptr<TransactionalProducer> p = Producer();
  ASSERT_NE(p, nullptr);
  ASSERT_FALSE(p->BeginTransaction());
  Produce(*p, base::Partition(1), "x");
  ASSERT_FALSE(p->CommitTransaction(30s));
  auto start = clients_->LogStart("log", base::Partition(1), 10s);
  auto end = clients_->HighWatermark("log", base::Partition(1), 10s);
  ASSERT_TRUE(start.ok()) << start.error();
  ASSERT_TRUE(end.ok()) << end.error();
  EXPECT_EQ(start.value(), base::Offset(0));
  EXPECT_GE(end.value(), base::Offset(1));  // the record (and on a real broker, the commit marker)
}

// Regression: a service-owned setting in kafka.properties was overridden on some
// clients and not on others: auto.offset.reset was only a default, so "earliest"
// hid a position retention removed (nothing counted as lost) and "latest" skipped the
// retained backlog. Every client now refuses one, naming it.
TEST_F(RdKafkaClientsTest, EveryClientRefusesAServiceOwnedPropertyNamingIt) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"auto.offset.reset", "earliest"},
           {"isolation.level", "read_uncommitted"},
           {"max.in.flight.requests.per.connection", "5"}}) {
    SCOPED_TRACE(name);
    auto clients = MakeRdKafkaClients(cluster_->bootstrap_servers(), {{name, value}});
    const auto refused = [&name](const base::Error& e) {
      EXPECT_EQ(e.code(), base::Errc::kBadConfig) << e;
      EXPECT_EQ(e.subject(), "kafka.properties." + name) << e;
    };
    auto consumer = clients->NewGroupConsumer({"log", "owned-properties-test"});
    ASSERT_FALSE(consumer.ok());
    refused(consumer.error());
    auto reader = clients->NewPartitionReader("owned-properties-test");
    ASSERT_FALSE(reader.ok());
    refused(reader.error());
    auto producer = clients->NewTransactionalProducer({"owned-properties-test", 10s});
    ASSERT_FALSE(producer.ok());
    refused(producer.error());
    auto plain = clients->NewPlainProducer({});
    ASSERT_FALSE(plain.ok());
    refused(plain.error());
    auto end = clients->HighWatermark("log", base::Partition(0), 10s);
    ASSERT_FALSE(end.ok());
    refused(end.error());
  }
  // A property of the user's own (TLS, SASL, tuning) is passed on.
  auto clients = MakeRdKafkaClients(cluster_->bootstrap_servers(), {{"fetch.wait.max.ms", "10"}});
  EXPECT_TRUE(clients->NewGroupConsumer({"log", "owned-properties-test"}).ok());
  EXPECT_TRUE(clients->NewPlainProducer({}).ok());
}

TEST_F(RdKafkaClientsTest, APlainProducerCountsItsDeliveryReports) {
  auto made = clients_->NewPlainProducer({});
  ASSERT_TRUE(made.ok()) << made.error();
  PlainProducer& p = *made.value();
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(p.Produce({"log", base::Partition(i % 2), std::nullopt, "v", {}}));
  }
  EXPECT_EQ(p.Flush(30s), 0u);
  EXPECT_EQ(p.deliveries().acked, 5u);
  EXPECT_EQ(p.deliveries().failed, 0u);
  auto end = clients_->HighWatermark("log", base::Partition(0), 10s);
  ASSERT_TRUE(end.ok()) << end.error();
  EXPECT_EQ(end.value(), base::Offset(3));
}

// The replicator makes a new heartbeat producer after a fatal error, so the error
// must say it is fatal (librdkafka's produce answers __FATAL from then on).
TEST_F(RdKafkaClientsTest, APlainProducerSaysItsFatalErrorIsFatal) {
  constexpr int16_t kInitProducerIdApiKey = 22;
  rd_kafka_mock_push_request_errors(cluster_->mock(), kInitProducerIdApiKey, 1,
                                    RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
  auto made = clients_->NewPlainProducer({});
  ASSERT_TRUE(made.ok()) << made.error();
  PlainProducer& p = *made.value();
  KafkaError e;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!e && std::chrono::steady_clock::now() < deadline) {
    e = p.Produce({"log", base::Partition(0), std::nullopt, "v", {}});
    if (!e) p.Poll(100ms);
  }
  EXPECT_EQ(e.kind, ErrorKind::kFatal) << e.ToString();
  EXPECT_NE(e.ToString().find("CLUSTER_AUTHORIZATION_FAILED"), std::string::npos) << e.ToString();
}

TEST_F(RdKafkaClientsTest, APlainProducerSaysWhenItsQueueIsFullInsteadOfWaiting) {
  PlainProducerSpec spec;
  spec.max_queued = 2;
  spec.linger = 10s;  // nothing leaves the queue while the test fills it
  auto made = clients_->NewPlainProducer(spec);
  ASSERT_TRUE(made.ok()) << made.error();
  PlainProducer& p = *made.value();
  const OutgoingRecord record{"log", base::Partition(0), std::nullopt, "v", {}};
  ASSERT_FALSE(p.Produce(record));
  ASSERT_FALSE(p.Produce(record));
  const KafkaError full = p.Produce(record);
  EXPECT_EQ(full.kind, ErrorKind::kRetriable);
  EXPECT_EQ(full.code, kQueueFull);
  EXPECT_EQ(p.Flush(30s), 0u);
  EXPECT_EQ(p.deliveries().acked, 2u);
}

// Assigns what the group gives from the start, unassigns what it takes.
class AssigningListener : public RebalanceListener {
 public:
  void OnAssigned(const std::vector<base::Partition>& partitions) override {
    std::vector<PartitionOffset> from_start;
    for (base::Partition p : partitions) from_start.push_back({p, kOffsetBeginning});
    EXPECT_FALSE(consumer->IncrementalAssign(from_start));
    assigned += static_cast<int>(partitions.size());
  }
  void OnRevoked(const std::vector<base::Partition>& partitions, bool) override {
    EXPECT_FALSE(consumer->IncrementalUnassign(partitions));
    assigned -= static_cast<int>(partitions.size());
  }
  GroupConsumer* consumer = nullptr;
  int assigned = 0;
};

// Subscribes `consumer` to "log" and polls until the group gave it both partitions.
void SubscribeUntilBothPartitionsAreAssigned(GroupConsumer& consumer, AssigningListener& listener) {
  listener.consumer = &consumer;
  ASSERT_FALSE(consumer.Subscribe(&listener));
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (listener.assigned < 2 && std::chrono::steady_clock::now() < deadline) {
    consumer.Poll(100ms);
  }
  ASSERT_EQ(listener.assigned, 2) << "never assigned";
}

// What the processor's check of a quiet input partition builds on: a partition
// without a leader gives its end to no question (within the question's timeout), and
// the other partitions still answer.
TEST_F(RdKafkaClientsTest, AConsumerCannotAskTheEndOfAPartitionWithoutALeader) {
  auto made = clients_->NewGroupConsumer({.topic = "log", .group_id = "leaderless"});
  ASSERT_TRUE(made.ok()) << made.error();
  GroupConsumer& consumer = *made.value();
  AssigningListener listener;
  ASSERT_NO_FATAL_FAILURE(SubscribeUntilBothPartitionsAreAssigned(consumer, listener));
  base::Offset end;
  ASSERT_FALSE(consumer.QueryEnd(base::Partition(1), end, 5s));
  ASSERT_EQ(rd_kafka_mock_partition_set_leader(cluster_->mock(), "log", 1, -1),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  // The processor's question waits 300 ms at most (kQuietAskTimeout).
  const auto asked = std::chrono::steady_clock::now();
  const KafkaError e = consumer.QueryEnd(base::Partition(1), end, 300ms);
  const auto took = std::chrono::steady_clock::now() - asked;
  EXPECT_TRUE(e) << "told an end " << end.value() << " of a partition without a leader";
  // NOT_LEADER_FOR_PARTITION from the broker it knew, _UNKNOWN_PARTITION once its
  // metadata shows no leader: either way, at once.
  EXPECT_LT(took, 1s);
  EXPECT_FALSE(consumer.QueryEnd(base::Partition(0), end, 300ms));
  consumer.Close();
}

// The processor asks a quiet partition's end on its consumer loop: the question must
// keep to its timeout when the broker is slow to answer (librdkafka's watermark query
// waits for the answer up to socket.timeout.ms, whatever its timeout).
TEST_F(RdKafkaClientsTest, AQuestionForAPartitionsEndKeepsToItsTimeoutWhenItsBrokerIsSlow) {
  auto made = clients_->NewGroupConsumer({.topic = "log", .group_id = "slow-broker"});
  ASSERT_TRUE(made.ok()) << made.error();
  GroupConsumer& consumer = *made.value();
  AssigningListener listener;
  ASSERT_NO_FATAL_FAILURE(SubscribeUntilBothPartitionsAreAssigned(consumer, listener));
  base::Offset end;
  ASSERT_FALSE(consumer.QueryEnd(base::Partition(0), end, 5s));
  ASSERT_EQ(rd_kafka_mock_broker_set_rtt(cluster_->mock(), 1, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
  const auto asked = std::chrono::steady_clock::now();
  const KafkaError e = consumer.QueryEnd(base::Partition(0), end, 300ms);
  const auto took = std::chrono::steady_clock::now() - asked;
  EXPECT_EQ(e.code, "_TIMED_OUT") << e.ToString();
  EXPECT_LT(took, 2s);
  ASSERT_EQ(rd_kafka_mock_broker_set_rtt(cluster_->mock(), 1, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
  consumer.Close();
}

// What the start-up check of the brokers' abort interval meets on the embedded
// cluster, which implements no DescribeConfigs: an error naming the setting and why
// ("DescribeConfigs (KIP-133) not supported by broker"), at once.
TEST_F(RdKafkaClientsTest, AClusterThatCannotTellABrokersSettingSaysSoAtOnce) {
  const auto asked = std::chrono::steady_clock::now();
  const auto told = clients_->DescribeBrokerSetting(
      "transaction.abort.timed.out.transaction.cleanup.interval.ms", 5s);
  const auto took = std::chrono::steady_clock::now() - asked;
  ASSERT_TRUE(told.ok()) << told.error();
  EXPECT_TRUE(told.value().told.empty());
  ASSERT_EQ(told.value().untold.size(), 1u) << "the embedded cluster has one broker";
  EXPECT_EQ(told.value().untold[0].rfind("broker 1: DescribeConfigs", 0), 0u)
      << told.value().untold[0];
  EXPECT_LT(took, 2s);
}

TEST_F(RdKafkaClientsTest, AConsumerTellsWhichBrokerLeadsEachPartitionOfItsTopic) {
  auto made = clients_->NewGroupConsumer({.topic = "log", .group_id = "leaders"});
  ASSERT_TRUE(made.ok()) << made.error();
  const auto leaders = made.value()->PartitionLeaders(5s);
  ASSERT_TRUE(leaders.ok()) << leaders.error();
  ASSERT_EQ(leaders.value().size(), 2u);
  for (const auto& [partition, broker] : leaders.value()) {
    EXPECT_GE(broker, 1) << "partition " << partition.value();
  }
  made.value()->Close();
}

// The embedded cluster implements neither ListGroups nor DescribeGroups: the question
// fails at once, as a refusal that asking again does not change (kKafka, not
// kUnavailable), and the renamed deployment's start check says it cannot tell.
TEST_F(RdKafkaClientsTest, AClusterThatCannotDescribeAGroupSaysSoAtOnce) {
  const auto asked = std::chrono::steady_clock::now();
  const auto members = clients_->DescribeGroup("an-old-group", 5s);
  const auto took = std::chrono::steady_clock::now() - asked;
  ASSERT_FALSE(members.ok()) << members.value().members.size() << " member(s)";
  EXPECT_EQ(members.error().code(), base::Errc::kKafka);

  EXPECT_EQ(members.error().message().rfind(
                "cannot describe consumer group \"an-old-group\": _UNSUPPORTED_FEATURE", 0),
            0u)
      << members.error();
  EXPECT_LT(took, 2s);
}

// Regression: the other questions about a partition's offsets used librdkafka's
// watermark query, which waits for a slow broker's answer up to socket.timeout.ms
// (60 s) whatever its timeout: a restore's questions, the replicator's end question
// and the check of an input gone blocked their loops that long.
TEST_F(RdKafkaClientsTest, EveryQuestionForAPartitionsOffsetsKeepsToItsTimeoutWhenItsBrokerIsSlow) {
  auto made = clients_->NewGroupConsumer({.topic = "log", .group_id = "slow-broker-all"});
  ASSERT_TRUE(made.ok()) << made.error();
  GroupConsumer& consumer = *made.value();
  AssigningListener listener;
  ASSERT_NO_FATAL_FAILURE(SubscribeUntilBothPartitionsAreAssigned(consumer, listener));
  auto reader = clients_->NewPartitionReader("slow-broker-reader");
  ASSERT_TRUE(reader.ok()) << reader.error();
  const base::Partition p(0);
  base::Offset low, high;
  // Answered while the broker is quick (and every handle knows its leader).
  ASSERT_FALSE(consumer.QueryWatermarks(p, low, high, 5s));
  ASSERT_TRUE(clients_->HighWatermark("log", p, 5s).ok());
  ASSERT_TRUE(clients_->LogStart("log", p, 5s).ok());
  ASSERT_TRUE(reader.value()->StableEnd("log", p, 5s).ok());

  ASSERT_EQ(rd_kafka_mock_broker_set_rtt(cluster_->mock(), 1, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
  const auto keeps_to_its_timeout = [](const char* question, auto ask) {
    const auto asked = std::chrono::steady_clock::now();
    const std::string answer = ask();
    const auto took = std::chrono::steady_clock::now() - asked;
    EXPECT_NE(answer.find("_TIMED_OUT"), std::string::npos) << question << ": " << answer;
    EXPECT_LT(took, 2s) << question;
  };
  keeps_to_its_timeout("QueryWatermarks",
                       [&] { return consumer.QueryWatermarks(p, low, high, 300ms).ToString(); });
  keeps_to_its_timeout("HighWatermark", [&] {
    auto end = clients_->HighWatermark("log", p, 300ms);
    return end.ok() ? "answered" : end.error().ToString();
  });
  keeps_to_its_timeout("LogStart", [&] {
    auto start = clients_->LogStart("log", p, 300ms);
    return start.ok() ? "answered" : start.error().ToString();
  });
  keeps_to_its_timeout("StableEnd", [&] {
    auto end = reader.value()->StableEnd("log", p, 300ms);
    return end.ok() ? "answered" : end.error().ToString();
  });
  ASSERT_EQ(rd_kafka_mock_broker_set_rtt(cluster_->mock(), 1, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
  consumer.Close();
}

// Restores run in the assignment callback, before the processor assigns what the
// group gave (processor.cc, OnAssigned). What librdkafka 2.0.2 does with a callback
// that outlasts max.poll.interval.ms there (measured on the embedded cluster): it does
// not put the member out of its group, the assignment is not lost and can be taken
// after, and no loss follows while the consumer polls again past the session timeout.
// (A callback that assigns first and then outlasts it is put out of the group, and
// sees its assignment lost at once: the processor claims nothing then.)
TEST_F(RdKafkaClientsTest, AnAssignmentCallbackThatOutlastsMaxPollIntervalBeforeAssigningKeepsIt) {
  auto clients =
      MakeRdKafkaClients(cluster_->bootstrap_servers(), {{"max.poll.interval.ms", "6000"},
                                                         {"session.timeout.ms", "6000"},
                                                         {"heartbeat.interval.ms", "100"}});
  auto made = clients->NewGroupConsumer({.topic = "log", .group_id = "slow-assignment"});
  ASSERT_TRUE(made.ok()) << made.error();
  GroupConsumer& consumer = *made.value();
  // As the processor does: the restore first, then the assignment.
  struct SlowListener : RebalanceListener {
    void OnAssigned(const std::vector<base::Partition>& partitions) override {
      ++assignments;
      std::this_thread::sleep_for(8s);  // librdkafka's own timer: no clock to inject
      lost_after = consumer->AssignmentLost();
      std::vector<PartitionOffset> from_start;
      for (base::Partition p : partitions) from_start.push_back({p, kOffsetBeginning});
      assign = consumer->IncrementalAssign(from_start);
    }
    void OnRevoked(const std::vector<base::Partition>& partitions, bool lost) override {
      if (lost) ++losses;
      consumer->IncrementalUnassign(partitions);
    }
    GroupConsumer* consumer = nullptr;
    int assignments = 0;
    int losses = 0;
    std::optional<bool> lost_after;
    KafkaError assign;
  } listener;
  listener.consumer = &consumer;
  ASSERT_FALSE(consumer.Subscribe(&listener));
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!listener.lost_after && std::chrono::steady_clock::now() < deadline) {
    if (!consumer.Poll(0ms)) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(listener.lost_after.has_value()) << "never assigned";
  EXPECT_FALSE(*listener.lost_after);
  EXPECT_FALSE(listener.assign) << listener.assign.ToString();
  deadline = std::chrono::steady_clock::now() + 8s;  // past the session timeout
  while (std::chrono::steady_clock::now() < deadline) consumer.Poll(100ms);
  EXPECT_EQ(listener.losses, 0);
  EXPECT_EQ(listener.assignments, 1);
  EXPECT_FALSE(consumer.AssignmentLost());
  consumer.Close();
}

// Whether a consumer's Close sent a LeaveGroup: one empty error is stacked on the
// broker for the next LeaveGroup request, and a request takes it off the stack.
class LeaveOnClose : public RdKafkaClientsTest,
                     public ::testing::WithParamInterface<std::tuple<std::string, bool, bool>> {
 protected:
  static constexpr int16_t kLeaveGroupApiKey = 13;
  static constexpr int32_t kBroker = 1;

  size_t StackedLeaveErrors() {
    size_t count = 0;
    EXPECT_EQ(
        rd_kafka_mock_broker_error_stack_cnt(cluster_->mock(), kBroker, kLeaveGroupApiKey, &count),
        RD_KAFKA_RESP_ERR_NO_ERROR);
    return count;
  }
};

// librdkafka sends no LeaveGroup when a static member closes (KIP-345); the client
// makes one that is to leave unsubscribe first, which does.
TEST_P(LeaveOnClose, SendsALeaveGroupUnlessAStaticMemberIsToStay) {
  const auto& [instance_id, leaves_on_close, leave_expected] = GetParam();
  auto made = clients_->NewGroupConsumer({.topic = "log",
                                          .group_id = "leave-on-close",
                                          .group_instance_id = instance_id,
                                          .static_member_leaves_on_close = leaves_on_close});
  ASSERT_TRUE(made.ok()) << made.error();
  GroupConsumer& consumer = *made.value();
  AssigningListener listener;
  ASSERT_NO_FATAL_FAILURE(SubscribeUntilBothPartitionsAreAssigned(consumer, listener));
  ASSERT_EQ(rd_kafka_mock_broker_push_request_error_rtts(
                cluster_->mock(), kBroker, kLeaveGroupApiKey, 1, RD_KAFKA_RESP_ERR_NO_ERROR, 0),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(StackedLeaveErrors(), 1u);

  consumer.Close();

  EXPECT_EQ(listener.assigned, 0) << "the revocation ran inside Close";
  EXPECT_EQ(StackedLeaveErrors(), leave_expected ? 0u : 1u);
}

std::string LeaveOnCloseName(
    const ::testing::TestParamInfo<std::tuple<std::string, bool, bool>>& param_info) {
  const bool is_static = !std::get<0>(param_info.param).empty();
  return std::string(is_static ? "Static" : "Dynamic") +
         (std::get<1>(param_info.param) ? "ToldToLeave" : "ToldToStay");
}

INSTANTIATE_TEST_SUITE_P(DynamicOrStatic, LeaveOnClose,
                         ::testing::Values(std::make_tuple("", true, true),
                                           std::make_tuple("", false, true),
                                           std::make_tuple("instance-a", true, true),
                                           std::make_tuple("instance-a", false, false)),
                         LeaveOnCloseName);

// kafka.properties goes to every client: a consumer's setting makes each producer say
// it ignores it. That is logged, but neither as a warning nor counted as one.
TEST_F(RdKafkaClientsTest, APropertyAnotherKindOfClientTakesIsLoggedButIsNoWarning) {
  auto sink = std::make_shared<KeptLines>();
  base::Counter warnings;
  auto clients =
      MakeRdKafkaClients(cluster_->bootstrap_servers(), {{"session.timeout.ms", "45000"}},
                         {base::Logger(sink, "a kafka"), &warnings});
  auto producer = clients->NewPlainProducer({});
  ASSERT_TRUE(producer.ok()) << producer.message();
  const std::vector<std::string> lines = sink->lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(
      lines.front().rfind("info [a kafka] producer CONFWARN: [thrd:app]: Configuration property "
                          "session.timeout.ms is a consumer property",
                          0),
      0u)
      << lines.front();
  EXPECT_EQ(warnings.value(), 0u);
}

// A plain producer's delivery timeout (the members producer's: member_timeout) holds
// even when kafka.properties asks for a longer one: a record for a partition without
// a leader is reported failed after it, not after the user's ten minutes.
TEST_F(RdKafkaClientsTest, APlainProducersDeliveryTimeoutHoldsOverALongerOneInTheProperties) {
  auto clients =
      MakeRdKafkaClients(cluster_->bootstrap_servers(), {{"message.timeout.ms", "600000"}});
  PlainProducerSpec spec;
  spec.delivery_timeout = 1s;
  auto made = clients->NewPlainProducer(spec);
  ASSERT_TRUE(made.ok()) << made.error();
  PlainProducer& producer = *made.value();
  ASSERT_FALSE(producer.Produce({"log", base::Partition(0), std::nullopt, "before", {}}));
  ASSERT_EQ(producer.Flush(10s), 0u);
  ASSERT_EQ(producer.deliveries().acked, 1u);
  ASSERT_EQ(rd_kafka_mock_partition_set_leader(cluster_->mock(), "log", 0, -1),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_FALSE(producer.Produce({"log", base::Partition(0), std::nullopt, "stranded", {}}));
  while (producer.deliveries().failed == 0 && std::chrono::steady_clock::now() - sent < 20s) {
    producer.Poll(100ms);
  }
  EXPECT_EQ(producer.deliveries().failed, 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 10s);
  EXPECT_EQ(producer.deliveries().last_error, "Local: Message timed out");
}

}  // namespace
}  // namespace oncecount::kafka
