#include "tests/testing/strict_kafka.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>

namespace oncecount::testing {

using kafka::ErrorKind;
using kafka::KafkaError;
using kafka::Message;
using kafka::MessageKind;
using Call = StrictKafka::Call;
using EntryState = StrictKafka::StoredEntry::State;
using TopicPartition = std::pair<std::string, int32_t>;

namespace {

KafkaError Fail(ErrorKind kind, std::string code, std::string message) {
  return KafkaError{kind, std::move(code), std::move(message)};
}

KafkaError Crashed() {
  return Fail(ErrorKind::kFatal, "crashed", "the instance crashed");
}

KafkaError InvalidTxnState(const std::string& why) {
  return Fail(ErrorKind::kFatal, "INVALID_TXN_STATE", why);
}

KafkaError UnknownPartition(ErrorKind kind, std::string_view topic, int32_t partition) {
  return Fail(kind, "UNKNOWN_TOPIC_OR_PART",
              "no partition " + std::to_string(partition) + " of topic " + std::string(topic));
}

constexpr size_t kKafkaDefaultMaxMessageBytes = StrictKafka::kKafkaDefaultMaxMessageBytes;

// The size of a record batch holding this one record, as the broker measures it
// against max.message.bytes: the batch header (61 bytes), the record's own framing
// (at most 21 bytes of varints and attributes), its key, value and headers.
size_t RecordBatchBytes(std::optional<std::string_view> key, std::optional<std::string_view> value,
                        const std::vector<kafka::Header>& headers) {
  size_t bytes = 61 + 21 + key.value_or("").size() + value.value_or("").size();
  for (const kafka::Header& h : headers) bytes += 10 + h.name.size() + h.value.value_or("").size();
  return bytes;
}

size_t RecordBatchBytes(const kafka::OutgoingRecord& record) {
  return RecordBatchBytes(record.key, record.value, record.headers);
}

std::optional<std::string> Copy(std::optional<std::string_view> bytes) {
  if (!bytes) return std::nullopt;
  return std::string(*bytes);
}

// FNV-1a: the double's partitioner only has to be deterministic, not librdkafka's.
int32_t PartitionOfKey(std::string_view key, int32_t partitions) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : key) hash = (hash ^ c) * 16777619u;
  return static_cast<int32_t>(hash % static_cast<uint32_t>(partitions));
}

// Visits `map` in key order starting after `after` and wrapping around, until
// `visit` returns true: round-robin delivery that is the same on every run.
template <class Map, class Visit>
bool VisitRoundRobin(Map& map, const std::optional<typename Map::key_type>& after, Visit visit) {
  const auto start = after ? map.upper_bound(*after) : map.begin();
  for (auto it = start; it != map.end(); ++it) {
    if (visit(it->first, it->second)) return true;
  }
  for (auto it = map.begin(); it != start; ++it) {
    if (visit(it->first, it->second)) return true;
  }
  return false;
}

// The cluster's model numbers partitions as Kafka's protocol does; the clients'
// interface speaks base::Partition.
template <class Container>
std::vector<base::Partition> Typed(const Container& partitions) {
  std::vector<base::Partition> typed;
  for (int32_t p : partitions) typed.emplace_back(p);
  return typed;
}

template <class Map>
std::vector<base::Partition> Keys(const Map& map) {
  std::vector<base::Partition> keys;
  for (const auto& [key, value] : map) keys.emplace_back(key);
  return keys;
}

}  // namespace

// --- Time -------------------------------------------------------------------------

class StrictKafkaClock final : public base::Clock {
 public:
  StrictKafkaClock(StrictCluster& cluster, int64_t start_wall_ms)
      : cluster_(cluster), start_wall_ms_(start_wall_ms) {}
  int64_t WallMs() const override { return start_wall_ms_ + wall_step_ms_.load() + SteadyMs(); }
  int64_t SteadyMs() const override { return elapsed_ms_.load(); }
  void StepWall(std::chrono::milliseconds step) { wall_step_ms_ += step.count(); }
  // Code under test that sleeps moves the whole simulated world, timers included.
  void Sleep(std::chrono::milliseconds duration) override;
  void Move(std::chrono::milliseconds duration) { elapsed_ms_ += duration.count(); }

 private:
  StrictCluster& cluster_;
  const int64_t start_wall_ms_;
  // Atomic so that reading the time never needs the cluster's mutex (listeners and
  // the code under test read it while the mutex may be held elsewhere).
  std::atomic<int64_t> elapsed_ms_{0};
  std::atomic<int64_t> wall_step_ms_{0};  // StepWallClock
};

// --- The cluster's state and rules -----------------------------------------------

class StrictCluster {
 public:
  struct Entry {
    int64_t offset = 0;
    EntryState state = EntryState::kCommitted;
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::vector<kafka::Header> headers;
    int64_t timestamp_ms = -1;
    std::string transactional_id;
    // MakeUnreadable: consumers report it, and go past it unless it is stuck.
    bool unreadable = false;
    bool stuck = false;
  };

  static size_t EntryBytes(const Entry& e) { return RecordBatchBytes(e.key, e.value, e.headers); }

  struct Partition {
    int64_t log_start = 0;
    std::deque<Entry> entries;   // entries[i].offset == log_start + i
    size_t bytes = 0;            // of the entries, as RecordBatchBytes counts them
    size_t retention_bytes = 0;  // 0: no bound
    // The open transactions that wrote here → the offset of their first record here:
    // what pins the last stable offset.
    std::map<std::string, int64_t> open_transactions;

    int64_t HighWatermark() const { return log_start + static_cast<int64_t>(entries.size()); }
    int64_t LastStableOffset() const {
      if (open_transactions.empty()) return HighWatermark();
      int64_t first = HighWatermark();
      for (const auto& [id, offset] : open_transactions) first = std::min(first, offset);
      return std::max(first, log_start);  // as the broker does once retention passed it
    }
    Entry& At(int64_t offset) { return entries[static_cast<size_t>(offset - log_start)]; }
    const Entry& At(int64_t offset) const {
      return entries[static_cast<size_t>(offset - log_start)];
    }
    // Deletes the oldest record (retention, DeleteRecords): the log start moves on.
    void DropOldest() {
      bytes -= EntryBytes(entries.front());
      entries.pop_front();
      ++log_start;
    }
  };

  // A transaction as its coordinator knows it: it exists from the first record or
  // offsets added (BeginTransaction is local to the client, as in librdkafka).
  struct Transaction {
    int64_t started_ms = 0;
    std::chrono::milliseconds timeout{0};
    std::set<TopicPartition> partitions;  // AddPartitionsToTxn: landed or in flight
    std::map<std::string, std::map<TopicPartition, int64_t>> offsets;  // group → offsets
  };

  struct Coordinator {
    int32_t epoch = -1;
    std::optional<Transaction> ongoing;
  };

  // A transactional record still in its producer's queue (HoldProduce).
  struct InFlight {
    std::string transactional_id;
    int32_t epoch = -1;
    TopicPartition where;
    Entry entry;
  };

  // A member as the group coordinator sees it. `owned` is the broker's assignment;
  // the other sets say which part of it the member has not acted on yet.
  struct Member {
    std::string instance;
    int incarnation = 0;
    std::string group_instance_id;  // KIP-345; empty: a dynamic member
    // A static member whose consumer closed without leaving: no heartbeats any more,
    // its partitions wait for its return or its session timeout.
    bool closed = false;
    int64_t last_heard_ms = 0;   // the last heartbeat (the client's background thread)
    int64_t last_polled_ms = 0;  // the last call of the application
    std::set<int32_t> owned;
    std::set<int32_t> assign_pending;  // owned; OnAssigned not delivered yet
    std::set<int32_t> revoke_pending;  // owned, moving elsewhere; OnRevoked not delivered yet
    // OnRevoked told; still owned until the application unassigns them all
    // (IncrementalUnassign): only then does the member rejoin without them.
    std::set<int32_t> revoke_told;
    // OnAssigned told; not IncrementalAssign'ed yet. As in librdkafka, a member whose
    // application has not made the call of the last rebalance event is served no
    // other, so every rebalance that needs it waits.
    std::set<int32_t> assign_awaited;
    // Since when one of those calls has been awaited (-1: none is). Past the rebalance
    // timeout (max.poll.interval.ms) the coordinator expels the member.
    int64_t stalled_since_ms = -1;

    size_t Kept() const { return owned.size() - revoke_pending.size() - revoke_told.size(); }
    bool Revoking(int32_t p) const { return revoke_pending.count(p) + revoke_told.count(p) > 0; }
  };

  struct Group {
    std::string topic;
    int32_t generation = 0;
    std::map<std::string, Member> members;  // by member id
    std::map<TopicPartition, int64_t> committed;
    // Member ids a static member's return replaced: their calls fail with
    // FENCED_INSTANCE_ID.
    std::set<std::string> fenced;

    Member* StaticMember(const std::string& group_instance_id) {
      for (auto& [id, member] : members) {
        if (member.group_instance_id == group_instance_id) return &member;
      }
      return nullptr;
    }
  };

  struct Injection {
    Call call;
    KafkaError error;
    int remaining = 0;
    std::string instance;
    bool crash = false;  // the call crashes its instance instead
    int skip = 0;        // matching calls to let through first
  };

  explicit StrictCluster(int64_t start_wall_ms) : clock(*this, start_wall_ms) {}

