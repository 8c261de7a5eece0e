// The Kafka layer the service is written against: a group consumer for the input,
// a transactional producer for commits, plain readers for changelogs, a plain
// producer for heartbeats, and the cluster questions (partition counts, high
// watermarks) the processor and the replicator ask.
//
// It is narrow on purpose: exactly the calls oncecount makes, with the errors
// librdkafka reports sorted into the classes the service acts on (ErrorKind).
// Two implementations exist: the librdkafka one (rdkafka_clients.h), the only one
// the product uses, and a test double in tests/testing/ that enforces a real
// broker's transactional rules (fencing, generations, the last stable offset,
// retention) on simulated time, so that tests can script interleavings.
//
// Thread-safety: every client belongs to the thread that created it (the
// processor's or the replicator's); Clients' factory methods may be called from any
// thread. Message may be moved to another thread (the shard workers) and destroyed
// there.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "processor/base/ids.h"
#include "processor/base/result.h"

namespace oncecount::kafka {

// --- Errors ----------------------------------------------------------------------

// What a failed call means for the caller; the service decides by the kind only.
enum class ErrorKind : uint8_t {
  kNone = 0,
  // Transient (timeouts, coordinator moves, CONCURRENT_TRANSACTIONS): the same
  // call may succeed if repeated.
  kRetriable,
  // The open transaction must be aborted; the producer stays usable.
  kAbortable,
  // Abortable, and the consumer group has moved on without this member
  // (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID on TxnOffsetCommit,
  // KIP-447): the partitions of the transaction are owned by someone else now.
  kGroupFenced,
  // Fatal for the producer: a newer producer with the same transactional.id exists,
  // or the broker aborted our transaction after transaction.timeout.ms and bumped
  // the epoch (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH).
  kProducerFenced,
  // Fatal for the client for another reason (authorization, broken state).
  kFatal,
  // Any other failure of a call that is not transactional.
  kFailed,
};

inline constexpr std::array<base::EnumName<ErrorKind>, 7> kErrorKindNames = {{
    {ErrorKind::kNone, "none"},
    {ErrorKind::kRetriable, "retriable"},
    {ErrorKind::kAbortable, "abortable"},
    {ErrorKind::kGroupFenced, "group_fenced"},
    {ErrorKind::kProducerFenced, "producer_fenced"},
    {ErrorKind::kFatal, "fatal"},
    {ErrorKind::kFailed, "failed"},
}};

inline const char* ErrorKindName(ErrorKind kind) {
  return base::NameOf(kErrorKindNames, kind);
}

struct KafkaError {
  ErrorKind kind = ErrorKind::kNone;
  std::string code;  // the broker's or client's error name, e.g. "ILLEGAL_GENERATION"
  std::string message;

