#include "tests/testing/strict_kafka.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "processor/kafka/partition_reader.h"

namespace oncecount::testing {
namespace {

using namespace std::chrono_literals;
using kafka::ErrorKind;
using kafka::KafkaError;
using kafka::Message;
using kafka::MessageKind;
using State = StrictKafka::StoredEntry::State;

// What the service passes to IncrementalAssign to resume at the group's offset.
constexpr base::Offset kCommittedOffset{-1001};
constexpr auto kTimeout = 1s;

template <class T>
T Take(base::Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.error();
  return std::move(result).value();
}

// A message as one line, so that tests compare whole deliveries.
std::string Describe(const Message& message) {
  const std::string where =
      std::to_string(message.partition.value()) + "@" + std::to_string(message.offset.value());
  switch (message.kind) {
    case MessageKind::kRecord:
      return where + " " + std::string(message.value.value_or("<null>"));
    case MessageKind::kPartitionEnd:
      return where + " end";
    case MessageKind::kOffsetOutOfRange:
      return where + " out-of-range";
    default:
      return where + " " + message.error;
  }
}

// Polls until nothing is left (Poll never waits in the double).
template <class Client>
std::vector<std::string> Drain(Client& client) {
  std::vector<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::optional<Message> message = client.Poll(0ms);
    if (!message) break;
    seen.push_back(Describe(*message));
  }
  return seen;
}

kafka::OutgoingRecord Record(std::string_view topic, int32_t partition, std::string_view value) {
  kafka::OutgoingRecord record;
  record.topic = topic;
  record.partition = base::Partition(partition);
  record.value = value;
  return record;
}

// Does what the service's listener must: assign what it is given at the committed
// offset, unassign what is taken, and remember what happened.
class Listener : public kafka::RebalanceListener {
 public:
  void OnAssigned(const std::vector<base::Partition>& partitions) override {
    events.push_back("assigned" + List(partitions));
    if (!makes_the_calls) return;
    std::vector<kafka::PartitionOffset> offsets;
    for (base::Partition p : partitions) offsets.push_back({p, kCommittedOffset});
    EXPECT_TRUE(consumer->IncrementalAssign(offsets).ok());
  }
  void OnRevoked(const std::vector<base::Partition>& partitions, bool lost) override {
    events.push_back((lost ? "lost" : "revoked") + List(partitions));
    lost_during_callback = consumer->AssignmentLost();
    if (makes_the_calls) {
      EXPECT_TRUE(consumer->IncrementalUnassign(partitions).ok());
    }
  }

  kafka::GroupConsumer* consumer = nullptr;
  // false: an application that forgets the incremental (un)assign calls.
  bool makes_the_calls = true;
  std::vector<std::string> events;
  bool lost_during_callback = false;

 private:
  static std::string List(const std::vector<base::Partition>& partitions) {
    std::string s;
    for (base::Partition p : partitions) s += " " + std::to_string(p.value());
    return s;
  }
};

// A group member of one instance with its listener.
struct Member {
  std::unique_ptr<kafka::GroupConsumer> consumer;
  std::unique_ptr<Listener> listener = std::make_unique<Listener>();
};

Member Subscribed(kafka::Clients& clients, const std::string& topic = "input",
                  const std::string& group = "counting") {
  Member member;
  member.consumer = Take(clients.NewGroupConsumer({.topic = topic, .group_id = group}));
  member.listener->consumer = member.consumer.get();
  EXPECT_TRUE(member.consumer->Subscribe(member.listener.get()).ok());
  return member;
}

std::unique_ptr<kafka::TransactionalProducer> Initialized(kafka::Clients& clients,
                                                          const std::string& id,
                                                          std::chrono::milliseconds timeout = 60s) {
  auto producer = Take(clients.NewTransactionalProducer({id, timeout}));
  EXPECT_TRUE(producer->InitTransactions(kTimeout).ok());
  return producer;
}

std::unique_ptr<kafka::PartitionReader> ReaderFrom(kafka::Clients& clients,
                                                   const std::string& topic, int32_t partition,
                                                   int64_t offset = 0) {
  auto reader = Take(clients.NewPartitionReader("test"));
  EXPECT_TRUE(reader->Assign({{topic, base::Partition(partition), base::Offset(offset)}}).ok());
  return reader;
}

// --- Transactions -----------------------------------------------------------------

TEST(StrictKafka, ASecondInitTransactionsFencesTheFirstProducerAndAbortsItsOpenTransaction) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto clients = kafka.ClientsFor("a");
  auto first = Initialized(*clients, "shard-0");
  ASSERT_TRUE(first->BeginTransaction().ok());
  ASSERT_TRUE(first->Produce(Record("out", 0, "from the first")).ok());
  EXPECT_EQ(kafka.LastStableOffset("out", 0), 0);

  auto second = Initialized(*kafka.ClientsFor("b"), "shard-0");

  const auto entries = kafka.Entries("out", 0);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].state, State::kAborted);
  EXPECT_EQ(entries[1].state, State::kMarker);
  EXPECT_EQ(entries[1].value, "ABORT");
  EXPECT_EQ(kafka.LastStableOffset("out", 0), 2);
  const KafkaError fenced = first->CommitTransaction(kTimeout);
  EXPECT_EQ(fenced.kind, ErrorKind::kProducerFenced);
  EXPECT_EQ(fenced.code, "PRODUCER_FENCED");
  EXPECT_EQ(first->AbortTransaction(kTimeout).kind, ErrorKind::kProducerFenced);
  EXPECT_EQ(first->BeginTransaction().kind, ErrorKind::kProducerFenced);
  EXPECT_TRUE(second->BeginTransaction().ok());
  EXPECT_TRUE(second->Produce(Record("out", 0, "from the second")).ok());
  EXPECT_TRUE(second->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 0), std::vector<std::string>{"from the second"});
}

TEST(StrictKafka, BeginTransactionBeforeInitTransactionsIsAFatalStateError) {
  StrictKafka kafka;
  auto producer = Take(kafka.ClientsFor("a")->NewTransactionalProducer({"t", 60s}));
  const KafkaError error = producer->BeginTransaction();
  EXPECT_EQ(error.kind, ErrorKind::kFatal);
  EXPECT_EQ(error.code, "INVALID_TXN_STATE");
  // Fatal means unusable, as the interface promises.
  EXPECT_EQ(producer->InitTransactions(kTimeout).kind, ErrorKind::kFatal);
}

TEST(StrictKafka, ProducingToAnUnknownPartitionLeavesTheTransactionAbortableOnly) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto producer = Initialized(*kafka.ClientsFor("a"), "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "kept back")).ok());
  EXPECT_EQ(producer->Produce(Record("out", 7, "nowhere")).kind, ErrorKind::kAbortable);
  EXPECT_EQ(producer->CommitTransaction(kTimeout).kind, ErrorKind::kAbortable);
  EXPECT_TRUE(producer->AbortTransaction(kTimeout).ok());
  EXPECT_TRUE(kafka.CommittedValues("out", 0).empty());
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "again")).ok());
  EXPECT_TRUE(producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 0), std::vector<std::string>{"again"});
}