  StrictKafkaClock clock;  // not guarded: its reading is atomic
  // Everything below the mutex is guarded by it; the helpers expect it held.
  // Recursive so that an observer (ObserveAt) may call the double from inside a call.
  std::recursive_mutex mu;
  std::chrono::milliseconds session_timeout{10'000};
  std::chrono::milliseconds max_poll_interval{300'000};
  std::chrono::milliseconds abort_interval{10'000};  // Kafka's default
  bool broker_settings_described = true;
  int64_t next_abort_check_ms = 10'000;
  std::set<std::string> holding;                           // HoldProduce
  std::map<std::string, std::vector<InFlight>> in_flight;  // by instance
  std::set<std::string> frozen;                            // instances whose threads do not run
  std::set<std::pair<std::string, std::string>> stalled;   // (instance, topic): StallReading
  std::map<std::string, std::vector<Partition>> topics;
  struct SizeLimit {
    size_t bytes = 0;
    bool described = true;  // DescribeConfigs tells it
  };
  std::map<std::string, SizeLimit> max_message_bytes;    // by topic; absent: Kafka's default
  std::map<std::string, bool> retention_described;       // by topic: DescribeConfigs tells it
  bool settings_held = false;                            // every DescribeConfigs answer outstanding
  std::set<std::pair<std::string, int32_t>> leaderless;  // MakeLeaderless
  std::map<std::pair<std::string, int32_t>, int32_t> led_by;  // SetLeader; absent: broker 1
  std::map<int32_t, int64_t> answer_delay_ms;                 // SetAnswerDelay, by broker

  // The broker that leads the partition; -1: none.
  int32_t LeaderOf(const std::string& topic, int32_t partition) const {
    if (leaderless.contains({topic, partition})) return -1;
    const auto it = led_by.find({topic, partition});
    return it != led_by.end() ? it->second : 1;
  }
  std::set<std::string> describe_denied;  // topics no instance may describe
  struct TimeRetention {
    int64_t ms = -1;        // -1: none
    bool described = true;  // DescribeConfigs tells it
  };
  std::map<std::string, TimeRetention> retention_ms;  // by topic; absent: not told
  std::map<std::string, std::string> cleanup_policy;  // by topic; absent: not told
  struct TimestampRules {
    std::string type = "CreateTime";
    std::optional<int64_t> after_max_ms;  // nullopt: no bound
    bool described = true;                // DescribeConfigs tells them
  };
  std::map<std::string, TimestampRules> timestamp_rules;  // by topic; absent: CreateTime, untold
  std::map<std::string, Group> groups;
  std::map<std::string, Coordinator> coordinators;  // by transactional.id
  std::map<std::string, int> incarnations;          // instance → restarts so far
  std::vector<Injection> injections;
  // LearnDropAt: instance → the call during which it learns its member was dropped;
  // and the instances that learnt it that way and have not been served the loss.
  std::map<std::string, Call> drop_learned_at;
  struct Observer {
    Call call;
    std::string instance;
    std::function<void()> observe;
  };
  std::vector<Observer> observers;  // ObserveAt
  std::set<std::string> drop_learned;
  uint64_t members_joined = 0;

  int64_t NowMs() const { return clock.SteadyMs(); }

  Partition* FindPartition(std::string_view topic, int32_t partition) {
    const auto it = topics.find(std::string(topic));
    if (it == topics.end() || partition < 0) return nullptr;
    if (static_cast<size_t>(partition) >= it->second.size()) return nullptr;
    return &it->second[static_cast<size_t>(partition)];
  }

  bool IsCrashed(const std::string& instance, int incarnation) const {
    const auto it = incarnations.find(instance);
    return it != incarnations.end() && it->second != incarnation;
  }

  std::optional<KafkaError> TakeInjection(Call call, const std::string& instance);
  size_t MaxMessageBytes(std::string_view topic) const {
    const auto it = max_message_bytes.find(std::string(topic));
    return it == max_message_bytes.end() ? kKafkaDefaultMaxMessageBytes : it->second.bytes;
  }
  int64_t Append(Partition& partition, Entry entry);
  // `offset`, when given, is set to the record's offset.
  KafkaError AppendRecord(const kafka::OutgoingRecord& record, const std::string& transactional_id,
                          TopicPartition* where, int64_t* offset = nullptr);
  // Where the record goes (the producers' partitioner for kAnyPartition).
  KafkaError Resolve(const kafka::OutgoingRecord& record, TopicPartition& where);
  // Appends a transactional record to the open transaction's partition.
  void AppendOpen(const TopicPartition& where, Entry entry);
  // Lands `instance`'s records in flight of `transactional_id` (all of them when
  // empty): those whose epoch is still the coordinator's reach their logs, the
  // others are refused (a fenced producer's) and dropped.
  void Land(const std::string& instance, const std::string& transactional_id = "");
  Transaction& Ongoing(const std::string& transactional_id, std::chrono::milliseconds timeout);
  bool HasPendingOffsets(const std::string& group, const TopicPartition& where) const;
  void EndTransaction(const std::string& transactional_id, bool commit);
  std::string Join(Group& group, const std::string& instance, int incarnation,
                   const std::string& group_instance_id);
  std::string Rejoin(Group& group, const std::string& instance, int incarnation,
                     const std::string& group_instance_id);
  // A new member, heard from now; no rebalance yet.
  std::string AddMember(Group& group, const std::string& instance, int incarnation,
                        const std::string& group_instance_id);
  void BumpAndRebalance(Group& group);
  void Advance(std::chrono::milliseconds duration);  // takes the mutex
  void ApplyTimeRetention();

 private:
  void Settle(Partition& partition, const std::string& transactional_id, bool commit);
  void Rebalance(Group& group);
  std::map<std::string, size_t> Quotas(const Group& group, int32_t partitions) const;
  void TrimToQuota(Member& member, size_t quota);
  void Offer(Group& group, const std::map<std::string, size_t>& quotas, int32_t partition);
  void ExpireTransactions();
  void Heartbeat();
  void ExpireSessions();
};

void StrictKafkaClock::Sleep(std::chrono::milliseconds duration) {
  cluster_.Advance(duration);
}

std::optional<KafkaError> StrictCluster::TakeInjection(Call call, const std::string& instance) {
  for (auto it = observers.begin(); it != observers.end(); ++it) {
    if (it->call == call && it->instance == instance) {
      std::function<void()> observe = std::move(it->observe);
      observers.erase(it);
      observe();
      break;
    }
  }
  if (const auto it = drop_learned_at.find(instance);
      it != drop_learned_at.end() && it->second == call) {
    drop_learned_at.erase(it);
    drop_learned.insert(instance);
  }
  for (auto it = injections.begin(); it != injections.end(); ++it) {
    if (it->call != call || (!it->instance.empty() && it->instance != instance)) continue;
    if (it->skip > 0) {
      --it->skip;
      return std::nullopt;
    }
    KafkaError error = it->error;
    if (it->crash) {
      ++incarnations[instance];
      in_flight.erase(instance);  // the queue dies with the process
    }
    if (--it->remaining <= 0) injections.erase(it);
    return error;
  }
  return std::nullopt;
}

int64_t StrictCluster::Append(Partition& partition, Entry entry) {
  entry.offset = partition.HighWatermark();
  if (entry.timestamp_ms < 0) entry.timestamp_ms = clock.WallMs();
  partition.bytes += EntryBytes(entry);
  partition.entries.push_back(std::move(entry));
  const int64_t offset = partition.entries.back().offset;
  // Retention by size, record by record as the embedded cluster applies it (a broker
  // deletes whole segments, keeping at least retention.bytes: never less than this).
  if (partition.retention_bytes > 0) {
    while (partition.bytes > partition.retention_bytes && partition.entries.size() > 1) {
      partition.DropOldest();
    }
  }
  return offset;
}

KafkaError StrictCluster::Resolve(const kafka::OutgoingRecord& record, TopicPartition& where) {
  const auto topic = topics.find(std::string(record.topic));
  if (topic == topics.end()) return UnknownPartition(ErrorKind::kFailed, record.topic, 0);
  int32_t partition = record.partition.value();
  if (partition == kafka::kAnyPartition.value()) {
    const auto count = static_cast<int32_t>(topic->second.size());
    partition = record.key ? PartitionOfKey(*record.key, count) : 0;
  }
  if (FindPartition(record.topic, partition) == nullptr) {
    return UnknownPartition(ErrorKind::kFailed, record.topic, partition);
  }
  where = {std::string(record.topic), partition};
  return {};
}

void StrictCluster::AppendOpen(const TopicPartition& where, Entry entry) {
  Partition* log = FindPartition(where.first, where.second);
  const std::string transactional_id = entry.transactional_id;
  const int64_t appended = Append(*log, std::move(entry));
  log->open_transactions.emplace(transactional_id, appended);
}

void StrictCluster::Land(const std::string& instance, const std::string& transactional_id) {
  const auto queue = in_flight.find(instance);
  if (queue == in_flight.end()) return;
  std::vector<InFlight> kept;
  for (InFlight& record : queue->second) {
    if (!transactional_id.empty() && record.transactional_id != transactional_id) {
      kept.push_back(std::move(record));
      continue;
    }
    const Coordinator& coordinator = coordinators[record.transactional_id];
    if (coordinator.epoch != record.epoch || !coordinator.ongoing) continue;
    AppendOpen(record.where, std::move(record.entry));
  }
  queue->second = std::move(kept);
}

KafkaError StrictCluster::AppendRecord(const kafka::OutgoingRecord& record,
                                       const std::string& transactional_id, TopicPartition* where,
                                       int64_t* offset) {
  TopicPartition resolved;
  if (auto error = Resolve(record, resolved)) return error;
  const int32_t partition = resolved.second;
  Partition* log = FindPartition(record.topic, partition);
  if (const size_t bytes = RecordBatchBytes(record); bytes > MaxMessageBytes(record.topic)) {
    return Fail(ErrorKind::kFailed, "MSG_SIZE_TOO_LARGE",
                "a record batch of " + std::to_string(bytes) + " bytes is larger than " +
                    std::string(record.topic) + "'s max.message.bytes");
  }
  Entry entry;
  entry.state = transactional_id.empty() ? EntryState::kCommitted : EntryState::kOpen;
  entry.key = Copy(record.key);
  entry.value = Copy(record.value);
  entry.headers = record.headers;
  entry.transactional_id = transactional_id;
  const int64_t appended = Append(*log, std::move(entry));
  if (offset != nullptr) *offset = appended;
  if (!transactional_id.empty()) log->open_transactions.emplace(transactional_id, appended);
  if (where != nullptr) *where = {std::string(record.topic), partition};
  return {};
}

StrictCluster::Transaction& StrictCluster::Ongoing(const std::string& transactional_id,
                                                   std::chrono::milliseconds timeout) {
  Coordinator& coordinator = coordinators[transactional_id];
  if (!coordinator.ongoing) {
    coordinator.ongoing.emplace();
    coordinator.ongoing->started_ms = NowMs();
    coordinator.ongoing->timeout = timeout;
  }
  return *coordinator.ongoing;
}

bool StrictCluster::HasPendingOffsets(const std::string& group, const TopicPartition& where) const {
  for (const auto& [id, coordinator] : coordinators) {
    if (!coordinator.ongoing) continue;
    const auto offsets = coordinator.ongoing->offsets.find(group);
    if (offsets != coordinator.ongoing->offsets.end() && offsets->second.count(where) > 0) {
      return true;
    }
  }
  return false;
}

void StrictCluster::EndTransaction(const std::string& transactional_id, bool commit) {
  Coordinator& coordinator = coordinators[transactional_id];
  if (!coordinator.ongoing) return;
  for (const auto& [topic, partition] : coordinator.ongoing->partitions) {
    if (Partition* log = FindPartition(topic, partition)) Settle(*log, transactional_id, commit);
  }
  if (commit) {
    for (const auto& [group, offsets] : coordinator.ongoing->offsets) {
      for (const auto& [where, offset] : offsets) groups[group].committed[where] = offset;
    }
  }
  coordinator.ongoing.reset();
}

// Decides the transaction's records on one partition and writes its marker, which
// releases the last stable offset.
void StrictCluster::Settle(Partition& partition, const std::string& transactional_id, bool commit) {
  const auto first = partition.open_transactions.find(transactional_id);
  if (first == partition.open_transactions.end()) return;
  const int64_t from = std::max(first->second, partition.log_start);
  partition.open_transactions.erase(first);
  for (int64_t offset = from; offset < partition.HighWatermark(); ++offset) {
    Entry& entry = partition.At(offset);
    if (entry.state == EntryState::kOpen && entry.transactional_id == transactional_id) {
      entry.state = commit ? EntryState::kCommitted : EntryState::kAborted;
    }
  }
  Entry marker;
  marker.state = EntryState::kMarker;
  marker.value = commit ? "COMMIT" : "ABORT";
  marker.transactional_id = transactional_id;
  Append(partition, std::move(marker));
}

std::string StrictCluster::Join(Group& group, const std::string& instance, int incarnation,
                                const std::string& group_instance_id) {
  if (!group_instance_id.empty() && group.StaticMember(group_instance_id) != nullptr) {
    return Rejoin(group, instance, incarnation, group_instance_id);
  }
  const std::string id = AddMember(group, instance, incarnation, group_instance_id);
  BumpAndRebalance(group);
  return id;
}

std::string StrictCluster::AddMember(Group& group, const std::string& instance, int incarnation,
                                     const std::string& group_instance_id) {
  std::string id = instance + "#" + std::to_string(++members_joined);
  Member& member = group.members[id];
  member.instance = instance;
  member.incarnation = incarnation;
  member.group_instance_id = group_instance_id;
  member.last_heard_ms = NowMs();
  member.last_polled_ms = NowMs();
  return id;
}

// KIP-345: a static member that joins while the group still holds its previous life
// takes that member's place under a new member id, with the partitions it held
// (told to it afresh), and no rebalance: the generation stays. The previous life is
// fenced. A revocation it left unfinished completes with it (those partitions were
// moving elsewhere), and that one rebalances.
std::string StrictCluster::Rejoin(Group& group, const std::string& instance, int incarnation,
                                  const std::string& group_instance_id) {
  const auto previous =
      std::find_if(group.members.begin(), group.members.end(),
                   [&](const auto& m) { return m.second.group_instance_id == group_instance_id; });
  const Member before = previous->second;
  group.fenced.insert(previous->first);
  group.members.erase(previous);
  const std::string id = AddMember(group, instance, incarnation, group_instance_id);
  Member& member = group.members.at(id);
  for (int32_t p : before.owned) {
    if (before.Revoking(p)) continue;
    member.owned.insert(p);
    member.assign_pending.insert(p);
  }
  if (!before.revoke_pending.empty() || !before.revoke_told.empty()) BumpAndRebalance(group);
  return id;
}

void StrictCluster::BumpAndRebalance(Group& group) {
  ++group.generation;
  Rebalance(group);
}

// Balanced and sticky: every member ends with floor or ceil(P/n) partitions, keeps
// what it has within that, and what moves is first revoked from its owner; only a
// free partition is offered, to the least-loaded member (lowest id on ties).
void StrictCluster::Rebalance(Group& group) {
  if (group.members.empty()) return;
  const auto topic = topics.find(group.topic);
  // A topic the members may not describe has no partitions for them.
  const int32_t partitions = topic == topics.end() || describe_denied.contains(group.topic)
                                 ? 0
                                 : static_cast<int32_t>(topic->second.size());
  const std::map<std::string, size_t> quotas = Quotas(group, partitions);
  for (auto& [id, member] : group.members) TrimToQuota(member, quotas.at(id));
  for (int32_t partition = 0; partition < partitions; ++partition) {
    const bool owned = std::any_of(group.members.begin(), group.members.end(),
                                   [&](const auto& m) { return m.second.owned.count(partition); });
    if (!owned) Offer(group, quotas, partition);
  }
}

// The ceil(P/n) slots go to the members holding most already, so that fewer move.
std::map<std::string, size_t> StrictCluster::Quotas(const Group& group, int32_t partitions) const {
  const size_t members = group.members.size();
  const size_t base = static_cast<size_t>(partitions) / members;
  const size_t extra = static_cast<size_t>(partitions) % members;
  std::vector<std::pair<size_t, std::string>> by_load;
  for (const auto& [id, member] : group.members) by_load.emplace_back(member.Kept(), id);
  std::stable_sort(by_load.begin(), by_load.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::map<std::string, size_t> quotas;
  for (size_t i = 0; i < by_load.size(); ++i) quotas[by_load[i].second] = base + (i < extra);
  return quotas;
}

// Gives up first what the member has not been told about yet: taking that back
// needs no revocation round.
void StrictCluster::TrimToQuota(Member& member, size_t quota) {
  std::vector<int32_t> kept;
  for (int32_t p : member.owned) {
    if (!member.Revoking(p) && member.assign_pending.count(p) == 0) kept.push_back(p);
  }
  kept.insert(kept.end(), member.assign_pending.begin(), member.assign_pending.end());
  for (size_t i = quota; i < kept.size(); ++i) {
    if (member.assign_pending.erase(kept[i]) > 0) {
      member.owned.erase(kept[i]);
    } else {
      member.revoke_pending.insert(kept[i]);
    }
  }
}

void StrictCluster::Offer(Group& group, const std::map<std::string, size_t>& quotas,
                          int32_t partition) {
  Member* best = nullptr;
  for (auto& [id, member] : group.members) {
    if (member.Kept() >= quotas.at(id)) continue;
    if (best == nullptr || member.Kept() < best->Kept()) best = &member;
  }
  if (best == nullptr) return;
  best->owned.insert(partition);
  best->assign_pending.insert(partition);
}

void StrictCluster::Advance(std::chrono::milliseconds duration) {
  std::lock_guard lock(mu);
  const int64_t target = NowMs() + std::max<int64_t>(duration.count(), 0);
  // Stops at each of the coordinators' checks on the way, so that each sees the
  // transactions as they are at its time.
  do {
    Heartbeat();
    const int64_t next = std::min(target, next_abort_check_ms);
    clock.Move(std::chrono::milliseconds(next - NowMs()));
    Heartbeat();
    if (NowMs() >= next_abort_check_ms) {
      ExpireTransactions();
      next_abort_check_ms += std::max<int64_t>(abort_interval.count(), 1);
    }
    ExpireSessions();
    ApplyTimeRetention();
  } while (NowMs() < target);
}

// Time retention (retention.ms, cleanup.policy=delete): a broker deletes a segment
// once its newest record's timestamp is retention.ms old, the active segment
// included once it rolls, and never past the high watermark. The double deletes
// record by record (a broker with tiny segments), so that an idle partition loses
// every record, as a real one does once its last segment expires.
void StrictCluster::ApplyTimeRetention() {
  const int64_t now = clock.WallMs();
  for (const auto& [topic, retention] : retention_ms) {
    if (retention.ms < 0) continue;
    const auto it = topics.find(topic);
    if (it == topics.end()) continue;
    for (Partition& partition : it->second) {
      while (!partition.entries.empty() &&
             partition.entries.front().timestamp_ms + retention.ms < now) {
        partition.DropOldest();
      }
    }
  }
}

// Every abort_interval (transaction.abort.timed.out.transaction.cleanup.interval.ms)
// the coordinator aborts the transactions older than their timeout and bumps their
// epochs, so the owner is fenced (KIP-360 as Kafka 2.5+ and librdkafka 2.0 report it:
// PRODUCER_FENCED). Between two checks a transaction past its timeout still commits.
void StrictCluster::ExpireTransactions() {
  for (auto& [id, coordinator] : coordinators) {
    if (!coordinator.ongoing) continue;
    if (NowMs() - coordinator.ongoing->started_ms <= coordinator.ongoing->timeout.count()) continue;
    EndTransaction(id, false);
    ++coordinator.epoch;
  }
}

// The clients' background threads heartbeat for every live process that is not
// frozen, whatever its application thread does (a heartbeat goes out far more often
// than a session timeout, so one at each end of an Advance is as good as all).
void StrictCluster::Heartbeat() {
  for (auto& [name, group] : groups) {
    for (auto& [id, member] : group.members) {
      if (!IsCrashed(member.instance, member.incarnation) && !frozen.contains(member.instance) &&
          !member.closed) {
        member.last_heard_ms = NowMs();
      }
    }
  }
}

// A member leaves when its heartbeats stop for a session timeout (the process died
// or froze), or when its application stops polling for max.poll.interval.ms (the
// client leaves the group itself).
void StrictCluster::ExpireSessions() {
  for (auto& [name, group] : groups) {
    const size_t before = group.members.size();
    std::erase_if(group.members, [&](const auto& m) {
      return NowMs() - m.second.last_heard_ms > session_timeout.count() ||
             NowMs() - m.second.last_polled_ms > max_poll_interval.count() ||
             (m.second.stalled_since_ms >= 0 &&
              NowMs() - m.second.stalled_since_ms > max_poll_interval.count());
    });
    if (group.members.size() != before) BumpAndRebalance(group);
  }
}

// --- Messages: each owns a heap copy of what it shows ---------------------------

namespace {

struct Payload {
  std::string topic;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<kafka::Header> headers;
};

void ReleasePayload(void* handle) {
  delete static_cast<Payload*>(handle);
}

std::vector<kafka::Header> PayloadHeaders(const void* handle) {
  return static_cast<const Payload*>(handle)->headers;
}

const Message::Ops kPayloadOps{&ReleasePayload, &PayloadHeaders};

Message NewMessage(MessageKind kind, std::unique_ptr<Payload> payload, int32_t partition,
                   int64_t offset, int64_t timestamp_ms) {
  Payload* owned = payload.release();
  Message message(owned, &kPayloadOps);
  message.kind = kind;
  message.topic = owned->topic;
  message.partition = base::Partition(partition);
  message.offset = base::Offset(offset);
  message.timestamp_ms = timestamp_ms;
  if (owned->key) message.key = std::string_view(*owned->key);
  if (owned->value) message.value = std::string_view(*owned->value);
  return message;
}

Message EventMessage(MessageKind kind, const std::string& topic, int32_t partition, int64_t offset);

Message RecordMessage(const std::string& topic, int32_t partition,
                      const StrictCluster::Entry& entry) {
  if (entry.unreadable) {  // as librdkafka reports a record whose checksum fails
    Message m = EventMessage(MessageKind::kUnreadable, topic, partition, entry.offset);
    m.error = "_BAD_MSG: Message at offset " + std::to_string(entry.offset) + " failed CRC32 check";
    return m;
  }
  auto payload = std::make_unique<Payload>(Payload{topic, entry.key, entry.value, entry.headers});
  return NewMessage(MessageKind::kRecord, std::move(payload), partition, entry.offset,
                    entry.timestamp_ms);
}

Message EventMessage(MessageKind kind, const std::string& topic, int32_t partition,
                     int64_t offset) {
  auto payload = std::make_unique<Payload>();
  payload->topic = topic;
  return NewMessage(kind, std::move(payload), partition, offset, -1);
}

// Moves `position` past what read_committed skips (markers, aborted records) up to
// `end`; true when it stopped at a record to deliver.
bool SkipToDeliverable(const StrictCluster::Partition& partition, int64_t& position, int64_t end) {
  for (; position < end; ++position) {
    if (partition.At(position).state == EntryState::kCommitted) return true;
  }
  return false;
}

// --- Clients ---------------------------------------------------------------------

// What every client of an instance carries: the cluster, and which incarnation of
// the instance made it (a crash ends an incarnation).
struct Identity {
  std::shared_ptr<StrictCluster> cluster;
  std::string instance;
  int incarnation = 0;

  bool crashed() const { return cluster->IsCrashed(instance, incarnation); }  // mutex held
};

class StrictGroupMetadata final : public kafka::GroupMetadata {
 public:
  StrictGroupMetadata(std::string group, std::string member, int32_t gen, std::string instance_id)
      : group_id(std::move(group)),
        member_id(std::move(member)),
        generation(gen),
        group_instance_id(std::move(instance_id)) {}
  const std::string group_id;
  const std::string member_id;
  const int32_t generation;
  const std::string group_instance_id;  // empty: a dynamic member
};

class StrictPlainProducer final : public kafka::PlainProducer {
 public:
  StrictPlainProducer(Identity identity, const kafka::PlainProducerSpec& spec)
      : id_(std::move(identity)),
        delivery_timeout_ms_(spec.delivery_timeout.count() > 0 ? spec.delivery_timeout.count()
                                                               : kLibrdkafkaMessageTimeoutMs) {}

  KafkaError Produce(const kafka::OutgoingRecord& record) override {
    std::lock_guard lock(id_.cluster->mu);
    if (id_.crashed()) return Crashed();
    if (fatal_) return *fatal_;
    if (auto injected = id_.cluster->TakeInjection(Call::kPlainProduce, id_.instance)) {
      // As librdkafka's idempotent producer: after a fatal error it refuses everything.
      if (injected->kind == ErrorKind::kFatal) fatal_ = injected;
      return *injected;
    }
    ReportTimedOut();
    if (id_.cluster->leaderless.contains({std::string(record.topic), record.partition.value()})) {
      // As librdkafka: it waits in the queue, and fails at its delivery timeout.
      stranded_.push_back(id_.cluster->NowMs() + delivery_timeout_ms_);
      return {};
    }
    KafkaError e = id_.cluster->AppendRecord(record, "", nullptr);
    // The record is in the log at once: its delivery report is already in.
    if (!e) ++deliveries_.acked;
    return e;
  }
  void Poll(std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    ReportTimedOut();
  }
  size_t Flush(std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    ReportTimedOut();
    return stranded_.size();
  }
  const kafka::Deliveries& deliveries() const override { return deliveries_; }

 private:
  static constexpr int64_t kLibrdkafkaMessageTimeoutMs = 300000;

  void ReportTimedOut() {
    while (!stranded_.empty() && stranded_.front() <= id_.cluster->NowMs()) {
      stranded_.pop_front();
      deliveries_.last_error = "Local: Message timed out";
      if (deliveries_.failed++ == 0) deliveries_.first_error = deliveries_.last_error;
    }
  }

  const Identity id_;
  const int64_t delivery_timeout_ms_;
  kafka::Deliveries deliveries_;
  std::deque<int64_t> stranded_;     // when each record stranded on a leaderless partition fails
  std::optional<KafkaError> fatal_;  // guarded by the cluster's mutex
};

}  // namespace

// --- Transactional producer ------------------------------------------------------

namespace {

class StrictTransactionalProducer final : public kafka::TransactionalProducer {
 public:
  StrictTransactionalProducer(Identity identity, const kafka::TransactionalProducerSpec& spec)
      : id_(std::move(identity)),
        transactional_id_(spec.transactional_id),
        timeout_(spec.transaction_timeout),
        max_batch_bytes_(spec.max_batch_bytes) {}

  KafkaError InitTransactions(std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(Init());
  }
  // The double's producers know every topic at once; what it checks is that they exist.
  KafkaError LookUpTopics(const std::vector<std::string>& topics,
                          std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    if (id_.crashed()) return Crashed();
    for (const std::string& topic : topics) {
      if (id_.cluster->topics.count(topic) == 0)
        return UnknownPartition(ErrorKind::kFatal, topic, 0);
    }
    return {};
  }
  KafkaError BeginTransaction() override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(Begin());
  }
  KafkaError Produce(const kafka::OutgoingRecord& record) override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(Append(record));
  }
  KafkaError SendOffsets(std::string_view topic, const std::vector<kafka::PartitionOffset>& offsets,
                         const kafka::GroupMetadata& group, std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(AddOffsets(topic, offsets, group));
  }
  KafkaError CommitTransaction(std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(End(true));
  }
  KafkaError AbortTransaction(std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    return Sticky(End(false));
  }
  void Poll() override {}
  std::map<base::Partition, kafka::DeliveredRecords> OffsetsOfLastCommit(
      const std::string& topic) override {
    std::lock_guard lock(id_.cluster->mu);
    std::map<base::Partition, kafka::DeliveredRecords> out;
    for (const auto& [where, delivered] : committed_) {
      if (where.first == topic) out.emplace(base::Partition(where.second), delivered);
    }
    return out;
  }

 private:
  KafkaError Gate(Call call);
  KafkaError Init();
  KafkaError Begin();
  KafkaError Append(const kafka::OutgoingRecord& record);
  KafkaError AddOffsets(std::string_view topic, const std::vector<kafka::PartitionOffset>& offsets,
                        const kafka::GroupMetadata& group);
  KafkaError End(bool commit);
  KafkaError CheckMember(const StrictGroupMetadata& metadata);
  KafkaError Batch(const TopicPartition& where, const kafka::OutgoingRecord& record);

  // The interface's promise: after kProducerFenced or kFatal the producer is unusable.
  KafkaError Sticky(KafkaError error) {
    if (error.kind == ErrorKind::kProducerFenced || error.kind == ErrorKind::kFatal) {
      unusable_ = error;
    }
    return error;
  }
  static KafkaError RequiresAbort() {
    return Fail(ErrorKind::kAbortable, "TXN_REQUIRES_ABORT",
                "an earlier error requires the transaction to be aborted");
  }

  const Identity id_;
  const std::string transactional_id_;
  const std::chrono::milliseconds timeout_;
  const size_t max_batch_bytes_;
  // Guarded by the cluster's mutex.
  int32_t epoch_ = -1;  // -1: InitTransactions has not succeeded
  bool in_transaction_ = false;
  bool must_abort_ = false;
  std::optional<KafkaError> unusable_;
  // Per partition, the bytes of the open transaction's last batch there.
  std::map<TopicPartition, size_t> batches_;
  // Per partition, the first offset the last committed transaction wrote there.
  std::map<TopicPartition, kafka::DeliveredRecords> committed_;
};

// What every transactional call checks first, in the order a client meets it.
KafkaError StrictTransactionalProducer::Gate(Call call) {
  if (id_.crashed()) return Crashed();
  if (unusable_) return *unusable_;
  if (auto injected = id_.cluster->TakeInjection(call, id_.instance)) {
    const bool abortable =
        injected->kind == ErrorKind::kAbortable || injected->kind == ErrorKind::kGroupFenced;
    const bool in_transaction_call =
        call == Call::kProduce || call == Call::kSendOffsets || call == Call::kCommitTransaction;
    if (abortable && in_transaction_call && in_transaction_) must_abort_ = true;
    return *injected;
  }
  if (epoch_ >= 0 && id_.cluster->coordinators[transactional_id_].epoch != epoch_) {
    return Fail(ErrorKind::kProducerFenced, "PRODUCER_FENCED",
                "transactional.id " + transactional_id_ +
                    " has a newer epoch: a newer producer, or a transaction timed out");
  }
  return {};
}

KafkaError StrictTransactionalProducer::Init() {
  if (auto error = Gate(Call::kInitTransactions)) return error;
  if (epoch_ >= 0) return InvalidTxnState("InitTransactions called twice");
  id_.cluster->EndTransaction(transactional_id_, false);
  epoch_ = ++id_.cluster->coordinators[transactional_id_].epoch;
  return {};
}

KafkaError StrictTransactionalProducer::Begin() {
  if (auto error = Gate(Call::kBeginTransaction)) return error;
  if (epoch_ < 0) return InvalidTxnState("BeginTransaction before InitTransactions");
  if (in_transaction_) return InvalidTxnState("BeginTransaction inside a transaction");
  in_transaction_ = true;
  must_abort_ = false;
  batches_.clear();
  committed_.clear();
  return {};
}

// The producer packs a partition's records into batches of up to max_batch_bytes
// (a record larger than that alone); the broker checks each batch against the
// topic's max.message.bytes. The double packs as tightly as the producer may: every
// record of a transaction joins its partition's last batch if it fits.
KafkaError StrictTransactionalProducer::Batch(const TopicPartition& where,
                                              const kafka::OutgoingRecord& record) {
  constexpr size_t kBatchHeader = 61;
  const size_t bytes = RecordBatchBytes(record);
  size_t& batch = batches_[where];
  if (batch > 0 && batch + bytes - kBatchHeader > max_batch_bytes_) batch = 0;
  batch = batch == 0 ? bytes : batch + bytes - kBatchHeader;
  if (batch > id_.cluster->MaxMessageBytes(where.first)) {
    return Fail(ErrorKind::kAbortable, "MSG_SIZE_TOO_LARGE",
                "a record batch of " + std::to_string(batch) + " bytes is larger than " +
                    where.first + "'s max.message.bytes");
  }
  return {};
}

KafkaError StrictTransactionalProducer::Append(const kafka::OutgoingRecord& record) {
  if (auto error = Gate(Call::kProduce)) return error;
  if (!in_transaction_) return InvalidTxnState("Produce outside a transaction");
  if (must_abort_) return RequiresAbort();
  TopicPartition where;
  KafkaError error = id_.cluster->Resolve(record, where);
  if (!error) error = Batch(where, record);
  if (error) {
    must_abort_ = true;
    error.kind = ErrorKind::kAbortable;
    return error;
  }
  // AddPartitionsToTxn goes out before the records: the coordinator knows the
  // partition (and the transaction's timeout runs) even while they wait in the queue.
  id_.cluster->Ongoing(transactional_id_, timeout_).partitions.insert(where);
  StrictCluster::Entry entry;
  entry.state = EntryState::kOpen;
  entry.key = Copy(record.key);
  entry.value = Copy(record.value);
  entry.headers = record.headers;
  entry.transactional_id = transactional_id_;
  if (id_.cluster->holding.contains(id_.instance)) {
    id_.cluster->in_flight[id_.instance].push_back(
        {transactional_id_, epoch_, where, std::move(entry)});
  } else {
    id_.cluster->AppendOpen(where, std::move(entry));
  }
  return {};
}

KafkaError StrictTransactionalProducer::AddOffsets(
    std::string_view topic, const std::vector<kafka::PartitionOffset>& offsets,
    const kafka::GroupMetadata& group) {
  // As librdkafka does: negative (logical) offsets are dropped, and with none left
  // nothing is sent, so the group coordinator checks nothing either.
  if (std::none_of(offsets.begin(), offsets.end(),
                   [](const kafka::PartitionOffset& o) { return !base::IsLogical(o.offset); })) {
    if (id_.crashed()) return Crashed();
    return unusable_ ? *unusable_ : KafkaError{};
  }
  if (auto error = Gate(Call::kSendOffsets)) return error;
  if (!in_transaction_) return InvalidTxnState("SendOffsets outside a transaction");
  if (must_abort_) return RequiresAbort();
  const auto* metadata = dynamic_cast<const StrictGroupMetadata*>(&group);
  if (metadata == nullptr) {
    return Fail(ErrorKind::kFatal, "INVALID_ARG", "group metadata not made by StrictKafka");
  }
  if (auto error = CheckMember(*metadata)) {
    must_abort_ = true;
    return error;
  }
  auto& kept = id_.cluster->Ongoing(transactional_id_, timeout_).offsets[metadata->group_id];
  for (const auto& [partition, offset] : offsets) {
    if (!base::IsLogical(offset)) kept[{std::string(topic), partition.value()}] = offset.value();
  }
  return {};
}

// KIP-447: the group coordinator refuses offsets from a member the group has moved on
// without, so a zombie cannot commit over its successor.
KafkaError StrictTransactionalProducer::CheckMember(const StrictGroupMetadata& metadata) {
  const auto group = id_.cluster->groups.find(metadata.group_id);
  if (group != id_.cluster->groups.end() && !metadata.group_instance_id.empty()) {
    const StrictCluster::Member* current = group->second.StaticMember(metadata.group_instance_id);
    if (current != nullptr && group->second.members.count(metadata.member_id) == 0) {
      return Fail(ErrorKind::kGroupFenced, "FENCED_INSTANCE_ID",
                  "member '" + metadata.member_id + "' of static instance " +
                      metadata.group_instance_id + " was replaced by a newer one");
    }
  }
  if (group == id_.cluster->groups.end() || group->second.members.count(metadata.member_id) == 0) {
    return Fail(ErrorKind::kGroupFenced, "UNKNOWN_MEMBER_ID",
                "member '" + metadata.member_id + "' is not in group " + metadata.group_id);
  }
  if (group->second.generation != metadata.generation) {
    return Fail(ErrorKind::kGroupFenced, "ILLEGAL_GENERATION",
                "generation " + std::to_string(metadata.generation) + " is not the group's " +
                    std::to_string(group->second.generation));
  }
  return {};
}

KafkaError StrictTransactionalProducer::End(bool commit) {
  if (auto error = Gate(commit ? Call::kCommitTransaction : Call::kAbortTransaction)) return error;
  if (!in_transaction_) return InvalidTxnState("no transaction to end");
  if (commit && must_abort_) return RequiresAbort();
  // A commit flushes the queue first; an abort purges it.
  if (commit) {
    id_.cluster->Land(id_.instance, transactional_id_);
  } else if (auto queue = id_.cluster->in_flight.find(id_.instance);
             queue != id_.cluster->in_flight.end()) {
    std::erase_if(queue->second,
                  [&](const auto& r) { return r.transactional_id == transactional_id_; });
  }
  if (commit) {
    const auto& coordinator = id_.cluster->coordinators[transactional_id_];
    for (const TopicPartition& where :
         coordinator.ongoing ? coordinator.ongoing->partitions : std::set<TopicPartition>{}) {
      const auto* log = id_.cluster->FindPartition(where.first, where.second);
      const auto first = log->open_transactions.find(transactional_id_);
      if (first == log->open_transactions.end()) continue;
      kafka::DeliveredRecords& delivered = committed_[where];
      delivered.first = base::Offset(first->second);
      for (int64_t offset = std::max(first->second, log->log_start); offset < log->HighWatermark();
           ++offset) {
        const StrictCluster::Entry& entry = log->At(offset);
        if (entry.state != EntryState::kOpen || entry.transactional_id != transactional_id_) {
          continue;
        }
        delivered.last = base::Offset(offset);
        ++delivered.count;
      }
    }
  }
  id_.cluster->EndTransaction(transactional_id_, commit);
  in_transaction_ = false;
  must_abort_ = false;
  batches_.clear();
  return {};
}

// --- Partition reader ------------------------------------------------------------

class StrictPartitionReader final : public kafka::PartitionReader {
 public:
  explicit StrictPartitionReader(Identity identity) : id_(std::move(identity)) {}

  KafkaError Assign(const std::vector<kafka::TopicPartitionOffset>& partitions) override;
  KafkaError Seek(const kafka::TopicPartitionOffset& position) override;
  std::optional<Message> Poll(std::chrono::milliseconds) override;
  base::Result<base::Offset> StableEnd(const std::string& topic, base::Partition partition,
                                       std::chrono::milliseconds) override;
  void Close() override {
    std::lock_guard lock(id_.cluster->mu);
    closed_ = true;
    assigned_.clear();
  }

 private:
  struct Position {
    int64_t next = 0;
    std::optional<int64_t> reported_end;
  };

  // Where an assignment or seek starts; nullopt for an offset it cannot mean.
  static std::optional<int64_t> Start(const StrictCluster::Partition& partition,
                                      base::Offset offset) {
    if (!base::IsLogical(offset)) return offset.value();
    if (offset == kafka::kOffsetBeginning) return partition.log_start;
    if (offset == kafka::kOffsetEnd) return partition.LastStableOffset();
    return std::nullopt;
  }
  KafkaError Check(Call call);
  std::optional<Message> Next(const TopicPartition& where, Position& position);

  const Identity id_;
  // Guarded by the cluster's mutex.
  std::map<TopicPartition, Position> assigned_;
  std::optional<TopicPartition> last_polled_;
  bool closed_ = false;
  bool failed_ = false;  // a fatal error was delivered
};

KafkaError StrictPartitionReader::Check(Call call) {
  if (id_.crashed()) return Crashed();
  if (auto injected = id_.cluster->TakeInjection(call, id_.instance)) return *injected;
  if (closed_) return Fail(ErrorKind::kFailed, "CLOSED", "the reader is closed");
  if (failed_) return Fail(ErrorKind::kFatal, "FATAL", "the reader had a fatal error");
  return {};
}

KafkaError StrictPartitionReader::Assign(
    const std::vector<kafka::TopicPartitionOffset>& partitions) {
  std::lock_guard lock(id_.cluster->mu);
  if (auto error = Check(Call::kReaderAssign)) return error;
  std::map<TopicPartition, Position> next;
  for (const auto& [topic, partition, offset] : partitions) {
    const auto* log = id_.cluster->FindPartition(topic, partition.value());
    if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, topic, partition.value());
    const auto start = Start(*log, offset);
    if (!start)
      return Fail(ErrorKind::kFailed, "INVALID_ARG",
                  "bad offset " + std::to_string(offset.value()));
    next[{topic, partition.value()}] = Position{*start, std::nullopt};
  }
  assigned_ = std::move(next);
  last_polled_.reset();
  return {};
}

// A seek starts the partition over, so its end is reported again (librdkafka resets
// its end-of-partition flag on seek too).
KafkaError StrictPartitionReader::Seek(const kafka::TopicPartitionOffset& position) {
  std::lock_guard lock(id_.cluster->mu);
  if (auto error = Check(Call::kSeek)) return error;
  const auto it = assigned_.find({position.topic, position.partition.value()});
  if (it == assigned_.end()) {
    return Fail(ErrorKind::kFailed, "UNKNOWN_PARTITION", "seek on a partition not assigned");
  }
  const auto start = Start(*id_.cluster->FindPartition(position.topic, position.partition.value()),
                           position.offset);
  if (!start) return Fail(ErrorKind::kFailed, "INVALID_ARG", "bad offset");
  it->second = Position{*start, std::nullopt};
  return {};
}

std::optional<Message> StrictPartitionReader::Poll(std::chrono::milliseconds) {
  std::lock_guard lock(id_.cluster->mu);
  if (id_.crashed() || closed_ || failed_) return std::nullopt;
  if (auto injected = id_.cluster->TakeInjection(Call::kReaderPoll, id_.instance)) {
    failed_ = injected->kind == ErrorKind::kFatal;
    Message error = EventMessage(failed_ ? MessageKind::kFatal : MessageKind::kError, "", -1, -1);
    error.error = injected->ToString();
    return error;
  }
  std::optional<Message> message;
  VisitRoundRobin(assigned_, last_polled_, [&](const TopicPartition& where, Position& position) {
    message = Next(where, position);
    if (message) last_polled_ = where;
    return message.has_value();
  });
  return message;
}

base::Result<base::Offset> StrictPartitionReader::StableEnd(const std::string& topic,
                                                            base::Partition partition,
                                                            std::chrono::milliseconds) {
  std::lock_guard lock(id_.cluster->mu);
  if (auto error = Check(Call::kReaderStableEnd)) return base::KafkaFailure(error.ToString());
  const auto* log = id_.cluster->FindPartition(topic, partition.value());
  if (log == nullptr) {
    return base::KafkaFailure(
        UnknownPartition(ErrorKind::kFailed, topic, partition.value()).ToString());
  }
  return base::Offset(log->LastStableOffset());
}

std::optional<Message> StrictPartitionReader::Next(const TopicPartition& where,
                                                   Position& position) {
  if (id_.cluster->stalled.contains({id_.instance, where.first})) return std::nullopt;
  const auto* found = id_.cluster->FindPartition(where.first, where.second);
  if (found == nullptr) return std::nullopt;  // its topic was deleted
  const auto& log = *found;
  // auto.offset.reset=earliest: a lost position silently restarts at the log start.
  if (position.next < log.log_start || position.next > log.HighWatermark()) {
    position.next = log.log_start;
  }
  const int64_t end = log.LastStableOffset();
  if (SkipToDeliverable(log, position.next, end)) {
    const bool stuck = log.At(position.next).stuck;
    return RecordMessage(where.first, where.second,
                         log.At(stuck ? position.next : position.next++));
  }
  if (position.next != end || position.reported_end == end) return std::nullopt;
  position.reported_end = end;
  return EventMessage(MessageKind::kPartitionEnd, where.first, where.second, end);
}

// --- Group consumer --------------------------------------------------------------

class StrictGroupConsumer final : public kafka::GroupConsumer {
 public:
  StrictGroupConsumer(Identity identity, kafka::GroupConsumerSpec spec)
      : id_(std::move(identity)), spec_(std::move(spec)) {}
  // Without Close, a live process's consumer still leaves (librdkafka closes on
  // destroy); a crashed one stays in the group until its session times out.
  ~StrictGroupConsumer() override {
    std::lock_guard lock(id_.cluster->mu);
    if (!id_.crashed() && !closed_) Depart();
  }

  KafkaError Subscribe(kafka::RebalanceListener* listener) override;
  std::optional<Message> Poll(std::chrono::milliseconds) override;
  KafkaError IncrementalAssign(const std::vector<kafka::PartitionOffset>& partitions) override;
  KafkaError IncrementalUnassign(const std::vector<base::Partition>& partitions) override;
  KafkaError Seek(const std::vector<kafka::PartitionOffset>& positions) override;
  KafkaError Pause(const std::vector<base::Partition>& partitions) override {
    return SetPaused(partitions, true);
  }
  KafkaError Resume(const std::vector<base::Partition>& partitions) override {
    return SetPaused(partitions, false);
  }
  bool AssignmentLost() override;
  std::unique_ptr<kafka::GroupMetadata> Metadata() override;
  base::Offset CachedHighWatermark(base::Partition partition) override;
  KafkaError QueryEnd(base::Partition partition, base::Offset& end,
                      std::chrono::milliseconds timeout) override;
  base::Result<std::map<base::Partition, int32_t>> PartitionLeaders(
      std::chrono::milliseconds) override {
    std::lock_guard lock(cluster().mu);
    if (auto error = Usable()) return error.ToError();
    const auto topic = cluster().topics.find(spec_.topic);
    if (topic == cluster().topics.end()) {
      return UnknownPartition(ErrorKind::kFailed, spec_.topic, 0).ToError();
    }
    std::map<base::Partition, int32_t> leaders;
    for (int32_t p = 0; p < static_cast<int32_t>(topic->second.size()); ++p) {
      leaders[base::Partition(p)] = cluster().LeaderOf(spec_.topic, p);
    }
    return leaders;
  }
  KafkaError QueryWatermarks(base::Partition partition, base::Offset& low, base::Offset& high,
                             std::chrono::milliseconds) override;
  KafkaError CommittedOffset(base::Partition partition, std::optional<base::Offset>& committed,
                             std::chrono::milliseconds) override;
  void Close() override;

 private:
  struct Fetch {
    int64_t position = 0;
    bool paused = false;
    // While the position is still to be read from the group's committed offsets: the
    // (negative) offset the assignment asked for.
    std::optional<int64_t> from_committed;
    // Assigned at kOffsetBeginning: the log start as it is when fetching begins (an
    // offset query librdkafka sends then), not as it was at the assignment.
    bool from_beginning = false;
    std::optional<int64_t> lost_position;  // to report as kOffsetOutOfRange
    bool stopped = false;                  // reported out of range: waits for a seek
  };
  // A rebalance callback, taken under the mutex and run without it.
  struct Callback {
    enum Kind : uint8_t { kNone, kLost, kRevoked, kAssigned } kind = kNone;
    std::vector<base::Partition> partitions;
    kafka::RebalanceListener* listener = nullptr;
  };

  StrictCluster& cluster() const { return *id_.cluster; }
  StrictCluster::Group& group() const { return cluster().groups[spec_.group_id]; }
  StrictCluster::Member* member() const;
  KafkaError Usable();
  void Touch(bool polled = false);
  Callback TakeCallback();
  void Run(const Callback& callback);
  void CompleteRevocation();
  void AfterLost();
  std::optional<Message> NextMessage();
  std::optional<Message> NextFrom(int32_t partition, Fetch& fetch);
  Fetch StartFetch(const StrictCluster::Partition& log, base::Offset offset) const;
  bool ResolveCommitted(const StrictCluster::Partition& log, int32_t partition, Fetch& fetch);
  KafkaError SetPaused(const std::vector<base::Partition>& partitions, bool paused);
  bool Replaced() const { return !member_id_.empty() && group().fenced.count(member_id_) > 0; }
  bool StaysOnClose() const {
    return !spec_.group_instance_id.empty() && !spec_.static_member_leaves_on_close;
  }
  void Depart();

  const Identity id_;
  const kafka::GroupConsumerSpec spec_;
  // Guarded by the cluster's mutex.
  kafka::RebalanceListener* listener_ = nullptr;
  std::string member_id_;  // the id the group gave this consumer last; "" while rejoining
  int32_t seen_generation_ = -1;
  bool closed_ = false;
  bool losing_ = false;  // inside OnRevoked(lost=true)
  bool fenced_ = false;  // told FENCED_INSTANCE_ID: a newer life of its static member took over
  std::map<int32_t, Fetch> assigned_;
  std::optional<int32_t> last_polled_;
};

StrictCluster::Member* StrictGroupConsumer::member() const {
  if (member_id_.empty()) return nullptr;
  auto& members = group().members;
  const auto it = members.find(member_id_);
  return it == members.end() ? nullptr : &it->second;
}

// Any call is a sign of life, as the real client's heartbeats are; only a poll (or a
// join) resets the max.poll.interval.ms timer, as in librdkafka.
void StrictGroupConsumer::Touch(bool polled) {
  if (StrictCluster::Member* m = member()) {
    m->last_heard_ms = cluster().NowMs();
    if (polled) m->last_polled_ms = cluster().NowMs();
    seen_generation_ = group().generation;
  }
}

KafkaError StrictGroupConsumer::Usable() {
  if (id_.crashed()) return Crashed();
  if (closed_) return Fail(ErrorKind::kFailed, "CLOSED", "the consumer is closed");
  Touch();
  return {};
}

KafkaError StrictGroupConsumer::Subscribe(kafka::RebalanceListener* listener) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  if (listener_ != nullptr) return Fail(ErrorKind::kFailed, "STATE", "already subscribed");
  StrictCluster::Group& g = group();
  if (g.members.empty()) g.topic = spec_.topic;
  if (g.topic != spec_.topic) {
    return Fail(ErrorKind::kFailed, "INCONSISTENT_GROUP_PROTOCOL",
                "group " + spec_.group_id + " consumes " + g.topic);
  }
  listener_ = listener;
  member_id_ = cluster().Join(g, id_.instance, id_.incarnation, spec_.group_instance_id);
  Touch(/*polled=*/true);
  return {};
}

std::optional<Message> StrictGroupConsumer::Poll(std::chrono::milliseconds) {
  for (;;) {
    Callback callback;
    {
      std::lock_guard lock(cluster().mu);
      if (id_.crashed() || closed_ || listener_ == nullptr || fenced_) return std::nullopt;
      Touch(/*polled=*/true);
      if (Replaced()) {
        // librdkafka makes FENCED_INSTANCE_ID a fatal error of the consumer, which never
        // rejoins (a rejoin would fence its successor in turn).
        fenced_ = true;
        Message fatal = EventMessage(MessageKind::kFatal, spec_.topic, -1, -1);
        fatal.error =
            "FENCED_INSTANCE_ID: static consumer fenced by other consumer with same "
            "group.instance.id " +
            spec_.group_instance_id;
        return fatal;
      }
      if (auto injected = cluster().TakeInjection(Call::kConsumerPoll, id_.instance)) {
        Message error = EventMessage(MessageKind::kError, spec_.topic, -1, -1);
        error.error = injected->code + ": " + injected->message;  // as the client's Wrap
        return error;
      }
      callback = TakeCallback();
      if (callback.kind == Callback::kNone) return NextMessage();
    }
    Run(callback);
  }
}

// Loss first (nothing else matters to a member the group dropped), then revocations
// (they unblock other members), then assignments.
StrictGroupConsumer::Callback StrictGroupConsumer::TakeCallback() {
  if (!member_id_.empty() && member() == nullptr &&
      cluster().drop_learned_at.count(id_.instance) == 0) {
    member_id_.clear();
    losing_ = true;
    return {Callback::kLost, Keys(assigned_), listener_};
  }
  StrictCluster::Member* m = member();
  if (m == nullptr) return {};
  if (!m->revoke_told.empty() || !m->assign_awaited.empty()) return {};  // stalled
  if (!m->revoke_pending.empty()) {
    Callback callback{Callback::kRevoked, Typed(m->revoke_pending), listener_};
    m->revoke_told.insert(m->revoke_pending.begin(), m->revoke_pending.end());
    m->revoke_pending.clear();
    m->stalled_since_ms = cluster().NowMs();
    return callback;
  }
  if (!m->assign_pending.empty()) {
    Callback callback{Callback::kAssigned, Typed(m->assign_pending), listener_};
    m->assign_awaited = std::move(m->assign_pending);
    m->assign_pending.clear();
    m->stalled_since_ms = cluster().NowMs();
    return callback;
  }
  return {};
}

void StrictGroupConsumer::Run(const Callback& callback) {
  switch (callback.kind) {
    case Callback::kLost:
      if (!callback.partitions.empty()) callback.listener->OnRevoked(callback.partitions, true);
      AfterLost();
      break;
    case Callback::kRevoked: {
      callback.listener->OnRevoked(callback.partitions, false);
      std::lock_guard lock(cluster().mu);
      CompleteRevocation();
      break;
    }
    case Callback::kAssigned:
      callback.listener->OnAssigned(callback.partitions);
      break;
    case Callback::kNone:
      break;
  }
}

// Once the application has unassigned every partition it was told were revoked
// (librdkafka waits for that IncrementalUnassign, in the callback or later), the
// member rejoins without them, which completes the first cooperative phase: a new
// generation, and the partitions go to their new owner. Under the cluster's mutex.
void StrictGroupConsumer::CompleteRevocation() {
  StrictCluster::Member* m = member();
  if (m == nullptr || m->revoke_told.empty()) return;  // expelled: freed with it
  for (int32_t p : m->revoke_told) {
    if (assigned_.count(p) > 0) return;
  }
  for (int32_t p : m->revoke_told) m->owned.erase(p);
  m->revoke_told.clear();
  if (m->assign_awaited.empty()) m->stalled_since_ms = -1;
  cluster().BumpAndRebalance(group());
}

void StrictGroupConsumer::AfterLost() {
  std::lock_guard lock(cluster().mu);
  losing_ = false;
  cluster().drop_learned.erase(id_.instance);
  assigned_.clear();
  last_polled_.reset();
  if (id_.crashed() || closed_) return;
  member_id_ = cluster().Join(group(), id_.instance, id_.incarnation, spec_.group_instance_id);
  Touch(/*polled=*/true);
}

std::optional<Message> StrictGroupConsumer::NextMessage() {
  std::optional<Message> message;
  VisitRoundRobin(assigned_, last_polled_, [&](int32_t partition, Fetch& fetch) {
    if (fetch.paused || fetch.stopped) return false;
    message = NextFrom(partition, fetch);
    if (message) last_polled_ = partition;
    return message.has_value();
  });
  return message;
}

std::optional<Message> StrictGroupConsumer::NextFrom(int32_t partition, Fetch& fetch) {
  const auto* found = cluster().FindPartition(spec_.topic, partition);
  if (found == nullptr) return std::nullopt;  // deleted: its revocation is on its way
  if (cluster().leaderless.contains({spec_.topic, partition})) return std::nullopt;
  const auto& log = *found;
  if (fetch.from_committed && !ResolveCommitted(log, partition, fetch)) return std::nullopt;
  if (fetch.from_beginning) {
    fetch.position = log.log_start;
    fetch.from_beginning = false;
  }
  if (!fetch.lost_position &&
      (fetch.position < log.log_start || fetch.position > log.HighWatermark())) {
    if (spec_.error_on_lost_position) {
      fetch.lost_position = fetch.position;
    } else {
      fetch.position = log.log_start;
    }
  }
  if (fetch.lost_position) {  // auto.offset.reset=error: say so once, then wait for a seek
    const int64_t lost = *fetch.lost_position;
    fetch.lost_position.reset();
    fetch.stopped = true;
    return EventMessage(MessageKind::kOffsetOutOfRange, spec_.topic, partition, lost);
  }
  if (!SkipToDeliverable(log, fetch.position, log.LastStableOffset())) return std::nullopt;
  const bool stuck = log.At(fetch.position).stuck;
  return RecordMessage(spec_.topic, partition, log.At(stuck ? fetch.position : fetch.position++));
}

StrictGroupConsumer::Fetch StrictGroupConsumer::StartFetch(const StrictCluster::Partition& log,
                                                           base::Offset offset) const {
  Fetch fetch;
  if (!base::IsLogical(offset)) {
    fetch.position = offset.value();
  } else if (offset == kafka::kOffsetBeginning) {
    fetch.from_beginning = true;
  } else if (offset == kafka::kOffsetEnd) {
    fetch.position = log.LastStableOffset();  // read_committed's end
  } else {
    fetch.from_committed = offset.value();
  }
  return fetch;
}

// KIP-447 (require_stable): while a transaction holds offsets of the partition not
// committed yet, the committed offset is unstable and the consumer waits (librdkafka
// retries UNSTABLE_OFFSET_COMMIT); reading it earlier would redo what that
// transaction is about to commit. False while it waits.
bool StrictGroupConsumer::ResolveCommitted(const StrictCluster::Partition& log, int32_t partition,
                                           Fetch& fetch) {
  const TopicPartition where{spec_.topic, partition};
  if (cluster().HasPendingOffsets(spec_.group_id, where)) return false;
  const int64_t asked = *fetch.from_committed;
  fetch.from_committed.reset();
  if (const auto committed = group().committed.find(where); committed != group().committed.end()) {
    fetch.position = committed->second;
  } else if (spec_.error_on_lost_position) {
    fetch.lost_position = asked;  // nothing committed: the same as a lost position
  } else {
    fetch.position = log.log_start;
  }
  return true;
}

// Refuses a partition the group has not given this member: fetching it would be the
// double processing the group exists to prevent.
KafkaError StrictGroupConsumer::IncrementalAssign(
    const std::vector<kafka::PartitionOffset>& partitions) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  const StrictCluster::Member* m = member();
  std::map<int32_t, Fetch> added;
  for (const auto& [partition, offset] : partitions) {
    const auto* log = cluster().FindPartition(spec_.topic, partition.value());
    if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, spec_.topic, partition.value());
    if (m == nullptr || m->owned.count(partition.value()) == 0) {
      return Fail(ErrorKind::kFailed, "NOT_OWNED",
                  "partition " + std::to_string(partition.value()) + " is not this member's");
    }
    if (assigned_.count(partition.value()) > 0 || added.count(partition.value()) > 0) {
      return Fail(ErrorKind::kFailed, "CONFLICT", "partition already assigned");
    }
    added[partition.value()] = StartFetch(*log, offset);
  }
  StrictCluster::Member* owner = member();
  for (const auto& [p, fetch] : added) owner->assign_awaited.erase(p);
  if (owner != nullptr && owner->assign_awaited.empty() && owner->revoke_told.empty()) {
    owner->stalled_since_ms = -1;
  }
  assigned_.merge(added);
  return {};
}