  bool ok() const { return kind == ErrorKind::kNone; }
  explicit operator bool() const { return !ok(); }  // true when there is an error
  std::string ToString() const;
  // As the rest of the code reports errors (Errc::kKafka), for callers past the
  // decision the kind drives.
  base::Error ToError() const { return base::KafkaFailure(ToString()); }
};

// --- Records ---------------------------------------------------------------------

inline constexpr base::Partition kAnyPartition{-1};
// Offsets with a meaning of their own (librdkafka's values).
inline constexpr base::Offset kOffsetBeginning{-2};
inline constexpr base::Offset kOffsetEnd{-1};

struct Header {
  std::string name;
  std::optional<std::string> value;  // nullopt: a header without a value
  friend bool operator==(const Header&, const Header&) = default;
};

struct PartitionOffset {
  base::Partition partition;
  base::Offset offset;
  friend bool operator==(const PartitionOffset&, const PartitionOffset&) = default;
};

struct TopicPartitionOffset {
  std::string topic;
  base::Partition partition;
  base::Offset offset;
};

// A record to produce. The producer copies what it needs before Produce returns.
struct OutgoingRecord {
  std::string_view topic;
  base::Partition partition = kAnyPartition;  // kAnyPartition: the default partitioner
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<Header> headers;
};

// What a consumer's poll returns: a record, or an event about a partition.
enum class MessageKind : uint8_t {
  kRecord,
  // The reader reached the partition's end as its isolation level sees it
  // (read_committed: the last stable offset); `offset` is that end.
  kPartitionEnd,
  // The position is below the partition's oldest record (retention removed
  // records not read yet); `offset` is the position that is gone.
  kOffsetOutOfRange,
  // The consumer could not read the record (or the batch) at `offset` and goes on
  // past it: a checksum mismatch (check.crcs), a batch it cannot decompress, a
  // format it does not know. `error` says which. What it held is not delivered.
  kUnreadable,
  // A consumer error worth a log line; `error` says what.
  kError,
  // The consumer cannot go on.
  kFatal,
};

// One polled message. Its bytes stay valid while it lives; it is move-only, and
// whoever holds it last releases it (the librdkafka message, or the double's copy).
class Message {
 public:
  // How an implementation keeps the bytes alive and reads headers on demand.
  struct Ops {
    void (*release)(void* handle);
    std::vector<Header> (*headers)(const void* handle);
  };