TEST(StrictKafka, ATransactionLeftOpenByACrashedInstanceIsAbortedAfterItsTimeout) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto clients = kafka.ClientsFor("a");
  auto producer = Initialized(*clients, "shard-0", 30s);
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "half done")).ok());
  kafka.ProduceForTest("out", 0, std::nullopt, "after it");

  kafka.Crash("a");
  EXPECT_EQ(producer->CommitTransaction(kTimeout).code, "crashed");
  kafka.Advance(30s);
  kafka.Advance(1ms);
  EXPECT_EQ(kafka.LastStableOffset("out", 0), 0)
      << "open past its timeout until the coordinator's next check (every 10 s)";
  kafka.Advance(10s);

  EXPECT_EQ(kafka.LastStableOffset("out", 0), 3);
  EXPECT_EQ(kafka.Entries("out", 0)[0].state, State::kAborted);
  EXPECT_EQ(kafka.Entries("out", 0)[2].value, "ABORT");
  auto reader = ReaderFrom(*kafka.ClientsFor("b"), "out", 0);
  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@1 after it", "0@3 end"}));
  producer.reset();  // destroying a crashed instance's objects is safe at any time
  clients.reset();
}

TEST(StrictKafka, ATransactionTimeoutFencesTheProducerThatOwnedIt) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto producer = Initialized(*kafka.ClientsFor("a"), "t", 10s);
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "too slow")).ok());
  kafka.Advance(20s);  // the coordinator's check at 20 s finds it past its timeout
  EXPECT_EQ(producer->CommitTransaction(kTimeout).kind, ErrorKind::kProducerFenced);
  EXPECT_EQ(kafka.Entries("out", 0)[0].state, State::kAborted);
}

TEST(StrictKafka, ATransactionPastItsTimeoutStillCommitsBeforeTheCoordinatorsNextCheck) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  kafka.set_transaction_abort_interval(10s);  // checks at 10 s, 20 s, ...
  auto producer = Initialized(*kafka.ClientsFor("a"), "t", 5s);
  kafka.Advance(6s);
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "late but lucky")).ok());
  kafka.Advance(13s);  // 13 s old at 19 s: the check at 10 s saw it 4 s old
  EXPECT_TRUE(producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 0), std::vector<std::string>{"late but lucky"});
}

TEST(StrictKafka, HeldRecordsReachTheLogOnlyWhenReleasedOrWhenTheirTransactionCommits) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto producer = Initialized(*kafka.ClientsFor("a"), "t");
  kafka.HoldProduce("a");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "queued")).ok());
  EXPECT_EQ(kafka.HighWatermark("out", 0), 0) << "still in the producer's queue";
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 0), std::vector<std::string>{"queued"});

  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "sent")).ok());
  kafka.ReleaseProduce("a");
  EXPECT_EQ(kafka.HighWatermark("out", 0), 3) << "the record, open, after the first and its marker";
  EXPECT_EQ(kafka.LastStableOffset("out", 0), 2);
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 0), (std::vector<std::string>{"queued", "sent"}));
}

TEST(StrictKafka, HeldRecordsOfAProducerFencedMeanwhileNeverLand) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  kafka.set_transaction_abort_interval(1s);
  auto producer = Initialized(*kafka.ClientsFor("a"), "t", 10s);
  kafka.HoldProduce("a");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "too late")).ok());
  kafka.Advance(12s);  // the coordinator aborts the transaction and bumps the epoch
  kafka.ReleaseProduce("a");
  EXPECT_EQ(producer->CommitTransaction(kTimeout).kind, ErrorKind::kProducerFenced);
  EXPECT_TRUE(kafka.CommittedValues("out", 0).empty());
  for (const auto& entry : kafka.Entries("out", 0)) EXPECT_NE(entry.value, "too late");
}

TEST(StrictKafka, TheBrokerChecksTheTopicsLimitAgainstEachBatchOfAPartitionsRecords) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 2).ok());
  kafka.SetMaxMessageBytes("out", 1000);
  const std::string value(400, 'v');  // 482 bytes as a batch of its own
  const auto commit_three = [&](kafka::TransactionalProducer& producer, int32_t partition) {
    EXPECT_TRUE(producer.BeginTransaction().ok());
    KafkaError error;
    for (int i = 0; i < 3 && !error; ++i) error = producer.Produce(Record("out", partition, value));
    if (error) {
      EXPECT_TRUE(producer.AbortTransaction(kTimeout).ok());
      return error;
    }
    return producer.CommitTransaction(kTimeout);
  };

  // librdkafka's default batch.size packs the three records into one batch.
  auto packing = Initialized(*kafka.ClientsFor("a"), "packing");
  const KafkaError refused = commit_three(*packing, 0);
  EXPECT_EQ(refused.code, "MSG_SIZE_TOO_LARGE");
  EXPECT_TRUE(kafka::IsRecordTooLarge(refused)) << refused.ToString();
  EXPECT_TRUE(kafka.CommittedValues("out", 0).empty());

  // Batches of at most 1,000 bytes: two records, then one.
  auto clients = kafka.ClientsFor("b");
  auto bounded = Take(clients->NewTransactionalProducer({"bounded", 60s, 1000}));
  ASSERT_TRUE(bounded->InitTransactions(kTimeout).ok());
  EXPECT_TRUE(commit_three(*bounded, 1).ok());
  EXPECT_EQ(kafka.CommittedValues("out", 1).size(), 3u);
}

TEST(StrictKafka, AnEmptyTransactionDoesNotTimeOutAndCommitsTrivially) {
  StrictKafka kafka;
  auto producer = Initialized(*kafka.ClientsFor("a"), "t", 10s);
  ASSERT_TRUE(producer->BeginTransaction().ok());
  kafka.Advance(1min);  // the coordinator knows of no transaction until something is added
  EXPECT_TRUE(producer->CommitTransaction(kTimeout).ok());
}

// --- read_committed reading ------------------------------------------------------

TEST(StrictKafka, ReadCommittedReaderStopsAtTheLastStableOffsetAndGoesOnOnceItCommits) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  auto clients = kafka.ClientsFor("a");
  kafka.ProduceForTest("log", 0, std::nullopt, "before");
  auto producer = Initialized(*clients, "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "in the transaction")).ok());
  kafka.ProduceForTest("log", 0, std::nullopt, "behind the transaction");
  EXPECT_EQ(kafka.HighWatermark("log", 0), 3);
  EXPECT_EQ(kafka.LastStableOffset("log", 0), 1);
  auto reader = ReaderFrom(*clients, "log", 0, kafka::kOffsetBeginning.value());

  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@0 before", "0@1 end"}));
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());

  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@1 in the transaction",
                                                      "0@2 behind the transaction", "0@4 end"}));
}

TEST(StrictKafka, ReadCommittedReadersNeverDeliverRecordsOfAbortedTransactions) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  auto clients = kafka.ClientsFor("a");
  auto producer = Initialized(*clients, "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "aborted")).ok());
  ASSERT_TRUE(producer->AbortTransaction(kTimeout).ok());
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "committed")).ok());
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());

  auto reader = ReaderFrom(*clients, "log", 0);
  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@2 committed", "0@4 end"}));
  EXPECT_EQ(kafka.CommittedValues("log", 0), std::vector<std::string>{"committed"});
}