KafkaError StrictGroupConsumer::IncrementalUnassign(
    const std::vector<base::Partition>& partitions) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  for (base::Partition p : partitions) {
    if (assigned_.count(p.value()) == 0) {
      return Fail(ErrorKind::kFailed, "INVALID_ARG",
                  "partition " + std::to_string(p.value()) + " is not in the current assignment");
    }
  }
  for (base::Partition p : partitions) assigned_.erase(p.value());
  CompleteRevocation();
  return {};
}

KafkaError StrictGroupConsumer::Seek(const std::vector<kafka::PartitionOffset>& positions) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  if (auto injected = cluster().TakeInjection(Call::kSeek, id_.instance)) return *injected;
  for (const auto& [partition, offset] : positions) {
    if (assigned_.count(partition.value()) == 0) {
      return Fail(ErrorKind::kFailed, "UNKNOWN_PARTITION", "seek on a partition not assigned");
    }
    if (base::IsLogical(offset) && offset != kafka::kOffsetBeginning &&
        offset != kafka::kOffsetEnd) {
      return Fail(ErrorKind::kFailed, "INVALID_ARG",
                  "bad offset " + std::to_string(offset.value()));
    }
  }
  for (const auto& [partition, offset] : positions) {
    Fetch& fetch = assigned_[partition.value()];
    const auto& log = *cluster().FindPartition(spec_.topic, partition.value());
    fetch.position = offset == kafka::kOffsetBeginning ? log.log_start
                     : offset == kafka::kOffsetEnd     ? log.LastStableOffset()
                                                       : offset.value();
    fetch.from_committed.reset();
    fetch.from_beginning = false;
    fetch.lost_position.reset();
    fetch.stopped = false;
  }
  return {};
}