  Message() = default;
  Message(void* handle, const Ops* ops) : handle_(handle), ops_(ops) {}
  Message(Message&& other) noexcept { *this = std::move(other); }
  Message& operator=(Message&& other) noexcept {
    if (this != &other) {
      Release();
      kind = other.kind;
      topic = other.topic;
      partition = other.partition;
      offset = other.offset;
      timestamp_ms = other.timestamp_ms;
      key = other.key;
      value = other.value;
      error = std::move(other.error);
      handle_ = std::exchange(other.handle_, nullptr);
      ops_ = std::exchange(other.ops_, nullptr);
    }
    return *this;
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  ~Message() { Release(); }

  // The record's headers, copied (only dead letters need them).
  std::vector<Header> Headers() const {
    return ops_ != nullptr && handle_ != nullptr ? ops_->headers(handle_) : std::vector<Header>{};
  }

  MessageKind kind = MessageKind::kRecord;
  std::string_view topic;
  base::Partition partition;
  base::Offset offset;
  int64_t timestamp_ms = -1;  // -1: none
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::string error;  // kError, kFatal

 private:
  void Release() {
    if (ops_ != nullptr && handle_ != nullptr) ops_->release(handle_);
    handle_ = nullptr;
  }
  void* handle_ = nullptr;
  const Ops* ops_ = nullptr;
};

// --- Clients ---------------------------------------------------------------------

// The group's view of this member at one moment (member id, generation), sent with
// a transaction's offsets so that the broker can refuse a member that lost its
// partitions (KIP-447). Opaque to the service.
class GroupMetadata {
 public:
  virtual ~GroupMetadata() = default;
};

// Told about assignment changes from inside GroupConsumer::Poll. OnAssigned must
// IncrementalAssign every partition it is given (pausing those it cannot serve
// yet), so that the consumer's assignment is always the group's: a partition the
// group gave this member is revoked from it before anyone else gets it. OnRevoked
// must IncrementalUnassign them.
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  virtual void OnAssigned(const std::vector<base::Partition>& partitions) = 0;
  // `lost`: the group moved on without this member (it was paused or cut off);
  // another member may own the partitions already.
  virtual void OnRevoked(const std::vector<base::Partition>& partitions, bool lost) = 0;
};

// A member of the consumer group on one topic (the input), read_committed, with
// cooperative (incremental) rebalancing and no automatic offset commits.
class GroupConsumer {
 public:
  virtual ~GroupConsumer() = default;
  virtual KafkaError Subscribe(RebalanceListener* listener) = 0;
  // nullopt when nothing arrived within `timeout`. Rebalance callbacks run inside.
  virtual std::optional<Message> Poll(std::chrono::milliseconds timeout) = 0;
  // An offset >= 0 is the fetch position; kOffsetEnd starts at the end (for a
  // partition paused until its position is known); kOffsetBeginning at the start.
  virtual KafkaError IncrementalAssign(const std::vector<PartitionOffset>& partitions) = 0;
  virtual KafkaError IncrementalUnassign(const std::vector<base::Partition>& partitions) = 0;
  // Moves the fetch position of assigned partitions.
  virtual KafkaError Seek(const std::vector<PartitionOffset>& positions) = 0;
  virtual KafkaError Pause(const std::vector<base::Partition>& partitions) = 0;
  virtual KafkaError Resume(const std::vector<base::Partition>& partitions) = 0;
  // True when the group revoked the assignment without this member's consent.
  virtual bool AssignmentLost() = 0;
  virtual std::unique_ptr<GroupMetadata> Metadata() = 0;
  // The partition's high watermark as last seen by the fetcher (no request); a
  // logical (negative) offset when unknown.
  virtual base::Offset CachedHighWatermark(base::Partition partition) = 0;
  // The partition's oldest offset and end, asked of the broker.
  virtual KafkaError QueryWatermarks(base::Partition partition, base::Offset& low,
                                     base::Offset& high, std::chrono::milliseconds timeout) = 0;
  // The partition's end as a read_committed reader sees it (its last stable offset),
  // asked of the broker. Unlike QueryWatermarks, the whole question keeps to `timeout`:
  // librdkafka's watermark query waits for its answer up to socket.timeout.ms (60 s),
  // whatever its timeout.
  virtual KafkaError QueryEnd(base::Partition partition, base::Offset& end,
                              std::chrono::milliseconds timeout) = 0;
  // The broker that leads each partition of the topic (its id; -1: none), as the
  // cluster's metadata says within `timeout`. QueryEnd asks a partition's leader.
  virtual base::Result<std::map<base::Partition, int32_t>> PartitionLeaders(
      std::chrono::milliseconds timeout) = 0;
  // The group's committed offset of the partition (nullopt: none), asked of the broker.
  virtual KafkaError CommittedOffset(base::Partition partition,
                                     std::optional<base::Offset>& committed,
                                     std::chrono::milliseconds timeout) = 0;
  // Revokes the assignment (revocation callbacks run inside) and leaves the group,
  // except a static member told to stay (GroupConsumerSpec).
  virtual void Close() = 0;
};

// What the brokers told of one of their settings (Clients::DescribeBrokerSetting).
struct BrokerSetting {
  std::map<int32_t, std::string> told;  // by broker id
  // One line per broker that did not tell ("broker 2: why"), or why none was asked
  // ("the cluster lists no broker").
  std::vector<std::string> untold;
};

// A member of a consumer group, as the group's coordinator describes it.
struct GroupMember {
  std::string client_id;
  std::string host;
  std::string member_id;
};

// What the brokers say of a consumer group (Clients::DescribeGroup).
struct GroupDescription {
  // Whether a broker listed the group. One that is not never existed, lost its
  // offsets to their expiry with its last member, or is hidden from a principal not
  // allowed Describe on it.
  bool listed = false;
  std::vector<GroupMember> members;
};

// Where one transaction's records went in one partition. Nothing else was written
// between its first and last record when last - first + 1 == count.
struct DeliveredRecords {
  base::Offset first;
  base::Offset last;
  int64_t count = 0;
  friend bool operator==(const DeliveredRecords&, const DeliveredRecords&) = default;
};

// The producer of one transactional.id. A call that returns kProducerFenced or
// kFatal leaves the producer unusable.
class TransactionalProducer {
 public:
  virtual ~TransactionalProducer() = default;
  // Fences every older producer with the same transactional.id and aborts its open
  // transaction.
  virtual KafkaError InitTransactions(std::chrono::milliseconds timeout) = 0;
  // Learns where the partitions of `topics` (which exist: see topics.h) are before a
  // record goes there. librdkafka looks a topic new to a producer up
  // only at its next metadata scan, once a second, and the first transaction that
  // writes to it waits that long: a second in which a started instance claims nothing.
  virtual KafkaError LookUpTopics(const std::vector<std::string>& topics,
                                  std::chrono::milliseconds timeout) = 0;
  virtual KafkaError BeginTransaction() = 0;
  // Queues a record in the open transaction (waits while the local queue is full).
  virtual KafkaError Produce(const OutgoingRecord& record) = 0;
  // Adds the group's offsets of `topic` to the open transaction.
  virtual KafkaError SendOffsets(std::string_view topic,
                                 const std::vector<PartitionOffset>& offsets,
                                 const GroupMetadata& group, std::chrono::milliseconds timeout) = 0;
  // Flushes and commits; a record that could not be delivered makes it fail
  // (kAbortable at least).
  virtual KafkaError CommitTransaction(std::chrono::milliseconds timeout) = 0;
  virtual KafkaError AbortTransaction(std::chrono::milliseconds timeout) = 0;
  // Serves delivery reports.
  virtual void Poll() = 0;
  // Where the last committed transaction's records went: for each partition of
  // `topic` it wrote to, the offsets of its first and last record there and how many
  // it wrote (from the delivery reports). Empty until a transaction commits, and
  // after BeginTransaction.
  virtual std::map<base::Partition, DeliveredRecords> OffsetsOfLastCommit(
      const std::string& topic) = 0;
};

// A consumer without a group: it reads the partitions it is assigned, read_committed,
// and reports each partition's end (kPartitionEnd) every time it gets there.
class PartitionReader {
 public:
  virtual ~PartitionReader() = default;
  // Replaces the whole assignment.
  virtual KafkaError Assign(const std::vector<TopicPartitionOffset>& partitions) = 0;
  virtual KafkaError Seek(const TopicPartitionOffset& position) = 0;
  virtual std::optional<Message> Poll(std::chrono::milliseconds timeout) = 0;
  // Where a read_committed reader of the partition stops now (its last stable
  // offset), asked of the cluster rather than of the reader's last fetch. It blocks
  // for the round trip, up to `timeout`. A reader whose kPartitionEnd came at this
  // offset has every record committed so far; one that got its end earlier and no
  // record since is not being fed.
  virtual base::Result<base::Offset> StableEnd(const std::string& topic, base::Partition partition,
                                               std::chrono::milliseconds timeout) = 0;
  virtual void Close() = 0;
};

// What a PlainProducer's delivery reports have said so far.
struct Deliveries {
  uint64_t acked = 0;
  uint64_t failed = 0;
  std::string first_error;  // of the first failed delivery
  std::string last_error;   // of the latest failed delivery
};

// How a PlainProducer batches and orders its records.
struct PlainProducerSpec {
  // Requests in flight per broker. An idempotent producer that sees a later request
  // succeed takes an earlier one that failed in transport as persisted (a real broker
  // would have refused the later one as out of sequence); the embedded cluster checks
  // sequences only for transactional producers, so with several requests in flight a
  // broker going down could lose acknowledged records. With 1, a failed request is
  // resent before anything after it.
  int max_in_flight = 5;
  std::chrono::milliseconds linger{0};  // how long a record may wait for a batch
  int max_queued = 100000;              // records waiting in the local queue, at most
  // How long a record may wait for its delivery before it is reported failed
  // (message.timeout.ms); 0: librdkafka's default, 5 minutes.
  std::chrono::milliseconds delivery_timeout{0};
};

// An idempotent producer outside transactions: heartbeats, and the workloads of
// `inject` and `demo`. Idempotence keeps its own resends from adding duplicates.
class PlainProducer {
 public:
  virtual ~PlainProducer() = default;
  // Queues a copy of the record. kRetriable with code "QUEUE_FULL" while the local
  // queue is full: Poll, then produce it again.
  virtual KafkaError Produce(const OutgoingRecord& record) = 0;
  // Serves delivery reports, waiting up to `timeout` for one.
  virtual void Poll(std::chrono::milliseconds timeout) = 0;
  // Waits up to `timeout` for every outstanding delivery report; returns how many
  // records are still without one.
  virtual size_t Flush(std::chrono::milliseconds timeout) = 0;
  // Counted as Poll and Flush serve the reports.
  virtual const Deliveries& deliveries() const = 0;
};

inline constexpr std::string_view kQueueFull = "QUEUE_FULL";

// A transactional producer's identity and how it batches.
struct TransactionalProducerSpec {
  std::string transactional_id;
  std::chrono::milliseconds transaction_timeout{10000};
  // The largest batch of one partition's records (librdkafka's batch.size, framing
  // included; librdkafka's default). The broker checks max.message.bytes against a
  // whole batch, not a record: a producer writing several records to one partition in
  // a commit must keep this under the smallest limit of the topics it writes to. A
  // record larger than this still goes, alone in its batch.
  size_t max_batch_bytes = 1'000'000;
};

// A topic's settings, as DescribeConfigs tells them; a field the cluster did not
// tell is nullopt.
struct TopicSettings {
  std::optional<size_t> max_message_bytes;
  std::optional<int64_t> retention_bytes;     // -1: no bound
  std::optional<int64_t> retention_ms;        // -1: no bound
  std::optional<std::string> cleanup_policy;  // "delete", "compact", "compact,delete"
  // Record timestamps: message.timestamp.type ("CreateTime" or "LogAppendTime") and
  // how far ahead of the broker's clock at append a CreateTime timestamp may be:
  // message.timestamp.after.max.ms (Kafka 3.6+, KIP-937) and the older
  // message.timestamp.difference.max.ms, which bounds both sides. Absent: not told;
  // Kafka's "no bound" is Long.MAX_VALUE.
  std::optional<std::string> timestamp_type;
  std::optional<int64_t> timestamp_after_max_ms;
  std::optional<int64_t> timestamp_difference_max_ms;
  friend bool operator==(const TopicSettings&, const TopicSettings&) = default;
};

struct GroupConsumerSpec {
  std::string topic;
  std::string group_id;
  // Where a partition is gone when its position is: kOffsetOutOfRange instead of a
  // silent jump (auto.offset.reset=error).
  bool error_on_lost_position = true;
  // KIP-345 static membership: the member's group.instance.id (empty: a dynamic
  // member). A static member that comes back within the session timeout gets its
  // partitions back without a rebalance, and its previous life is fenced: that
  // consumer's next call to the group fails with FENCED_INSTANCE_ID (kFatal), and
  // offsets sent with its metadata are refused (kGroupFenced).
  std::string group_instance_id = {};
  // Whether Close leaves the group. A dynamic member always does; a static one sends
  // no LeaveGroup on close unless asked (librdkafka, KIP-345), so its partitions stay
  // with it, unread, until it comes back or its session times out.
  bool static_member_leaves_on_close = true;
};

// Creates the clients of one instance, all with the same connection settings and
// user properties (kafka.properties), and answers questions about the cluster.
class Clients {
 public:
  virtual ~Clients() = default;
  virtual base::Result<std::unique_ptr<GroupConsumer>> NewGroupConsumer(
      const GroupConsumerSpec& spec) = 0;
  virtual base::Result<std::unique_ptr<TransactionalProducer>> NewTransactionalProducer(
      const TransactionalProducerSpec& spec) = 0;
  // `name` says what the reader is for (it names its client id).
  virtual base::Result<std::unique_ptr<PartitionReader>> NewPartitionReader(
      const std::string& name) = 0;
  virtual base::Result<std::unique_ptr<PlainProducer>> NewPlainProducer(
      const PlainProducerSpec& spec) = 0;