// Where a committed transaction's records went, as librdkafka's delivery reports say:
// first, last and how many, with another producer's record among them.
TEST(StrictKafka, TellsWhereACommittedTransactionsRecordsWent) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 2).ok());
  auto clients = kafka.ClientsFor("a");
  auto producer = Initialized(*clients, "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "one")).ok());
  kafka.ProduceForTest("log", 0, std::nullopt, "someone else's");
  ASSERT_TRUE(producer->Produce(Record("log", 0, "two")).ok());
  ASSERT_TRUE(producer->Produce(Record("log", 1, "three")).ok());
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(producer->OffsetsOfLastCommit("log"),
            (std::map<base::Partition, kafka::DeliveredRecords>{
                {base::Partition(0), {base::Offset(0), base::Offset(2), 2}},
                {base::Partition(1), {base::Offset(0), base::Offset(0), 1}}}));
  EXPECT_TRUE(producer->OffsetsOfLastCommit("other").empty());
}

// A read that finds an offset with nothing to read between two records (the double
// writes a marker at the end of each transaction, as a broker does) tells the clients
// that the cluster writes markers; one that reads a single transaction cannot tell.
TEST(StrictKafka, AReadAcrossTwoTransactionsShowsTheClusterWritesMarkers) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  auto clients = kafka.ClientsFor("a");
  auto producer = Initialized(*clients, "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "first")).ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "second")).ok());
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());
  const auto read = [&] {
    return kafka::ReadPartitions(*clients, kafka.clock(), "log", {base::Partition(0)}, 5s);
  };
  ASSERT_TRUE(read().ok());
  EXPECT_FALSE(clients->WritesTransactionMarkers());

  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "third")).ok());
  ASSERT_TRUE(producer->CommitTransaction(kTimeout).ok());
  auto records = read();
  ASSERT_TRUE(records.ok()) << records.error();
  EXPECT_EQ(records.value()[base::Partition(0)].records.size(), 3u);
  EXPECT_TRUE(clients->WritesTransactionMarkers());
  EXPECT_FALSE(kafka.ClientsFor("b")->WritesTransactionMarkers()) << "another process's";
}

// Retention deleting records while a read runs makes the reader jump to the new log
// start: offsets skipped between two records, which are not markers. The embedded
// cluster does this too (it keeps a partition's newest 5 MB), and writes no markers.
TEST(StrictKafka, AReadThatRetentionMadeJumpDoesNotShowMarkers) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  for (const char* value : {"a", "b", "c", "d", "e", "f"}) {
    kafka.ProduceForTest("log", 0, std::nullopt, value);
  }
  auto clients = kafka.ClientsFor("a");
  std::vector<std::string> read;
  auto ended = kafka::StreamPartitions(*clients, kafka.clock(), "log", {base::Partition(0)}, 5s,
                                       [&](base::Partition, std::string_view value) {
                                         read.emplace_back(value);
                                         if (read.size() == 1) {
                                           EXPECT_TRUE(kafka.DeleteRecordsBefore("log", 0, 4).ok());
                                         }
                                       });
  ASSERT_TRUE(ended.ok()) << ended.error();
  EXPECT_EQ(read, (std::vector<std::string>{"a", "e", "f"}));
  EXPECT_FALSE(clients->WritesTransactionMarkers());
}

// A record a consumer cannot read (MakeUnreadable) is reported, as librdkafka reports
// a checksum mismatch, and a read of the partition refuses to go on without it: a
// state built past it would not hold what it held.
TEST(StrictKafka, AReadStopsAtARecordTheConsumerCannotReadNamingIt) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  for (const char* value : {"a", "b", "c"}) kafka.ProduceForTest("log", 0, std::nullopt, value);
  ASSERT_FALSE(kafka.MakeUnreadable("log", 0, 1));
  EXPECT_TRUE(kafka.MakeUnreadable("log", 0, 3)) << "past the end";
  auto clients = kafka.ClientsFor("a");
  auto read = kafka::ReadPartitions(*clients, kafka.clock(), "log", {base::Partition(0)}, 5s);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.code(), base::Errc::kCorrupt);
  EXPECT_NE(read.message().find("partition 0, offset 1 cannot be read (_BAD_MSG"),
            std::string::npos)
      << read.message();
}

TEST(StrictKafka, PartitionEndComesAtTheLastStableOffsetAndAgainOnlyAfterItMoves) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 2).ok());
  auto clients = kafka.ClientsFor("a");
  kafka.ProduceForTest("log", 0, std::nullopt, "a");
  auto reader = Take(clients->NewPartitionReader("test"));
  ASSERT_TRUE(reader
                  ->Assign({{"log", base::Partition(0), base::Offset(0)},
                            {"log", base::Partition(1), base::Offset(0)}})
                  .ok());

  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@0 a", "1@0 end", "0@1 end"}));
  EXPECT_TRUE(Drain(*reader).empty()) << "an end is reported once";
  auto producer = Initialized(*clients, "t");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("log", 0, "pending")).ok());
  EXPECT_TRUE(Drain(*reader).empty()) << "the end has not moved: the transaction pins it";
  ASSERT_TRUE(producer->AbortTransaction(kTimeout).ok());
  EXPECT_EQ(Drain(*reader), std::vector<std::string>{"0@3 end"});
  ASSERT_TRUE(reader->Seek({"log", base::Partition(0), base::Offset(0)}).ok());
  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@0 a", "0@3 end"}));
}

TEST(StrictKafka, RetentionMakesAPartitionReaderJumpToTheLogStart) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  for (const char* value : {"a", "b", "c"}) kafka.ProduceForTest("log", 0, std::nullopt, value);
  auto reader = ReaderFrom(*kafka.ClientsFor("a"), "log", 0, 0);
  ASSERT_TRUE(kafka.DeleteRecordsBefore("log", 0, 2).ok());
  EXPECT_EQ(kafka.LogStart("log", 0), 2);
  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"0@2 c", "0@3 end"}));
}

TEST(StrictKafka, TimeRetentionEmptiesAPartitionWhoseNewestRecordIsOlderThanIt) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 2).ok());
  kafka.ProduceForTest("log", 0, std::nullopt, "old");
  kafka.ProduceForTest("log", 1, std::nullopt, "old");
  kafka.SetRetentionMs("log", 60'000);
  kafka.Advance(40s);
  kafka.ProduceForTest("log", 1, std::nullopt, "new");
  EXPECT_EQ(kafka.LogStart("log", 0), 0) << "nothing is 60 s old yet";
  kafka.Advance(21s);
  EXPECT_EQ(kafka.LogStart("log", 0), 1) << "the idle partition lost every record";
  EXPECT_EQ(kafka.HighWatermark("log", 0), 1);
  EXPECT_EQ(kafka.LogStart("log", 1), 1) << "only the old record expired";
  auto reader = ReaderFrom(*kafka.ClientsFor("a"), "log", 1, 0);
  EXPECT_EQ(Drain(*reader), (std::vector<std::string>{"1@1 new", "1@2 end"}));
  kafka.Advance(40s);
  EXPECT_EQ(kafka.LogStart("log", 1), 2);
  kafka.SetRetentionMs("log", -1);
  kafka.ProduceForTest("log", 1, std::nullopt, "kept");
  kafka.Advance(std::chrono::hours(24));
  EXPECT_EQ(kafka.LogStart("log", 1), 2) << "retention.ms -1 keeps records for ever";
}