// Partitions not assigned are ignored, as librdkafka only flags them per partition.
KafkaError StrictGroupConsumer::SetPaused(const std::vector<base::Partition>& partitions,
                                          bool paused) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  for (base::Partition p : partitions) {
    if (const auto it = assigned_.find(p.value()); it != assigned_.end()) {
      it->second.paused = paused;
    }
  }
  return {};
}

bool StrictGroupConsumer::AssignmentLost() {
  std::lock_guard lock(cluster().mu);
  if (id_.crashed()) return false;
  Touch();
  const bool dropped = !member_id_.empty() && member() == nullptr;
  return losing_ || fenced_ || (dropped && cluster().drop_learned.count(id_.instance) > 0);
}

// A live member carries the group's current generation (the real client rejoins in
// the background); one the group dropped still carries what it saw last.
std::unique_ptr<kafka::GroupMetadata> StrictGroupConsumer::Metadata() {
  std::lock_guard lock(cluster().mu);
  if (!id_.crashed()) Touch();
  const int32_t generation = member() != nullptr ? group().generation : seen_generation_;
  return std::make_unique<StrictGroupMetadata>(spec_.group_id, member_id_, generation,
                                               spec_.group_instance_id);
}

base::Offset StrictGroupConsumer::CachedHighWatermark(base::Partition partition) {
  std::lock_guard lock(cluster().mu);
  if (id_.crashed()) return base::Offset(-1);
  Touch();
  const auto* log = cluster().FindPartition(spec_.topic, partition.value());
  // A partition that cannot be fetched tells its fetcher nothing new.
  if (log == nullptr || cluster().leaderless.contains({spec_.topic, partition.value()})) {
    return base::Offset(-1);
  }
  return base::Offset(log->HighWatermark());
}

