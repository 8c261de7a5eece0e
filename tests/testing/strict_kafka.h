// StrictKafka: an in-memory Kafka cluster for tests that enforces what a real broker
// (Kafka 2.5+, KIP-447) enforces on transactional, read_committed, cooperative
// consumer-group clients, on simulated time. Tests hand ClientsFor(instance) to the
// code under test in place of the librdkafka clients and script the interleavings a
// real cluster makes hard to reproduce: a producer fenced by its successor, a
// transaction aborted by the coordinator after its timeout, a member expelled after
// its session timeout whose offsets are then refused, a read_committed reader held
// back by the last stable offset, records lost to retention, a process killed in the
// middle of a transaction.
//
// What it models: partitions as logs of data records and transaction markers; the
// high watermark, the last stable offset and the log start; per transactional.id a
// coordinator (epoch, the open transaction); per group a membership with
// generations, session timeouts and a deterministic balanced-sticky assignment
// handed over in the two cooperative phases; committed offsets stored only when the
// transaction carrying them commits. Nothing in it waits for real time: Advance
// moves the clock and runs the timers (transaction and session timeouts).
//
// Where the clients are stricter or more precise than the interface says:
// - A group consumer may IncrementalAssign only partitions the group gave its member
//   (else kFailed "NOT_OWNED"), and IncrementalUnassign only assigned ones. Offsets:
//   >= 0 the position, kOffsetBeginning the log start, kOffsetEnd the last stable
//   offset, any other negative the group's committed offset (none: one
//   kOffsetOutOfRange message carrying that negative offset, as for a lost position,
//   unless the spec asks for no error, then the log start). The committed offset is
//   read at the first Poll that needs it, and not while a transaction holds offsets
//   of that partition not committed yet (KIP-447 require_stable): the partition
//   delivers nothing until that transaction ends.
// - A revocation completes when OnRevoked returns: the partitions leave the
//   consumer's assignment then, unassigned or not, and go to their new owner.
// - Group liveness is the real client's: a background thread heartbeats for every
//   live process that is not frozen (Freeze: a GC pause, a stopped VM), so a member
//   leaves after a session timeout without heartbeats (crashed or frozen) or once its
//   application has not called its consumer for max.poll.interval.ms; either shows
//   at the next Advance.
// - Static membership (KIP-345, GroupConsumerSpec::group_instance_id): a consumer
//   that joins with the group.instance.id of a member still in the group takes its
//   place under a new member id, with its partitions and no rebalance (the
//   generation stays). The member it replaced is fenced: its consumer's next Poll
//   returns one kFatal "FENCED_INSTANCE_ID" message and it never rejoins; offsets
//   sent with its metadata fail kGroupFenced FENCED_INSTANCE_ID. A static member
//   closed without leaving (static_member_leaves_on_close false) stops
//   heartbeating and keeps its partitions until it returns or its session times out.
// - SendOffsets drops negative offsets, and with none left does nothing (no check of
//   the group's metadata either), as librdkafka's send_offsets_to_transaction does.
// - A transaction's timeout runs from its first record or offsets, not from
//   BeginTransaction, which (as in librdkafka) the coordinator never hears of: an
//   empty transaction never times out and commits trivially.
// - A PartitionReader reports its partition's end again after a Seek.
// - The broker checks max.message.bytes against each record batch a transactional
//   producer sends: its records of one partition in one transaction, packed into
//   batches of up to the producer's max_batch_bytes (TransactionalProducerSpec).
// - Coordinators abort timed-out transactions only at their periodic check
//   (set_transaction_abort_interval), as a real one does.
//
// Its clients speak the interface's types (base::Partition, base::Offset); the
// cluster's model inside and the test-facing methods below number partitions and
// offsets with plain integers, as Kafka's protocol does, so that a test can write a
// log position as a number.
//
// Test code only. Thread-safety: every method of StrictKafka and of every client it
// creates may be called from any thread (one mutex guards the whole cluster). The
// rebalance listener runs on the thread that polls, without the mutex held, so it
// may call back into its consumer. Messages own a copy of their bytes and do not
// refer to the cluster: they may be destroyed on any thread, after everything else.
// Clients keep the cluster's state (and the clock) alive, so they may outlive the
// StrictKafka too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/kafka/clients.h"