TEST(StrictKafka, MessagesOwnTheirBytesAndOutliveTheCluster) {
  std::optional<Message> message;
  {
    StrictKafka kafka;
    ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
    kafka.ProduceForTest("log", 0, "key", "value", {{"h", "v"}}, 42);
    auto reader = ReaderFrom(*kafka.ClientsFor("a"), "log", 0);
    message = reader->Poll(0ms);
  }
  ASSERT_TRUE(message.has_value());
  std::thread([m = std::move(*message)] {
    EXPECT_EQ(m.topic, "log");
    EXPECT_EQ(m.key, "key");
    EXPECT_EQ(m.value, "value");
    EXPECT_EQ(m.timestamp_ms, 42);
    EXPECT_EQ(m.Headers(), (std::vector<kafka::Header>{{"h", "v"}}));
  }).join();
}

// --- Consumer groups -------------------------------------------------------------

TEST(StrictKafka, TheFirstMemberIsOfferedEveryPartitionAndConsumesReadCommitted) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  kafka.ProduceForTest("input", 0, std::nullopt, "x");
  kafka.ProduceForTest("input", 1, std::nullopt, "y");
  auto clients = kafka.ClientsFor("a");
  Member a = Subscribed(*clients);
  EXPECT_EQ(kafka.Generation("counting"), 1);
  // Nothing committed yet: auto.offset.reset=error says so once per partition.
  EXPECT_EQ(Drain(*a.consumer),
            (std::vector<std::string>{"0@-1001 out-of-range", "1@-1001 out-of-range"}));
  EXPECT_EQ(a.listener->events, std::vector<std::string>{"assigned 0 1"});
  ASSERT_TRUE(a.consumer
                  ->Seek({{base::Partition(0), kafka::kOffsetBeginning},
                          {base::Partition(1), base::Offset(0)}})
                  .ok());
  EXPECT_EQ(Drain(*a.consumer), (std::vector<std::string>{"0@0 x", "1@0 y"}));
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "a"}, {1, "a"}}));
}

TEST(StrictKafka, CooperativeRebalanceHandsAPartitionToTheNewMemberOnlyAfterTheOldOwnerRevokedIt) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  ASSERT_EQ(a.listener->events, std::vector<std::string>{"assigned 0 1"});

  Member b = Subscribed(*kafka.ClientsFor("b"));
  EXPECT_EQ(kafka.Generation("counting"), 2);
  Drain(*b.consumer);
  EXPECT_TRUE(b.listener->events.empty()) << "partition 1 is still a's";
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "a"}, {1, "a"}}));

  Drain(*a.consumer);
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0 1", "revoked 1"}));
  EXPECT_EQ(kafka.Generation("counting"), 3) << "the revocation completed a round";
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "a"}, {1, "b"}}));
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 1"});
  EXPECT_EQ(a.consumer->IncrementalAssign({{base::Partition(1), base::Offset(0)}}).code,
            "NOT_OWNED");
}

// librdkafka completes a cooperative rebalance only once the application has made the
// incremental call of each event, in the callback or later; until then the member is
// served no other event, and every member waiting on it waits.
TEST(StrictKafka, ARevocationCompletesOnlyOnceTheOldOwnerUnassignsThePartition) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  a.listener->makes_the_calls = false;
  Member b = Subscribed(*kafka.ClientsFor("b"));
  Drain(*b.consumer);
  Drain(*a.consumer);
  Drain(*b.consumer);
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0 1", "revoked 1"}));
  EXPECT_TRUE(b.listener->events.empty()) << "a has not unassigned partition 1";
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "a"}, {1, "a"}}));
  EXPECT_EQ(kafka.Generation("counting"), 2);

  ASSERT_TRUE(a.consumer->IncrementalUnassign({base::Partition(1)}).ok());
  EXPECT_EQ(kafka.Generation("counting"), 3) << "the call completed the round";
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 1"});
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "a"}, {1, "b"}}));
}

TEST(StrictKafka, AMemberThatHasNotAssignedWhatItWasGivenStallsTheNextRebalance) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  a.listener->makes_the_calls = false;
  Drain(*a.consumer);
  ASSERT_EQ(a.listener->events, std::vector<std::string>{"assigned 0 1"});
  Member b = Subscribed(*kafka.ClientsFor("b"));
  for (Member* m : {&a, &b, &a, &b}) Drain(*m->consumer);
  EXPECT_EQ(a.listener->events, std::vector<std::string>{"assigned 0 1"})
      << "no revocation before a assigned what it was given";
  EXPECT_TRUE(b.listener->events.empty());

  a.listener->makes_the_calls = true;
  ASSERT_TRUE(a.consumer
                  ->IncrementalAssign({{base::Partition(0), kCommittedOffset},
                                       {base::Partition(1), kCommittedOffset}})
                  .ok());
  for (Member* m : {&a, &b}) Drain(*m->consumer);
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0 1", "revoked 1"}));
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 1"});
}

// A member that never makes the call is expelled once the rebalance timeout
// (max.poll.interval.ms) passes, however often it polls: the group goes on without it.
TEST(StrictKafka, AMemberThatNeverMakesTheCallIsExpelledAfterTheRebalanceTimeout) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  kafka.set_max_poll_interval(60s);
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  a.listener->makes_the_calls = false;
  Member b = Subscribed(*kafka.ClientsFor("b"));
  for (Member* m : {&b, &a, &b}) Drain(*m->consumer);
  ASSERT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0 1", "revoked 1"}));
  kafka.Advance(30s);
  for (Member* m : {&a, &b}) Drain(*m->consumer);
  EXPECT_EQ(kafka.Members("counting").size(), 2u) << "a polls: it is still a member";
  kafka.Advance(31s);
  for (Member* m : {&b, &b}) Drain(*m->consumer);
  EXPECT_EQ(kafka.Members("counting").size(), 1u);
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "b"}, {1, "b"}}));
}

TEST(StrictKafka, AssignmentIsBalancedAndSticky) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 5).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  Member b = Subscribed(*kafka.ClientsFor("b"));
  Member c = Subscribed(*kafka.ClientsFor("c"));
  for (int round = 0; round < 3; ++round) {
    for (Member* m : {&a, &b, &c}) Drain(*m->consumer);
  }
  EXPECT_EQ(kafka.Owners("counting"),
            (std::map<int32_t, std::string>{{0, "a"}, {1, "a"}, {2, "b"}, {3, "c"}, {4, "b"}}))
      << "a keeps its lowest two; the rest go one by one to the least loaded";
  c.consumer->Close();
  for (Member* m : {&a, &b}) Drain(*m->consumer);
  EXPECT_EQ(kafka.Owners("counting"),
            (std::map<int32_t, std::string>{{0, "a"}, {1, "a"}, {2, "b"}, {3, "a"}, {4, "b"}}))
      << "only c's partition moves";
}

TEST(StrictKafka, CloseRevokesThroughTheListenerAndLeavesTheGroup) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  a.consumer->Close();
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0", "revoked 0"}));
  EXPECT_TRUE(kafka.Members("counting").empty());
  EXPECT_EQ(kafka.Generation("counting"), 2);
}