KafkaError StrictGroupConsumer::QueryWatermarks(base::Partition partition, base::Offset& low,
                                                base::Offset& high, std::chrono::milliseconds) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  const auto* log = cluster().FindPartition(spec_.topic, partition.value());
  if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, spec_.topic, partition.value());
  if (cluster().leaderless.contains({spec_.topic, partition.value()})) {
    // librdkafka asks the leader it knew, or finds none to ask, and says so at once.
    return Fail(ErrorKind::kFailed, "NOT_LEADER_FOR_PARTITION",
                spec_.topic + "/" + std::to_string(partition.value()) + " has no leader");
  }
  low = base::Offset(log->log_start);
  high = base::Offset(log->LastStableOffset());  // read_committed asks for the stable end
  return {};
}

KafkaError StrictGroupConsumer::QueryEnd(base::Partition partition, base::Offset& end,
                                         std::chrono::milliseconds timeout) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  if (auto injected = cluster().TakeInjection(Call::kQueryEnd, id_.instance)) {
    if (injected->code == "_TIMED_OUT") cluster().Advance(timeout);
    return *injected;
  }
  if (const auto delay =
          cluster().answer_delay_ms.find(cluster().LeaderOf(spec_.topic, partition.value()));
      delay != cluster().answer_delay_ms.end() && delay->second > 0) {
    if (delay->second >= timeout.count()) {
      cluster().Advance(timeout);
      return Fail(ErrorKind::kRetriable, "_TIMED_OUT", "Local: Timed out");
    }
    cluster().Advance(std::chrono::milliseconds(delay->second));
  }
  const auto* log = cluster().FindPartition(spec_.topic, partition.value());
  if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, spec_.topic, partition.value());
  if (cluster().leaderless.contains({spec_.topic, partition.value()})) {
    // librdkafka asks the leader it knew, or finds none to ask, and says so at once.
    return Fail(ErrorKind::kFailed, "NOT_LEADER_FOR_PARTITION",
                spec_.topic + "/" + std::to_string(partition.value()) + " has no leader");
  }
  end = base::Offset(log->LastStableOffset());  // read_committed asks for the stable end
  return {};
}