namespace oncecount::testing {

class StrictCluster;  // the state and rules; defined in strict_kafka.cc

class StrictKafka {
 public:
  // The calls errors can be injected into.
  enum class Call : uint8_t {
    kInitTransactions,
    kBeginTransaction,
    kProduce,  // TransactionalProducer::Produce
    kSendOffsets,
    kCommitTransaction,
    kAbortTransaction,
    kHighWatermark,  // Clients::HighWatermark
    kReaderAssign,
    kReaderStableEnd,     // PartitionReader::StableEnd
    kNewPartitionReader,  // Clients::NewPartitionReader
    // PartitionReader::Poll: the error comes as a message of its kind (kFatal: a
    // kFatal message, after which the reader delivers nothing, as librdkafka's handle).
    kReaderPoll,
    kPartitionCounts,
    kSeek,  // GroupConsumer::Seek and PartitionReader::Seek
    // PlainProducer::Produce (kept apart so heartbeats do not eat kProduce); after a
    // kFatal the producer refuses everything, as librdkafka's idempotent producer.
    kPlainProduce,
    // GroupConsumer::Poll: the error comes as a kError message, and the consumer goes on
    // (librdkafka reports an error it retries itself, once), its text as the client
    // makes it ("<NAME>: <what librdkafka says>").
    kConsumerPoll,
    kQueryEnd,       // GroupConsumer::QueryEnd
    kDescribeGroup,  // Clients::DescribeGroup
  };

  // One entry of a partition's log as the broker stores it.
  struct StoredEntry {
    enum State : uint8_t {
      kCommitted,  // a committed or non-transactional record: read_committed delivers it
      kAborted,
      kOpen,  // a record of a transaction still open
      // A control entry (value "COMMIT" or "ABORT"): it occupies an offset and is
      // never delivered.
      kMarker,
    };
    int64_t offset = 0;
    State state = kCommitted;
    std::optional<std::string> key;
    std::optional<std::string> value;
    int64_t timestamp_ms = -1;
    std::string transactional_id;  // empty: not transactional
    std::vector<kafka::Header> headers;
  };

  static constexpr int64_t kDefaultStartWallMs = 1'700'000'000'000;
  static constexpr size_t kKafkaDefaultMaxMessageBytes = 1'048'588;

  explicit StrictKafka(int64_t start_wall_ms = kDefaultStartWallMs);
  ~StrictKafka();
  StrictKafka(const StrictKafka&) = delete;
  StrictKafka& operator=(const StrictKafka&) = delete;

  // --- Time --------------------------------------------------------------------
  // SteadyMs: ms advanced since creation; WallMs: start_wall_ms + that; Sleep: Advance.
  base::Clock& clock();
  // Moves time, then aborts the transactions open longer than their timeout and
  // expels the members whose session timed out or that stopped polling.
  void Advance(std::chrono::milliseconds duration);
  // The hosts' wall clocks step (NTP, a VM resumed), forward or back; steady clocks,
  // and so timers and timeouts, do not.
  void StepWallClock(std::chrono::milliseconds step);
  void set_session_timeout(std::chrono::milliseconds timeout);     // default 10 s
  void set_max_poll_interval(std::chrono::milliseconds interval);  // default 300 s
  // How often the coordinators look for transactions past their timeout (the
  // brokers' transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s by
  // default): a transaction is aborted, and its producer fenced, at the first check
  // after its timeout, and until then it may still commit.
  void set_transaction_abort_interval(std::chrono::milliseconds interval);
  // Whether the cluster's one broker (id 1) tells its settings (DescribeBrokerSetting
  // of transaction.abort.timed.out.transaction.cleanup.interval.ms: the interval
  // above); told until set otherwise, as a broker does to a principal allowed
  // DescribeConfigs on the cluster.
  void set_broker_settings_described(bool described);