TEST(StrictKafka, AnExpelledMembersNextPollReportsTheLossAndRejoins) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  kafka.Freeze("a");
  kafka.Advance(10s);
  EXPECT_EQ(kafka.Members("counting").size(), 1u) << "expelled only after the session timeout";
  kafka.Advance(1ms);
  EXPECT_TRUE(kafka.Members("counting").empty());
  EXPECT_EQ(kafka.Generation("counting"), 2);

  kafka.Thaw("a");
  Drain(*a.consumer);

  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0", "lost 0", "assigned 0"}));
  EXPECT_TRUE(a.listener->lost_during_callback);
  EXPECT_FALSE(a.consumer->AssignmentLost());
  EXPECT_EQ(kafka.Generation("counting"), 3);
  ASSERT_EQ(kafka.Members("counting").size(), 1u);
  EXPECT_NE(kafka.Members("counting")[0], "a#1") << "it rejoins as a new member";
}

TEST(StrictKafka, AMemberScriptedToLearnItsDropMidTransactionSeesTheLossOnlyFromThatCall) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto clients = kafka.ClientsFor("a");
  Member a = Subscribed(*clients);
  auto producer = Initialized(*clients, "t");
  Drain(*a.consumer);
  kafka.Freeze("a");
  kafka.Advance(10s + 1ms);
  ASSERT_TRUE(kafka.Members("counting").empty());
  kafka.LearnDropAt(StrictKafka::Call::kProduce, "a");
  kafka.Thaw("a");

  Drain(*a.consumer);
  EXPECT_EQ(a.listener->events, std::vector<std::string>{"assigned 0"})
      << "the loss waits for the call the test chose";
  EXPECT_FALSE(a.consumer->AssignmentLost());
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "x")).ok());
  EXPECT_TRUE(a.consumer->AssignmentLost()) << "learnt during the produce";

  Drain(*a.consumer);
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0", "lost 0", "assigned 0"}));
  EXPECT_TRUE(a.listener->lost_during_callback);
  EXPECT_FALSE(a.consumer->AssignmentLost()) << "served, and rejoined";
}

TEST(StrictKafka, AMemberThatKeepsPollingStaysInTheGroup) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  for (int i = 0; i < 10; ++i) {
    Drain(*a.consumer);
    kafka.Advance(5s);
  }
  EXPECT_EQ(kafka.Generation("counting"), 1);
}

TEST(StrictKafka, ALiveMemberBusyOutsideItsConsumerKeepsItsSessionUntilMaxPollInterval) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  kafka.set_max_poll_interval(60s);
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  kafka.Advance(59s);  // a long restore: the background thread heartbeats meanwhile
  EXPECT_EQ(kafka.Members("counting").size(), 1u);
  EXPECT_EQ(kafka.Generation("counting"), 1);
  kafka.Advance(2s);
  EXPECT_TRUE(kafka.Members("counting").empty()) << "it stopped polling for too long";
}

// librdkafka resets the max.poll.interval.ms timer in poll only: a member busy with
// other calls of its consumer (pausing, asking for the group metadata or watermarks)
// is still a member that stopped polling.
TEST(StrictKafka, OnlyAPollResetsTheMaxPollIntervalTimer) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  kafka.set_max_poll_interval(60s);
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  for (int i = 0; i < 6; ++i) {
    kafka.Advance(10s);
    ASSERT_TRUE(a.consumer->Pause({base::Partition(0)}).ok());
    ASSERT_TRUE(a.consumer->Resume({base::Partition(0)}).ok());
    EXPECT_NE(a.consumer->Metadata(), nullptr);
    base::Offset low, high;
    EXPECT_TRUE(a.consumer->QueryWatermarks(base::Partition(0), low, high, 1s).ok());
  }
  kafka.Advance(1s);
  EXPECT_TRUE(kafka.Members("counting").empty()) << "61 s without a poll";
}

TEST(StrictKafka, ACrashedInstancesMemberKeepsItsPartitionsUntilItsSessionTimesOut) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = Subscribed(*kafka.ClientsFor("a"));
  Drain(*a.consumer);
  kafka.Crash("a");
  Member b = Subscribed(*kafka.ClientsFor("b"));
  EXPECT_EQ(a.consumer->Seek({{base::Partition(0), base::Offset(0)}}).code, "crashed");
  a.consumer.reset();  // its destruction must not leave the group

  kafka.Advance(5s);
  Drain(*b.consumer);
  EXPECT_TRUE(b.listener->events.empty()) << "a never revokes: it is dead";
  kafka.Advance(6s);
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 0 1"});
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "b"}, {1, "b"}}));
}

// --- Static membership (KIP-345) ---------------------------------------------------

// A static member: group.instance.id `instance_id`, leaving on close or not.
Member StaticSubscribed(kafka::Clients& clients, const std::string& instance_id,
                        bool leaves_on_close = true) {
  Member member;
  member.consumer =
      Take(clients.NewGroupConsumer({.topic = "input",
                                     .group_id = "counting",
                                     .group_instance_id = instance_id,
                                     .static_member_leaves_on_close = leaves_on_close}));
  member.listener->consumer = member.consumer.get();
  EXPECT_TRUE(member.consumer->Subscribe(member.listener.get()).ok());
  return member;
}

TEST(StrictKafka, AStaticMemberBackWithinItsSessionGetsItsPartitionsWithoutARebalance) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 4).ok());
  Member a = StaticSubscribed(*kafka.ClientsFor("a"), "a");
  Drain(*a.consumer);
  Member b = StaticSubscribed(*kafka.ClientsFor("b"), "b");
  for (int i = 0; i < 3; ++i) {
    Drain(*a.consumer);
    Drain(*b.consumer);
  }
  const auto owners = kafka.Owners("counting");
  const int32_t generation = kafka.Generation("counting");
  ASSERT_EQ(b.listener->events, std::vector<std::string>{"assigned 2 3"});

  kafka.Crash("a");
  a.consumer.reset();
  kafka.Advance(5s);
  Member back = StaticSubscribed(*kafka.ClientsFor("a"), "a");
  Drain(*back.consumer);
  Drain(*b.consumer);

  EXPECT_EQ(back.listener->events, std::vector<std::string>{"assigned 0 1"});
  EXPECT_EQ(kafka.Generation("counting"), generation) << "no rebalance";
  EXPECT_EQ(kafka.Owners("counting"), owners);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 2 3"}) << "b is not disturbed";
  kafka.Advance(20s);
  EXPECT_EQ(kafka.Members("counting").size(), 2u) << "the previous life is gone, not expired";
  EXPECT_EQ(kafka.Generation("counting"), generation);
}

TEST(StrictKafka, AStaticMemberThatNeverComesBackLeavesAfterItsSessionTimeout) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = StaticSubscribed(*kafka.ClientsFor("a"), "a");
  Drain(*a.consumer);
  kafka.Crash("a");
  Member b = StaticSubscribed(*kafka.ClientsFor("b"), "b");

  kafka.Advance(5s);
  Drain(*b.consumer);
  EXPECT_TRUE(b.listener->events.empty());
  kafka.Advance(6s);
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 0 1"});
}