KafkaError StrictGroupConsumer::CommittedOffset(base::Partition partition,
                                                std::optional<base::Offset>& committed,
                                                std::chrono::milliseconds) {
  std::lock_guard lock(cluster().mu);
  if (auto error = Usable()) return error;
  committed.reset();
  const auto group = cluster().groups.find(spec_.group_id);
  if (group == cluster().groups.end()) return {};
  const auto it = group->second.committed.find({spec_.topic, partition.value()});
  if (it != group->second.committed.end()) committed = base::Offset(it->second);
  return {};
}

void StrictGroupConsumer::Close() {
  std::vector<base::Partition> held;
  kafka::RebalanceListener* listener = nullptr;
  bool lost = false;
  {
    std::lock_guard lock(cluster().mu);
    if (id_.crashed() || closed_) return;
    Touch();
    held = Keys(assigned_);
    listener = listener_;
    lost = fenced_ || Replaced();
  }
  if (listener != nullptr && !held.empty()) listener->OnRevoked(held, lost);
  std::lock_guard lock(cluster().mu);
  if (id_.crashed() || closed_) return;
  assigned_.clear();
  closed_ = true;
  Depart();
}

// A dynamic member, or a static one told to leave, leaves: the group rebalances. A
// static member that stays keeps its partitions, with no heartbeats, until it comes
// back or its session times out. A replaced one is no member any more.
void StrictGroupConsumer::Depart() {
  StrictCluster::Member* m = member();
  if (m == nullptr || Replaced()) return;
  if (StaysOnClose()) {
    m->closed = true;
    return;
  }
  group().members.erase(member_id_);
  cluster().BumpAndRebalance(group());
}