  // --- Topics ------------------------------------------------------------------
  kafka::KafkaError CreateTopic(const std::string& name, int partitions);
  // Deletes the topic and its records, as kafka-topics.sh --delete does (the groups'
  // committed offsets of it stay, as a broker keeps them until they expire); the
  // groups subscribed to it rebalance, their members losing its partitions.
  kafka::KafkaError DeleteTopic(const std::string& name);
  // Grows the topic to `partitions`, as kafka-topics.sh --alter --partitions does
  // (never fewer: INVALID_PARTITIONS); the new ones keep the topic's retention, and
  // the groups subscribed to it rebalance, as their consumers' next metadata refresh
  // makes them.
  kafka::KafkaError AddPartitions(const std::string& topic, int partitions);
  // The topic's max.message.bytes (Kafka's default, kKafkaDefaultMaxMessageBytes,
  // until set): a record whose batch would be larger is refused with
  // MSG_SIZE_TOO_LARGE (the transaction must abort). `described`: whether
  // Clients::MaxMessageBytes tells it (a cluster whose configs cannot be read).
  void SetMaxMessageBytes(const std::string& topic, size_t bytes, bool described = true);
  // Retention by size: each partition of the topic keeps its newest records up to
  // `bytes` (record by record, as the embedded cluster does; its newest record
  // always). `described`: whether Clients::RetentionBytes tells it.
  void SetRetentionBytes(const std::string& topic, size_t bytes, bool described = true);
  // Retention by time (retention.ms; -1: none, as until set): from now on, as the
  // simulated wall clock moves, each partition of the topic loses every record whose
  // timestamp is more than `ms` old, record by record up to the high watermark (an
  // idle partition loses them all). `described`: whether DescribeTopic tells it
  // (untold until set).
  void SetRetentionMs(const std::string& topic, int64_t ms, bool described = true);
  // What DescribeTopic tells of the topic's cleanup.policy (untold until set). The
  // double does not compact.
  void SetCleanupPolicy(const std::string& topic, std::string policy);
  // message.timestamp.type ("CreateTime" or "LogAppendTime") and
  // message.timestamp.after.max.ms (nullopt: no bound) of a topic, applied to
  // ProduceForTest's records; `described`: whether DescribeTopic tells them (untold
  // until set).
  void SetTimestampRules(const std::string& topic, std::string type,
                         std::optional<int64_t> after_max_ms, bool described = true);
  // The cluster's ACLs deny every instance Describe on `topic` (until called again with
  // `denied` false), as revoking its Read (which implies Describe) does: a list of every
  // topic leaves it out, as Kafka lists only the topics a principal may describe, and
  // the groups subscribed to it rebalance, their members losing its partitions.
  void DenyDescribe(const std::string& topic, bool denied = true);
  // The partition has no leader (every broker holding it down): group consumers fetch
  // nothing from it, without an error, their cached high watermark stops, and
  // questions about its offsets fail at once with NOT_LEADER_FOR_PARTITION (as
  // librdkafka's do before its metadata shows no leader; _UNKNOWN_PARTITION after),
  // until called again with `leaderless` false. A plain producer's record for it is
  // never appended, and its delivery is reported failed ("Local: Message timed out")
  // once its delivery timeout passed (PlainProducerSpec::delivery_timeout, librdkafka's
  // 5 minutes by default), even when the leader is back before (librdkafka would
  // deliver it then).
  void MakeLeaderless(const std::string& topic, int32_t partition, bool leaderless = true);
  // Which broker leads the partition (GroupConsumer::PartitionLeaders); broker 1 leads
  // every partition until told otherwise.
  void SetLeader(const std::string& topic, int32_t partition, int32_t broker);
  // The broker answers GroupConsumer::QueryEnd about the partitions it leads after
  // `delay` (the clock moves on that much); a question whose timeout is not longer
  // fails _TIMED_OUT once its timeout passed. 0: at once (the default).
  void SetAnswerDelay(int32_t broker, std::chrono::milliseconds delay);
  // A real cluster answers DescribeConfigs in the background: the first question is
  // answered nullopt (outstanding), later ones once the answer came. While held, every
  // question about a topic's settings (DescribeTopic, MaxMessageBytes, RetentionBytes)
  // is outstanding; released, the cluster tells what it tells.
  void HoldSettingsAnswers(bool held);
  // The record at `offset` reads as damaged from then on: consumers report it
  // (kUnreadable) and go past it, as librdkafka does with a checksum mismatch under
  // check.crcs; `stuck`: they report it at every poll and never go past it, as
  // librdkafka does with a batch it cannot decompress.
  kafka::KafkaError MakeUnreadable(const std::string& topic, int32_t partition, int64_t offset,
                                   bool stuck = false);
  // Retention: moves the log start to `offset` (at most the high watermark).
  kafka::KafkaError DeleteRecordsBefore(const std::string& topic, int32_t partition,
                                        int64_t offset);