TEST(StrictKafka, AStaticMembersPreviousLifeIsFencedAndNeverRejoins) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto old_clients = kafka.ClientsFor("old");
  Member old_life = StaticSubscribed(*old_clients, "a");
  Drain(*old_life.consumer);
  const auto old_metadata = old_life.consumer->Metadata();
  kafka.Freeze("old");  // a zombie: paused while its replacement starts

  Member new_life = StaticSubscribed(*kafka.ClientsFor("new"), "a");
  Drain(*new_life.consumer);
  kafka.Thaw("old");
  const std::vector<std::string> seen = Drain(*old_life.consumer);

  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("FENCED_INSTANCE_ID"), std::string::npos) << seen[0];
  EXPECT_TRUE(old_life.consumer->AssignmentLost());
  EXPECT_TRUE(Drain(*old_life.consumer).empty()) << "one fatal error, then nothing";
  auto producer = Initialized(*old_clients, "old-producer");
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "zombie")).ok());
  const KafkaError refused = producer->SendOffsets("input", {{base::Partition(0), base::Offset(5)}},
                                                   *old_metadata, kTimeout);
  EXPECT_EQ(refused.kind, ErrorKind::kGroupFenced);
  EXPECT_EQ(refused.code, "FENCED_INSTANCE_ID");

  old_life.consumer->Close();
  EXPECT_EQ(old_life.listener->events, (std::vector<std::string>{"assigned 0", "lost 0"}));
  EXPECT_EQ(new_life.listener->events, std::vector<std::string>{"assigned 0"});
  EXPECT_EQ(kafka.Owners("counting"), (std::map<int32_t, std::string>{{0, "new"}}));
  EXPECT_EQ(kafka.Members("counting").size(), 1u) << "the zombie neither rejoined nor left";
}

TEST(StrictKafka, AStaticMemberClosedWithoutLeavingKeepsItsPartitionsUntilItComesBack) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  auto clients = kafka.ClientsFor("a");
  Member a = StaticSubscribed(*clients, "a", /*leaves_on_close=*/false);
  Drain(*a.consumer);
  Member b = StaticSubscribed(*kafka.ClientsFor("b"), "b");
  for (int i = 0; i < 3; ++i) {
    Drain(*a.consumer);
    Drain(*b.consumer);
  }
  const int32_t generation = kafka.Generation("counting");
  a.consumer->Close();
  EXPECT_EQ(a.listener->events,
            (std::vector<std::string>{"assigned 0 1", "revoked 1", "revoked 0"}));
  EXPECT_EQ(kafka.Members("counting").size(), 2u);

  kafka.Advance(9s);
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 1"}) << "0 waits for a";
  Member back = StaticSubscribed(*clients, "a", /*leaves_on_close=*/false);
  Drain(*back.consumer);
  EXPECT_EQ(back.listener->events, std::vector<std::string>{"assigned 0"});
  EXPECT_EQ(kafka.Generation("counting"), generation);
}

TEST(StrictKafka, AStaticMemberClosedWithoutLeavingThatStaysAwayLosesItsPartitionsAtItsTimeout) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  Member a = StaticSubscribed(*kafka.ClientsFor("a"), "a", /*leaves_on_close=*/false);
  Drain(*a.consumer);
  Member b = StaticSubscribed(*kafka.ClientsFor("b"), "b");
  for (int i = 0; i < 3; ++i) {
    Drain(*a.consumer);
    Drain(*b.consumer);
  }
  a.consumer->Close();
  kafka.Advance(10s);
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, std::vector<std::string>{"assigned 1"});
  kafka.Advance(1ms);
  Drain(*b.consumer);
  EXPECT_EQ(b.listener->events, (std::vector<std::string>{"assigned 1", "assigned 0"}));
}

TEST(StrictKafka, AStaticMemberToldToLeaveOnCloseLeavesAtOnce) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  Member a = StaticSubscribed(*kafka.ClientsFor("a"), "a", /*leaves_on_close=*/true);
  Drain(*a.consumer);
  a.consumer->Close();
  EXPECT_TRUE(kafka.Members("counting").empty());
}

TEST(StrictKafka, RetentionMakesAGroupConsumerReportOffsetOutOfRange) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  for (const char* value : {"a", "b", "c"}) kafka.ProduceForTest("input", 0, std::nullopt, value);
  Member m = Subscribed(*kafka.ClientsFor("a"));
  Drain(*m.consumer);
  ASSERT_TRUE(m.consumer->Seek({{base::Partition(0), base::Offset(1)}}).ok());
  ASSERT_TRUE(kafka.DeleteRecordsBefore("input", 0, 2).ok());

  EXPECT_EQ(Drain(*m.consumer), std::vector<std::string>{"0@1 out-of-range"});
  kafka.ProduceForTest("input", 0, std::nullopt, "d");
  EXPECT_TRUE(Drain(*m.consumer).empty()) << "stopped until sought";
  ASSERT_TRUE(m.consumer->Seek({{base::Partition(0), kafka::kOffsetBeginning}}).ok());
  EXPECT_EQ(Drain(*m.consumer), (std::vector<std::string>{"0@2 c", "0@3 d"}));
}

TEST(StrictKafka, PausedPartitionsDeliverNothingAndKeepTheirPosition) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 1).ok());
  kafka.ProduceForTest("input", 0, std::nullopt, "a");
  Member m = Subscribed(*kafka.ClientsFor("a"));
  Drain(*m.consumer);
  ASSERT_TRUE(m.consumer->Seek({{base::Partition(0), base::Offset(0)}}).ok());
  ASSERT_TRUE(m.consumer->Pause({base::Partition(0)}).ok());
  EXPECT_TRUE(Drain(*m.consumer).empty());
  ASSERT_TRUE(m.consumer->Resume({base::Partition(0)}).ok());
  EXPECT_EQ(Drain(*m.consumer), std::vector<std::string>{"0@0 a"});
}

// --- KIP-447: offsets in transactions --------------------------------------------

// One member of "counting" on "input" and the producer that commits its work.
struct Pipeline {
  explicit Pipeline(StrictKafka& kafka) : clients(kafka.ClientsFor("a")) {
    EXPECT_TRUE(kafka.CreateTopic("input", 1).ok());
    EXPECT_TRUE(kafka.CreateTopic("out", 1).ok());
    member = Subscribed(*clients);
    Drain(*member.consumer);
    producer = Initialized(*clients, "shard-0");
    EXPECT_TRUE(producer->BeginTransaction().ok());
    EXPECT_TRUE(producer->Produce(Record("out", 0, "result")).ok());
  }
  KafkaError SendOffsets(const kafka::GroupMetadata& metadata) {
    return producer->SendOffsets("input", {{base::Partition(0), base::Offset(5)}}, metadata,
                                 kTimeout);
  }

  std::unique_ptr<kafka::Clients> clients;
  Member member;
  std::unique_ptr<kafka::TransactionalProducer> producer;
};

TEST(StrictKafka, CommittedOffsetsAreStoredOnlyWhenTheTransactionCommits) {
  StrictKafka kafka;
  Pipeline pipeline(kafka);
  ASSERT_TRUE(pipeline.SendOffsets(*pipeline.member.consumer->Metadata()).ok());
  EXPECT_EQ(kafka.CommittedOffset("counting", "input", 0), std::nullopt);
  ASSERT_TRUE(pipeline.producer->AbortTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedOffset("counting", "input", 0), std::nullopt);

  ASSERT_TRUE(pipeline.producer->BeginTransaction().ok());
  ASSERT_TRUE(pipeline.SendOffsets(*pipeline.member.consumer->Metadata()).ok());
  ASSERT_TRUE(pipeline.producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedOffset("counting", "input", 0), 5);
}