// --- The factory -----------------------------------------------------------------

class StrictClients final : public kafka::Clients {
 public:
  explicit StrictClients(Identity identity) : id_(std::move(identity)) {}

  base::Result<std::unique_ptr<kafka::GroupConsumer>> NewGroupConsumer(
      const kafka::GroupConsumerSpec& spec) override {
    if (Dead()) return base::KafkaFailure("crashed");
    return std::unique_ptr<kafka::GroupConsumer>(std::make_unique<StrictGroupConsumer>(id_, spec));
  }
  base::Result<std::unique_ptr<kafka::TransactionalProducer>> NewTransactionalProducer(
      const kafka::TransactionalProducerSpec& spec) override {
    if (Dead()) return base::KafkaFailure("crashed");
    return std::unique_ptr<kafka::TransactionalProducer>(
        std::make_unique<StrictTransactionalProducer>(id_, spec));
  }
  base::Result<std::unique_ptr<kafka::PartitionReader>> NewPartitionReader(
      const std::string&) override {
    if (Dead()) return base::KafkaFailure("crashed");
    {
      std::lock_guard lock(id_.cluster->mu);
      if (auto injected = id_.cluster->TakeInjection(Call::kNewPartitionReader, id_.instance)) {
        return base::KafkaFailure(injected->ToString());
      }
    }
    return std::unique_ptr<kafka::PartitionReader>(std::make_unique<StrictPartitionReader>(id_));
  }
  base::Result<std::unique_ptr<kafka::PlainProducer>> NewPlainProducer(
      const kafka::PlainProducerSpec& spec) override {
    if (Dead()) return base::KafkaFailure("crashed");
    return std::unique_ptr<kafka::PlainProducer>(std::make_unique<StrictPlainProducer>(id_, spec));
  }
  base::Result<std::map<std::string, int>> PartitionCounts(std::chrono::milliseconds) override;
  base::Result<kafka::GroupDescription> DescribeGroup(const std::string& group,
                                                      std::chrono::milliseconds) override;
  base::Result<kafka::BrokerSetting> DescribeBrokerSetting(const std::string& name,
                                                           std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    if (id_.crashed()) return base::KafkaFailure("crashed");
    kafka::BrokerSetting out;
    if (!id_.cluster->broker_settings_described) {
      out.untold.push_back("broker 1: Broker: Cluster authorization failed");
    } else if (name != "transaction.abort.timed.out.transaction.cleanup.interval.ms") {
      out.untold.push_back("broker 1: its answer does not hold the setting");
    } else {
      out.told[1] = std::to_string(id_.cluster->abort_interval.count());
    }
    return out;
  }
  base::Result<base::Offset> HighWatermark(const std::string& topic, base::Partition partition,
                                           std::chrono::milliseconds) override;
  base::Result<base::Offset> LogStart(const std::string& topic, base::Partition partition,
                                      std::chrono::milliseconds) override {
    std::lock_guard lock(id_.cluster->mu);
    if (id_.crashed()) return base::KafkaFailure("crashed");
    const auto* log = id_.cluster->FindPartition(topic, partition.value());
    if (log == nullptr)
      return base::KafkaFailure(
          UnknownPartition(ErrorKind::kFailed, topic, partition.value()).ToString());
    return base::Offset(log->log_start);
  }
  std::optional<size_t> RetentionBytes(const std::string& topic) override {
    const std::optional<kafka::TopicSettings> told = DescribeTopic(topic);
    if (!told || !told->retention_bytes || *told->retention_bytes <= 0) return std::nullopt;
    return static_cast<size_t>(*told->retention_bytes);
  }
  std::optional<size_t> MaxMessageBytes(const std::string& topic) override {
    std::lock_guard lock(id_.cluster->mu);
    if (id_.crashed() || id_.cluster->settings_held || id_.cluster->topics.count(topic) == 0) {
      return std::nullopt;
    }
    const auto it = id_.cluster->max_message_bytes.find(topic);
    if (it != id_.cluster->max_message_bytes.end() && !it->second.described) return std::nullopt;
    return id_.cluster->MaxMessageBytes(topic);
  }
  std::optional<kafka::TopicSettings> DescribeTopic(const std::string& topic) override;

 private:
  bool Dead() const {
    std::lock_guard lock(id_.cluster->mu);
    return id_.crashed();
  }

  const Identity id_;
};

std::optional<kafka::TopicSettings> StrictClients::DescribeTopic(const std::string& topic) {
  kafka::TopicSettings told;
  told.max_message_bytes = MaxMessageBytes(topic);
  std::lock_guard lock(id_.cluster->mu);
  const auto topic_it = id_.cluster->topics.find(topic);
  if (id_.crashed() || topic_it == id_.cluster->topics.end()) return kafka::TopicSettings{};
  if (id_.cluster->settings_held) return std::nullopt;
  if (id_.cluster->retention_described[topic] && !topic_it->second.empty()) {
    const size_t bytes = topic_it->second.front().retention_bytes;
    told.retention_bytes = bytes > 0 ? static_cast<int64_t>(bytes) : -1;
  }
  if (const auto it = id_.cluster->retention_ms.find(topic);
      it != id_.cluster->retention_ms.end() && it->second.described) {
    told.retention_ms = it->second.ms;
  }
  if (const auto it = id_.cluster->cleanup_policy.find(topic);
      it != id_.cluster->cleanup_policy.end()) {
    told.cleanup_policy = it->second;
  }
  if (const auto it = id_.cluster->timestamp_rules.find(topic);
      it != id_.cluster->timestamp_rules.end() && it->second.described) {
    told.timestamp_type = it->second.type;
    told.timestamp_after_max_ms =
        it->second.after_max_ms.value_or(std::numeric_limits<int64_t>::max());
  }
  return told;
}

// The group's members as its coordinator knows them: one whose process died stays
// until its session times out (Advance).
// As a broker that lists groups to a principal allowed Describe on them: a group is
// listed once a member joined it, and stays listed (its committed offsets are kept).
base::Result<kafka::GroupDescription> StrictClients::DescribeGroup(const std::string& group,
                                                                   std::chrono::milliseconds) {
  std::lock_guard lock(id_.cluster->mu);
  if (id_.crashed()) return base::KafkaFailure("crashed");
  if (auto injected = id_.cluster->TakeInjection(Call::kDescribeGroup, id_.instance)) {
    // A retriable error may pass; another is a lasting refusal (clients.h).
    return base::Error(
        injected->kind == ErrorKind::kRetriable ? base::Errc::kUnavailable : base::Errc::kKafka,
        injected->ToString());
  }
  kafka::GroupDescription described;
  const auto g = id_.cluster->groups.find(group);
  if (g == id_.cluster->groups.end()) return described;
  described.listed = true;
  for (const auto& [id, member] : g->second.members) {
    described.members.push_back({"oncecount-" + member.instance, "/" + member.instance, id});
  }
  return described;
}

base::Result<std::map<std::string, int>> StrictClients::PartitionCounts(std::chrono::milliseconds) {
  std::lock_guard lock(id_.cluster->mu);
  if (id_.crashed()) return base::KafkaFailure("crashed");
  if (auto injected = id_.cluster->TakeInjection(Call::kPartitionCounts, id_.instance)) {
    return base::KafkaFailure(injected->ToString());
  }
  std::map<std::string, int> counts;
  for (const auto& [name, partitions] : id_.cluster->topics) {
    // A list of every topic holds only those the principal may describe.
    if (!id_.cluster->describe_denied.contains(name)) {
      counts[name] = static_cast<int>(partitions.size());
    }
  }
  return counts;
}

base::Result<base::Offset> StrictClients::HighWatermark(const std::string& topic,
                                                        base::Partition partition,
                                                        std::chrono::milliseconds) {
  std::lock_guard lock(id_.cluster->mu);
  if (id_.crashed()) return base::KafkaFailure("crashed");
  if (auto injected = id_.cluster->TakeInjection(Call::kHighWatermark, id_.instance)) {
    return base::KafkaFailure(injected->ToString());
  }
  const auto* log = id_.cluster->FindPartition(topic, partition.value());
  if (log == nullptr) {
    return base::KafkaFailure(
        UnknownPartition(ErrorKind::kFailed, topic, partition.value()).ToString());
  }
  return base::Offset(log->HighWatermark());
}

}  // namespace

// --- StrictKafka -----------------------------------------------------------------

StrictKafka::StrictKafka(int64_t start_wall_ms)
    : cluster_(std::make_shared<StrictCluster>(start_wall_ms)) {}

StrictKafka::~StrictKafka() = default;

base::Clock& StrictKafka::clock() {
  return cluster_->clock;
}

void StrictKafka::Advance(std::chrono::milliseconds duration) {
  cluster_->Advance(duration);
}

void StrictKafka::StepWallClock(std::chrono::milliseconds step) {
  cluster_->clock.StepWall(step);
}

void StrictKafka::set_session_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard lock(cluster_->mu);
  cluster_->session_timeout = timeout;
}

void StrictKafka::set_max_poll_interval(std::chrono::milliseconds interval) {
  std::lock_guard lock(cluster_->mu);
  cluster_->max_poll_interval = interval;
}

void StrictKafka::set_broker_settings_described(bool described) {
  std::lock_guard lock(cluster_->mu);
  cluster_->broker_settings_described = described;
}

void StrictKafka::set_transaction_abort_interval(std::chrono::milliseconds interval) {
  std::lock_guard lock(cluster_->mu);
  cluster_->abort_interval = interval;
  const int64_t step = std::max<int64_t>(interval.count(), 1);
  cluster_->next_abort_check_ms = (cluster_->NowMs() / step + 1) * step;
}

void StrictKafka::HoldProduce(const std::string& instance) {
  std::lock_guard lock(cluster_->mu);
  cluster_->holding.insert(instance);
}

void StrictKafka::ReleaseProduce(const std::string& instance) {
  std::lock_guard lock(cluster_->mu);
  cluster_->holding.erase(instance);
  cluster_->Land(instance);
}