  // The partition count of every topic that exists.
  virtual base::Result<std::map<std::string, int>> PartitionCounts(
      std::chrono::milliseconds timeout) = 0;
  // A setting of the brokers themselves (DescribeConfigs of every broker the cluster
  // lists, asked together, answered within `timeout`): who told its value and who did
  // not, and why (the embedded cluster implements no DescribeConfigs; a principal may
  // lack DescribeConfigs on the cluster; a broker may not answer). An error only when
  // the brokers cannot be listed.
  virtual base::Result<BrokerSetting> DescribeBrokerSetting(const std::string& name,
                                                            std::chrono::milliseconds timeout) = 0;
  // A consumer group and the members it has now, asked of the brokers within
  // `timeout`. A member whose process died without leaving stays until its session
  // times out. A group the principal may not describe is not listed. Errors: kKafka
  // for a refusal that asking again does not change (the brokers implement no
  // ListGroups/DescribeGroups, the principal may describe the cluster but not the
  // group), kUnavailable for one that may pass (a broker that did not answer, a
  // coordinator loading or moving).
  virtual base::Result<GroupDescription> DescribeGroup(const std::string& group,
                                                       std::chrono::milliseconds timeout) = 0;
  // The partition's high watermark: the offset after its last record, committed or
  // not (read_uncommitted). A read_committed reader that has reached it has seen
  // every transaction that began before the question decided.
  virtual base::Result<base::Offset> HighWatermark(const std::string& topic,
                                                   base::Partition partition,
                                                   std::chrono::milliseconds timeout) = 0;
  // The partition's oldest offset still kept (retention moves it forward).
  virtual base::Result<base::Offset> LogStart(const std::string& topic, base::Partition partition,
                                              std::chrono::milliseconds timeout) = 0;
  // The largest record the brokers accept on `topic` (its max.message.bytes), or
  // nullopt while that is not known. It never blocks: the first call asks the cluster
  // in the background, later calls return the answer once it came. A cluster that
  // cannot say (the embedded one does not implement DescribeConfigs) leaves it
  // nullopt for good.
  virtual std::optional<size_t> MaxMessageBytes(const std::string& topic) = 0;
  // How many bytes a partition of `topic` keeps (its retention.bytes), asked and
  // answered as MaxMessageBytes is; nullopt while unknown and when unbounded (-1).
  virtual std::optional<size_t> RetentionBytes(const std::string& topic) = 0;
  // Every setting of `topic` the cluster tells, asked as MaxMessageBytes is: nullopt
  // while the answer is outstanding; a cluster that cannot say answers with every
  // field nullopt. Asked again every few minutes, so that an answer may change while
  // the service runs (the last one stands while the next is outstanding).
  virtual std::optional<TopicSettings> DescribeTopic(const std::string& topic) = 0;

  // Whether a read of this cluster found an offset that holds nothing a
  // read_committed reader sees: a transaction's marker (or an aborted record), which
  // every Kafka broker writes at the end of a transaction in each of its partitions.
  // The embedded cluster writes no markers and shows aborted records, so its logs
  // never skip an offset. Until a read finds one, false: a caller that must tell a
  // marker from another writer's record cannot (see processor/service/owned_run.h).
  bool WritesTransactionMarkers() const {
    return writes_transaction_markers_.load(std::memory_order_relaxed);
  }
  // Any thread: a reader found a skipped offset between two records the partition
  // still keeps (not a jump over records retention deleted during the read).
  void NoteTransactionMarker() {
    writes_transaction_markers_.store(true, std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> writes_transaction_markers_{false};
};

// A record the broker refused as larger than the topic (max.message.bytes) or the
// producer (message.max.bytes) allows; the transaction must be aborted.
bool IsRecordTooLarge(const KafkaError& error);

}  // namespace oncecount::kafka