TEST(StrictKafka, SendOffsetsOfAMemberExpelledAfterItsSessionTimeoutIsRefusedAndTheCommitFails) {
  StrictKafka kafka;
  Pipeline pipeline(kafka);
  const auto metadata = pipeline.member.consumer->Metadata();
  kafka.Freeze("a");
  kafka.Advance(11s);  // no heartbeats: the group expels it
  kafka.Thaw("a");

  const KafkaError refused = pipeline.SendOffsets(*metadata);

  EXPECT_EQ(refused.kind, ErrorKind::kGroupFenced);
  EXPECT_EQ(refused.code, "UNKNOWN_MEMBER_ID");
  EXPECT_EQ(pipeline.producer->CommitTransaction(kTimeout).kind, ErrorKind::kAbortable);
  ASSERT_TRUE(pipeline.producer->AbortTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedOffset("counting", "input", 0), std::nullopt);
  EXPECT_TRUE(kafka.CommittedValues("out", 0).empty());
}

TEST(StrictKafka, SendOffsetsWithOnlyLogicalOffsetsSendsNothingSoNothingIsChecked) {
  StrictKafka kafka;
  Pipeline pipeline(kafka);
  const auto metadata = pipeline.member.consumer->Metadata();
  kafka.Freeze("a");
  kafka.Advance(11s);  // expelled: real offsets would be refused
  kafka.Thaw("a");

  EXPECT_TRUE(pipeline.producer
                  ->SendOffsets("input", {{base::Partition(0), kafka::kOffsetBeginning}}, *metadata,
                                kTimeout)
                  .ok());
  EXPECT_TRUE(pipeline.producer->CommitTransaction(kTimeout).ok());
  EXPECT_EQ(kafka.CommittedOffset("counting", "input", 0), std::nullopt);
}

TEST(StrictKafka, SendOffsetsWithTheGenerationOfBeforeARebalanceIsRefused) {
  StrictKafka kafka;
  Pipeline pipeline(kafka);
  const auto stale = pipeline.member.consumer->Metadata();
  Member other = Subscribed(*kafka.ClientsFor("b"));

  const KafkaError refused = pipeline.SendOffsets(*stale);

  EXPECT_EQ(refused.kind, ErrorKind::kGroupFenced);
  EXPECT_EQ(refused.code, "ILLEGAL_GENERATION");
  EXPECT_EQ(pipeline.producer->CommitTransaction(kTimeout).kind, ErrorKind::kAbortable);
  ASSERT_TRUE(pipeline.producer->AbortTransaction(kTimeout).ok());
  ASSERT_TRUE(pipeline.producer->BeginTransaction().ok());
  EXPECT_TRUE(pipeline.SendOffsets(*pipeline.member.consumer->Metadata()).ok())
      << "a live member carries the current generation";
}

TEST(StrictKafka, ANewOwnerWaitsForTheTransactionHoldingOffsetsOfItsPartition) {
  StrictKafka kafka;
  Pipeline pipeline(kafka);
  for (const char* value : {"a", "b", "c", "d", "e", "f"}) {
    kafka.ProduceForTest("input", 0, std::nullopt, value);
  }
  ASSERT_TRUE(pipeline.SendOffsets(*pipeline.member.consumer->Metadata()).ok());
  pipeline.member.consumer->Close();  // its transaction stays open
  Member next = Subscribed(*kafka.ClientsFor("b"));

  EXPECT_TRUE(Drain(*next.consumer).empty()) << "the committed offset is unstable";
  EXPECT_EQ(next.listener->events, std::vector<std::string>{"assigned 0"});
  ASSERT_TRUE(pipeline.producer->CommitTransaction(kTimeout).ok());

  EXPECT_EQ(Drain(*next.consumer), std::vector<std::string>{"0@5 f"});
}

// --- Fault injection and crashes -------------------------------------------------

TEST(StrictKafka, InjectedErrorsAreReturnedTheGivenNumberOfTimes) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto clients = kafka.ClientsFor("a");
  kafka.InjectError(StrictKafka::Call::kHighWatermark,
                    {ErrorKind::kRetriable, "REQUEST_TIMED_OUT", ""}, 2);
  EXPECT_FALSE(clients->HighWatermark("out", base::Partition(0), kTimeout).ok());
  EXPECT_FALSE(clients->HighWatermark("out", base::Partition(0), kTimeout).ok());
  EXPECT_TRUE(clients->HighWatermark("out", base::Partition(0), kTimeout).ok());

  auto producer = Initialized(*clients, "t");
  kafka.InjectError(StrictKafka::Call::kBeginTransaction,
                    {ErrorKind::kRetriable, "COORDINATOR_LOAD_IN_PROGRESS", ""});
  EXPECT_EQ(producer->BeginTransaction().kind, ErrorKind::kRetriable);
  ASSERT_TRUE(producer->BeginTransaction().ok()) << "the injected error changed nothing";
  kafka.InjectError(StrictKafka::Call::kCommitTransaction, {ErrorKind::kAbortable, "X", ""});
  ASSERT_TRUE(producer->Produce(Record("out", 0, "v")).ok());
  EXPECT_EQ(producer->CommitTransaction(kTimeout).kind, ErrorKind::kAbortable);
  EXPECT_EQ(producer->CommitTransaction(kTimeout).code, "TXN_REQUIRES_ABORT");
  EXPECT_TRUE(producer->AbortTransaction(kTimeout).ok());
}

TEST(StrictKafka, AnInjectedErrorForOneInstanceSparesTheOthers) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  kafka.InjectError(StrictKafka::Call::kPartitionCounts, {ErrorKind::kFailed, "X", ""}, 1, "b");
  EXPECT_TRUE(kafka.ClientsFor("a")->PartitionCounts(kTimeout).ok());
  EXPECT_FALSE(kafka.ClientsFor("b")->PartitionCounts(kTimeout).ok());
  EXPECT_EQ(kafka.ClientsFor("b")->PartitionCounts(kTimeout)->at("out"), 1);
}

TEST(StrictKafka, AnInjectedFenceMakesTheProducerUnusable) {
  StrictKafka kafka;
  auto producer = Initialized(*kafka.ClientsFor("a"), "t");
  kafka.InjectError(StrictKafka::Call::kBeginTransaction,
                    {ErrorKind::kProducerFenced, "PRODUCER_FENCED", ""});
  EXPECT_EQ(producer->BeginTransaction().kind, ErrorKind::kProducerFenced);
  EXPECT_EQ(producer->BeginTransaction().kind, ErrorKind::kProducerFenced);
}