  // --- Instances ---------------------------------------------------------------
  // The clients of one simulated process. Several calls with the same name are the
  // same process until it crashes; after Crash, new calls are its restart.
  std::unique_ptr<kafka::Clients> ClientsFor(std::string instance);
  // SIGKILL: the instance's clients stop acting (their calls fail with kFatal
  // "crashed" and change nothing), but the broker does not know yet: its members stay
  // until their session times out, its transactions until their timeout.
  void Crash(const std::string& instance);
  // A process that stops running (its heartbeats too) and later goes on as if
  // nothing happened: the zombie of the fencing literature.
  void Freeze(const std::string& instance);
  void Thaw(const std::string& instance);
  // Produce in flight: from now on the records `instance`'s transactional producers
  // produce wait in the producer's queue instead of reaching their logs at once (the
  // coordinator learns their partitions at once, AddPartitionsToTxn, so their
  // transaction's timeout runs). They land at ReleaseProduce, which also ends the
  // hold, or when their producer commits (the commit flushes); an abort or a crash
  // drops them, and a record whose producer was fenced meanwhile never lands. A
  // frozen instance with records held is librdkafka's queue paused with the process.
  void HoldProduce(const std::string& instance);
  void ReleaseProduce(const std::string& instance);
  // Fetches that stop being answered: from now on `instance`'s PartitionReaders
  // deliver nothing of `topic` (no record, no end) while the cluster still answers
  // its other requests (StableEnd among them), as when a client's fetcher is stuck
  // on a partition. ResumeReading feeds them again from where they were.
  void StallReading(const std::string& instance, const std::string& topic);
  void ResumeReading(const std::string& instance, const std::string& topic);

  // --- Faults ------------------------------------------------------------------
  // The next `times` `call`s (of `instance`'s clients only, when not empty) return
  // `error` and change nothing, except: kAbortable or kGroupFenced on kProduce,
  // kSendOffsets or kCommitTransaction leave the open transaction abortable only, and
  // kProducerFenced or kFatal leave the producer unusable (as the interface says).
  void InjectError(Call call, kafka::KafkaError error, int times = 1, std::string instance = "");
  // SIGKILL at a chosen point: `instance`'s next `call` (after `skip` of them went
  // through) crashes the instance, as Crash would, before the call has any effect.
  void CrashAt(Call call, std::string instance, int skip = 0);
  // When a member the group dropped (session timeout) learns it. By default at its
  // next Poll, which serves the loss; until then AssignmentLost() says nothing, as
  // when the application commits before librdkafka's background thread has heard.
  // After this call `instance` learns it only during its next `call` instead: from
  // then on its consumer's AssignmentLost() is true, and the Poll after it serves the
  // loss. That is the other interleaving of a real client: the session-timeout check
  // fires in the middle of a transaction, and the application runs on (aborts,
  // restores) for a moment knowing its assignment is lost.
  void LearnDropAt(Call call, std::string instance);
  // Runs `observe` once, at `instance`'s next `call`, before the call has any effect:
  // a look at the instance (its published views, say) in the middle of what it does,
  // or a change to the cluster at that moment (the observer may call the double).
  void ObserveAt(Call call, std::string instance, std::function<void()> observe);

  // --- Introspection -----------------------------------------------------------
  // The retained log (from the log start), markers and open records included.
  std::vector<StoredEntry> Entries(const std::string& topic, int32_t partition) const;
  // The values a read_committed reader would get from the log start, ignoring where
  // the last stable offset holds it now (null values read as "").
  std::vector<std::string> CommittedValues(const std::string& topic, int32_t partition) const;
  std::optional<int64_t> CommittedOffset(const std::string& group, const std::string& topic,
                                         int32_t partition) const;
  // -1 for a partition that does not exist.
  int64_t HighWatermark(const std::string& topic, int32_t partition) const;
  int64_t LastStableOffset(const std::string& topic, int32_t partition) const;
  int64_t LogStart(const std::string& topic, int32_t partition) const;
  int32_t Generation(const std::string& group) const;  // 0 for a group never joined
  // Partition → instance of the member the broker gives it to now (including a
  // partition whose revocation or assignment the member has not acted on yet).
  std::map<int32_t, std::string> Owners(const std::string& group) const;
  std::vector<std::string> Members(const std::string& group) const;  // live member ids
  // A non-transactional record (kafka::kAnyPartition: the producers' partitioner);
  // timestamp_ms -1: the clock's wall time. Under the topic's timestamp rules
  // (SetTimestampRules) as a broker applies them: LogAppendTime replaces the
  // timestamp with the wall time, and a CreateTime timestamp more than after_max_ms
  // ahead of it is refused (INVALID_TIMESTAMP, nothing appended).
  kafka::KafkaError ProduceForTest(const std::string& topic, int32_t partition,
                                   std::optional<std::string> key, std::optional<std::string> value,
                                   std::vector<kafka::Header> headers = {},
                                   int64_t timestamp_ms = -1);

 private:
  std::shared_ptr<StrictCluster> cluster_;
};

}  // namespace oncecount::testing