void StrictKafka::SetMaxMessageBytes(const std::string& topic, size_t bytes, bool described) {
  std::lock_guard lock(cluster_->mu);
  cluster_->max_message_bytes[topic] = {bytes, described};
}

KafkaError StrictKafka::CreateTopic(const std::string& name, int partitions) {
  std::lock_guard lock(cluster_->mu);
  if (partitions <= 0) return Fail(ErrorKind::kFailed, "INVALID_PARTITIONS", name);
  if (!cluster_->topics.emplace(name, static_cast<size_t>(partitions)).second) {
    return Fail(ErrorKind::kFailed, "TOPIC_ALREADY_EXISTS", name);
  }
  // Groups waiting for the topic see it in their next metadata refresh.
  for (auto& [id, group] : cluster_->groups) {
    if (group.topic == name && !group.members.empty()) cluster_->BumpAndRebalance(group);
  }
  return {};
}

KafkaError StrictKafka::DeleteTopic(const std::string& name) {
  std::lock_guard lock(cluster_->mu);
  if (cluster_->topics.erase(name) == 0) {
    return Fail(ErrorKind::kFailed, "UNKNOWN_TOPIC_OR_PARTITION", name);
  }
  // (ACLs are kept by name: a topic created again under it is denied as well.)
  std::erase_if(cluster_->leaderless, [&](const auto& p) { return p.first == name; });
  // Consumers see the topic gone at their next metadata refresh, and their group
  // revokes its partitions.
  for (auto& [id, group] : cluster_->groups) {
    if (group.topic == name && !group.members.empty()) cluster_->BumpAndRebalance(group);
  }
  return {};
}

KafkaError StrictKafka::AddPartitions(const std::string& topic, int partitions) {
  std::lock_guard lock(cluster_->mu);
  const auto it = cluster_->topics.find(topic);
  if (it == cluster_->topics.end()) {
    return Fail(ErrorKind::kFailed, "UNKNOWN_TOPIC_OR_PARTITION", topic);
  }
  auto& logs = it->second;
  if (partitions <= static_cast<int>(logs.size())) {
    return Fail(ErrorKind::kFailed, "INVALID_PARTITIONS",
                topic + " has " + std::to_string(logs.size()) + " partitions already");
  }
  const size_t retention_bytes = logs.front().retention_bytes;
  logs.resize(static_cast<size_t>(partitions));
  for (auto& log : logs) log.retention_bytes = retention_bytes;
  for (auto& [id, group] : cluster_->groups) {
    if (group.topic == topic && !group.members.empty()) cluster_->BumpAndRebalance(group);
  }
  return {};
}

void StrictKafka::SetRetentionMs(const std::string& topic, int64_t ms, bool described) {
  std::lock_guard lock(cluster_->mu);
  cluster_->retention_ms[topic] = {ms, described};
  cluster_->ApplyTimeRetention();
}

void StrictKafka::SetCleanupPolicy(const std::string& topic, std::string policy) {
  std::lock_guard lock(cluster_->mu);
  cluster_->cleanup_policy[topic] = std::move(policy);
}

void StrictKafka::SetTimestampRules(const std::string& topic, std::string type,
                                    std::optional<int64_t> after_max_ms, bool described) {
  std::lock_guard lock(cluster_->mu);
  cluster_->timestamp_rules[topic] = {std::move(type), after_max_ms, described};
}

void StrictKafka::SetLeader(const std::string& topic, int32_t partition, int32_t broker) {
  std::lock_guard lock(cluster_->mu);
  cluster_->led_by[{topic, partition}] = broker;
}

void StrictKafka::SetAnswerDelay(int32_t broker, std::chrono::milliseconds delay) {
  std::lock_guard lock(cluster_->mu);
  cluster_->answer_delay_ms[broker] = delay.count();
}

void StrictKafka::MakeLeaderless(const std::string& topic, int32_t partition, bool leaderless) {
  std::lock_guard lock(cluster_->mu);
  if (leaderless) {
    cluster_->leaderless.insert({topic, partition});
  } else {
    cluster_->leaderless.erase({topic, partition});
  }
}

void StrictKafka::DenyDescribe(const std::string& topic, bool denied) {
  std::lock_guard lock(cluster_->mu);
  const bool changed = denied ? cluster_->describe_denied.insert(topic).second
                              : cluster_->describe_denied.erase(topic) > 0;
  if (!changed) return;
  for (auto& [id, group] : cluster_->groups) {
    if (group.topic == topic && !group.members.empty()) cluster_->BumpAndRebalance(group);
  }
}

void StrictKafka::HoldSettingsAnswers(bool held) {
  std::lock_guard lock(cluster_->mu);
  cluster_->settings_held = held;
}

void StrictKafka::SetRetentionBytes(const std::string& topic, size_t bytes, bool described) {
  std::lock_guard lock(cluster_->mu);
  for (auto& partition : cluster_->topics[topic]) partition.retention_bytes = bytes;
  cluster_->retention_described[topic] = described;
}

KafkaError StrictKafka::MakeUnreadable(const std::string& topic, int32_t partition, int64_t offset,
                                       bool stuck) {
  std::lock_guard lock(cluster_->mu);
  auto* log = cluster_->FindPartition(topic, partition);
  if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, topic, partition);
  if (offset < log->log_start || offset >= log->HighWatermark()) {
    return Fail(ErrorKind::kFailed, "OFFSET_OUT_OF_RANGE", std::to_string(offset));
  }
  log->At(offset).unreadable = true;
  log->At(offset).stuck = stuck;
  return {};
}

KafkaError StrictKafka::DeleteRecordsBefore(const std::string& topic, int32_t partition,
                                            int64_t offset) {
  std::lock_guard lock(cluster_->mu);
  auto* log = cluster_->FindPartition(topic, partition);
  if (log == nullptr) return UnknownPartition(ErrorKind::kFailed, topic, partition);
  if (offset < 0 || offset > log->HighWatermark()) {
    return Fail(ErrorKind::kFailed, "OFFSET_OUT_OF_RANGE", std::to_string(offset));
  }
  while (log->log_start < offset) log->DropOldest();
  return {};
}

std::unique_ptr<kafka::Clients> StrictKafka::ClientsFor(std::string instance) {
  std::lock_guard lock(cluster_->mu);
  const int incarnation = cluster_->incarnations[instance];
  return std::make_unique<StrictClients>(Identity{cluster_, std::move(instance), incarnation});
}

void StrictKafka::Freeze(const std::string& instance) {
  std::lock_guard lock(cluster_->mu);
  cluster_->frozen.insert(instance);
}

void StrictKafka::Thaw(const std::string& instance) {
  std::lock_guard lock(cluster_->mu);
  cluster_->frozen.erase(instance);
}

void StrictKafka::StallReading(const std::string& instance, const std::string& topic) {
  std::lock_guard lock(cluster_->mu);
  cluster_->stalled.insert({instance, topic});
}

void StrictKafka::ResumeReading(const std::string& instance, const std::string& topic) {
  std::lock_guard lock(cluster_->mu);
  cluster_->stalled.erase({instance, topic});
}

void StrictKafka::Crash(const std::string& instance) {
  std::lock_guard lock(cluster_->mu);
  ++cluster_->incarnations[instance];
  cluster_->in_flight.erase(instance);  // the queue dies with the process
}

void StrictKafka::InjectError(Call call, KafkaError error, int times, std::string instance) {
  std::lock_guard lock(cluster_->mu);
  if (times <= 0) return;
  cluster_->injections.push_back({call, std::move(error), times, std::move(instance)});
}

void StrictKafka::LearnDropAt(Call call, std::string instance) {
  std::lock_guard lock(cluster_->mu);
  cluster_->drop_learned_at[std::move(instance)] = call;
}

void StrictKafka::ObserveAt(Call call, std::string instance, std::function<void()> observe) {
  std::lock_guard lock(cluster_->mu);
  cluster_->observers.push_back({call, std::move(instance), std::move(observe)});
}

void StrictKafka::CrashAt(Call call, std::string instance, int skip) {
  std::lock_guard lock(cluster_->mu);
  cluster_->injections.push_back({call, Crashed(), 1, std::move(instance), true, skip});
}

std::vector<StrictKafka::StoredEntry> StrictKafka::Entries(const std::string& topic,
                                                           int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  std::vector<StoredEntry> entries;
  if (const auto* log = cluster_->FindPartition(topic, partition)) {
    for (const auto& e : log->entries) {
      entries.push_back(
          {e.offset, e.state, e.key, e.value, e.timestamp_ms, e.transactional_id, e.headers});
    }
  }
  return entries;
}

std::vector<std::string> StrictKafka::CommittedValues(const std::string& topic,
                                                      int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  std::vector<std::string> values;
  if (const auto* log = cluster_->FindPartition(topic, partition)) {
    for (const auto& e : log->entries) {
      if (e.state == EntryState::kCommitted) values.push_back(e.value.value_or(""));
    }
  }
  return values;
}

std::optional<int64_t> StrictKafka::CommittedOffset(const std::string& group,
                                                    const std::string& topic,
                                                    int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  const auto g = cluster_->groups.find(group);
  if (g == cluster_->groups.end()) return std::nullopt;
  const auto it = g->second.committed.find({topic, partition});
  if (it == g->second.committed.end()) return std::nullopt;
  return it->second;
}

int64_t StrictKafka::HighWatermark(const std::string& topic, int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  const auto* log = cluster_->FindPartition(topic, partition);
  return log == nullptr ? -1 : log->HighWatermark();
}

int64_t StrictKafka::LastStableOffset(const std::string& topic, int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  const auto* log = cluster_->FindPartition(topic, partition);
  return log == nullptr ? -1 : log->LastStableOffset();
}

int64_t StrictKafka::LogStart(const std::string& topic, int32_t partition) const {
  std::lock_guard lock(cluster_->mu);
  const auto* log = cluster_->FindPartition(topic, partition);
  return log == nullptr ? -1 : log->log_start;
}

int32_t StrictKafka::Generation(const std::string& group) const {
  std::lock_guard lock(cluster_->mu);
  const auto g = cluster_->groups.find(group);
  return g == cluster_->groups.end() ? 0 : g->second.generation;
}

std::map<int32_t, std::string> StrictKafka::Owners(const std::string& group) const {
  std::lock_guard lock(cluster_->mu);
  std::map<int32_t, std::string> owners;
  const auto g = cluster_->groups.find(group);
  if (g == cluster_->groups.end()) return owners;
  for (const auto& [id, member] : g->second.members) {
    for (int32_t p : member.owned) owners[p] = member.instance;
  }
  return owners;
}

std::vector<std::string> StrictKafka::Members(const std::string& group) const {
  std::lock_guard lock(cluster_->mu);
  std::vector<std::string> ids;
  const auto g = cluster_->groups.find(group);
  if (g == cluster_->groups.end()) return ids;
  for (const auto& [id, member] : g->second.members) ids.push_back(id);
  return ids;
}

KafkaError StrictKafka::ProduceForTest(const std::string& topic, int32_t partition,
                                       std::optional<std::string> key,
                                       std::optional<std::string> value,
                                       std::vector<kafka::Header> headers, int64_t timestamp_ms) {
  std::lock_guard lock(cluster_->mu);
  kafka::OutgoingRecord record;
  record.topic = topic;
  record.partition = base::Partition(partition);
  record.headers = std::move(headers);
  if (key) record.key = *key;
  if (value) record.value = *value;
  if (const auto it = cluster_->timestamp_rules.find(topic);
      it != cluster_->timestamp_rules.end()) {
    const int64_t now = cluster_->clock.WallMs();
    if (it->second.type == "LogAppendTime") {
      timestamp_ms = -1;  // the broker stamps it at append
    } else if (it->second.after_max_ms && timestamp_ms > now &&
               timestamp_ms - now > *it->second.after_max_ms) {
      return Fail(ErrorKind::kFailed, "INVALID_TIMESTAMP",
                  "timestamp " + std::to_string(timestamp_ms) + " is more than " +
                      std::to_string(*it->second.after_max_ms) + " ms ahead of the broker");
    }
  }
  TopicPartition where;
  if (auto error = cluster_->AppendRecord(record, "", &where)) return error;
  if (timestamp_ms >= 0) {
    auto* log = cluster_->FindPartition(where.first, where.second);
    log->entries.back().timestamp_ms = timestamp_ms;
  }
  return {};
}

}  // namespace oncecount::testing