TEST(StrictKafka, CrashAtKillsTheInstanceAtTheChosenCallBeforeItTakesEffect) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto producer = Initialized(*kafka.ClientsFor("a"), "t", 10s);
  auto bystander = Initialized(*kafka.ClientsFor("b"), "u", 10s);
  kafka.CrashAt(StrictKafka::Call::kProduce, "a", /*skip=*/1);
  ASSERT_TRUE(producer->BeginTransaction().ok());
  ASSERT_TRUE(producer->Produce(Record("out", 0, "first")).ok());
  EXPECT_EQ(producer->Produce(Record("out", 0, "second")).code, "crashed");
  EXPECT_EQ(producer->CommitTransaction(kTimeout).code, "crashed");
  ASSERT_TRUE(bystander->BeginTransaction().ok());
  EXPECT_TRUE(bystander->Produce(Record("out", 0, "other")).ok()) << "only a's calls crash";
  EXPECT_TRUE(bystander->CommitTransaction(kTimeout).ok());

  ASSERT_EQ(kafka.Entries("out", 0).size(), 3u) << "the crashing call wrote nothing";
  EXPECT_EQ(kafka.Entries("out", 0)[0].state, State::kOpen);
  kafka.Advance(11s);
  EXPECT_EQ(kafka.CommittedValues("out", 0), (std::vector<std::string>{"other"}));
}

TEST(StrictKafka, ARestartedInstanceGetsWorkingClients) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("out", 1).ok());
  auto before = kafka.ClientsFor("a");
  kafka.Crash("a");
  EXPECT_FALSE(before->NewPlainProducer({}).ok());
  auto producer = Take(kafka.ClientsFor("a")->NewPlainProducer({}));
  EXPECT_TRUE(producer->Produce(Record("out", 0, "heartbeat")).ok());
}

TEST(StrictKafka, TheClockMovesOnlyWhenAdvancedAndSleepAdvancesIt) {
  StrictKafka kafka(1'000);
  EXPECT_EQ(kafka.clock().SteadyMs(), 0);
  EXPECT_EQ(kafka.clock().WallMs(), 1'000);
  kafka.Advance(250ms);
  kafka.clock().Sleep(50ms);
  EXPECT_EQ(kafka.clock().SteadyMs(), 300);
  EXPECT_EQ(kafka.clock().WallMs(), 1'300);
}

// A broker applies a topic's timestamp settings at append: LogAppendTime stamps the
// record itself; under CreateTime, message.timestamp.after.max.ms refuses a record
// stamped further ahead of its clock. DescribeTopic tells both.
TEST(StrictKafka, AppliesATopicsTimestampRulesAtAppendAsABrokerDoes) {
  StrictKafka kafka(1'000'000);
  ASSERT_TRUE(kafka.CreateTopic("stamped", 1).ok());
  ASSERT_TRUE(kafka.CreateTopic("bounded", 1).ok());
  kafka.SetTimestampRules("stamped", "LogAppendTime", std::nullopt);
  kafka.SetTimestampRules("bounded", "CreateTime", 1000);
  EXPECT_TRUE(kafka.ProduceForTest("stamped", 0, "k", "v", {}, 5).ok());
  EXPECT_EQ(kafka.Entries("stamped", 0)[0].timestamp_ms, 1'000'000) << "the broker's time";
  EXPECT_TRUE(kafka.ProduceForTest("bounded", 0, "k", "v", {}, 1'001'000).ok());
  const KafkaError refused = kafka.ProduceForTest("bounded", 0, "k", "v", {}, 1'001'001);
  EXPECT_EQ(refused.code, "INVALID_TIMESTAMP");
  EXPECT_EQ(kafka.Entries("bounded", 0).size(), 1u) << "nothing appended";
  EXPECT_TRUE(kafka.ProduceForTest("bounded", 0, "k", "v", {}, 5).ok()) << "any time behind";

  auto clients = kafka.ClientsFor("a");
  EXPECT_EQ(clients->DescribeTopic("stamped")->timestamp_type, "LogAppendTime");
  EXPECT_EQ(clients->DescribeTopic("bounded")->timestamp_after_max_ms, 1000);
  ASSERT_TRUE(kafka.CreateTopic("untold", 1).ok());
  EXPECT_FALSE(clients->DescribeTopic("untold")->timestamp_type) << "untold until set";
}

// Kafka lists only the topics a principal may describe: a topic the ACLs hide is left
// out of the list, as one that does not exist is.
TEST(StrictKafka, ListsOnlyTheTopicsTheInstanceMayDescribe) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("open", 2).ok());
  ASSERT_TRUE(kafka.CreateTopic("hidden", 3).ok());
  auto clients = kafka.ClientsFor("a");
  kafka.DenyDescribe("hidden");
  auto counts = clients->PartitionCounts(kTimeout);
  ASSERT_TRUE(counts.ok()) << counts.error();
  EXPECT_EQ(counts.value(), (std::map<std::string, int>{{"open", 2}}));
  kafka.DenyDescribe("hidden", false);
  EXPECT_EQ(clients->PartitionCounts(kTimeout)->at("hidden"), 3);
}

// kafka-topics.sh --alter --partitions: the topic is listed with its new count, the
// new partitions keep its retention and take records, and its groups rebalance, the
// new partitions assigned as any other. A topic never shrinks.
TEST(StrictKafka, AddsPartitionsToATopicAndItsGroupsAssignThem) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("input", 2).ok());
  kafka.SetRetentionBytes("input", 4096);
  auto clients = kafka.ClientsFor("a");
  Member a = Subscribed(*clients);
  Drain(*a.consumer);
  ASSERT_EQ(a.listener->events, std::vector<std::string>{"assigned 0 1"});
  const int32_t generation = kafka.Generation("counting");
  ASSERT_TRUE(kafka.AddPartitions("input", 3).ok());
  EXPECT_EQ(clients->PartitionCounts(kTimeout)->at("input"), 3);
  EXPECT_GT(kafka.Generation("counting"), generation);
  Drain(*a.consumer);
  EXPECT_EQ(a.listener->events, (std::vector<std::string>{"assigned 0 1", "assigned 2"}));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(kafka.ProduceForTest("input", 2, std::nullopt, std::string(1000, 'z')).ok());
  }
  EXPECT_EQ(kafka.HighWatermark("input", 2), 10);
  EXPECT_GT(kafka.LogStart("input", 2), 0) << "retention.bytes holds on the new partition";
  EXPECT_EQ(kafka.AddPartitions("input", 3).code, "INVALID_PARTITIONS");
  EXPECT_EQ(kafka.AddPartitions("input", 1).code, "INVALID_PARTITIONS");
  EXPECT_EQ(kafka.AddPartitions("missing", 4).code, "UNKNOWN_TOPIC_OR_PARTITION");
}

// DescribeConfigs answers in the background: held, every question about a topic's
// settings is outstanding; released, the cluster tells what it tells.
TEST(StrictKafka, AnswersNoSettingsQuestionWhileItsAnswersAreHeld) {
  StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("log", 1).ok());
  kafka.SetRetentionBytes("log", 4096);
  kafka.SetMaxMessageBytes("log", 2048);
  auto clients = kafka.ClientsFor("a");
  kafka.HoldSettingsAnswers(true);
  EXPECT_FALSE(clients->DescribeTopic("log").has_value());
  EXPECT_FALSE(clients->RetentionBytes("log").has_value());
  EXPECT_FALSE(clients->MaxMessageBytes("log").has_value());
  kafka.HoldSettingsAnswers(false);
  ASSERT_TRUE(clients->DescribeTopic("log").has_value());
  EXPECT_EQ(clients->RetentionBytes("log"), 4096u);
  EXPECT_EQ(clients->MaxMessageBytes("log"), 2048u);
}

}  // namespace
}  // namespace oncecount::testing
