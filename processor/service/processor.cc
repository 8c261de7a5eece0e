#include "processor/service/processor.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "processor/changelog/lineage.h"
#include "processor/kafka/partition_reader.h"
#include "processor/replica/replicator.h"
#include "processor/service/shard_worker.h"
#include "processor/shard/shard_state.h"

namespace oncecount::service {
namespace {

constexpr int kTxnTimeoutMs = 30000;
constexpr int kTxnAttempts = 5;
// Messages taken from the consumer between two looks at the clock and the commit timer.
constexpr int kBurst = 2048;
// Messages handed to a worker at a time: enough to amortize the mailbox, few enough
// that workers start early.
constexpr size_t kHandOver = 512;

using Clock = std::chrono::steady_clock;

struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using KafkaError = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

std::string Describe(const KafkaError& e) {
  return e ? rd_kafka_error_string(e.get()) : "";
}

// One assigned shard, as the processor sees it: its state lives on a worker; the
// processor knows where it is in its life and what goes into its views.
struct ShardSlot {
  shard::ShardPhase phase = shard::ShardPhase::kRestoring;
  std::string failure;
  int64_t high_watermark = 0;
  uint64_t committed_seq = 0;  // the last changelog batch committed
  uint64_t transactions_committed = 0;
  uint64_t transactions_aborted = 0;
  uint64_t routed_since_commit = 0;  // messages handed to the worker since the last seal
  uint64_t input_lost = 0;           // input messages retention removed before they were applied
  // The state as of the last commit, without what only the processor knows.
  std::shared_ptr<const shard::ShardView> state_view;
};

}  // namespace

struct Processor::Impl {
  ProcessorOptions o;
  shard::StateBoard& board;
  std::vector<ShardWorker*> workers;
  replica::Replicator* replicator = nullptr;  // may be null: no replicas
  rd_kafka_t* consumer = nullptr;
  rd_kafka_t* producer = nullptr;
  kafka::Settings connection;
  std::map<int32_t, ShardSlot> shards;
  bool txn_open = false;
  bool txn_broken = false;  // a produce failed: the open transaction must abort
  std::string fatal;
  std::string encode_buffer;
  // Messages routed to each worker, handed over kHandOver at a time.
  std::vector<std::vector<MessagePtr>> staged;
  uint64_t routed_since_commit = 0;
  bool commit_soon = false;  // a shard's batch reached max_batch_events
  bool assignment_seen = false;
  bool stopping = false;  // Run is shutting down: assignments are taken, not served
  Clock::time_point last_commit = Clock::now();

  Impl(ProcessorOptions options, shard::StateBoard& b, std::vector<ShardWorker*> w,
       replica::Replicator* r)
      : o(std::move(options)),
        board(b),
        workers(std::move(w)),
        replicator(r),
        staged(workers.size()) {}

  ShardWorker& WorkerOf(int32_t partition) {
    return *workers[static_cast<size_t>(partition) % workers.size()];
  }

  ~Impl() {
    if (consumer != nullptr) rd_kafka_destroy(consumer);
    if (producer != nullptr) rd_kafka_destroy(producer);
  }

  void Log(const std::string& line) const {
    if (o.log) o.log(line);
  }

  // --- Kafka clients -----------------------------------------------------------

  std::string CreateClients() {
    connection = {{"bootstrap.servers", o.bootstrap_servers}};
    kafka::Settings consumer_defaults = connection;
    // A shard resumes where its changelog says; if retention removed those input
    // records before they were applied, say so (OnInputGone) rather than skip them.
    consumer_defaults.push_back({"auto.offset.reset", "error"});
    // A fetch returns as soon as data is there on a real broker, but the embedded
    // cluster holds every fetch for the full wait: keep it short for latency.
    consumer_defaults.push_back({"fetch.wait.max.ms", "20"});
    // librdkafka stops fetching once this many messages wait in the consumer's queue
    // (all partitions together) and looks again only about once a second: at the
    // default of 100,000 a backlog was read in bursts with idle seconds between them.
    consumer_defaults.push_back({"queued.min.messages", "1000000"});
    auto consumer_conf =
        kafka::MakeClientConfig(consumer_defaults, o.properties,
                                {{"group.id", o.group_id},
                                 {"partition.assignment.strategy", "cooperative-sticky"},
                                 {"enable.auto.commit", "false"},
                                 {"enable.auto.offset.store", "false"},
                                 {"isolation.level", "read_committed"},
                                 {"enable.partition.eof", "false"}});
    if (auto* e = std::get_if<std::string>(&consumer_conf)) return *e;
    rd_kafka_conf_t* cconf = std::get<rd_kafka_conf_t*>(consumer_conf);
    rd_kafka_conf_set_rebalance_cb(cconf, &Impl::OnRebalance);
    rd_kafka_conf_set_opaque(cconf, this);
    char error[512];
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, error, sizeof error);
    if (consumer == nullptr) {
      rd_kafka_conf_destroy(cconf);
      return std::string("cannot create the consumer: ") + error;
    }
    rd_kafka_poll_set_consumer(consumer);

    kafka::Settings producer_defaults = connection;
    producer_defaults.push_back({"linger.ms", "5"});
    auto producer_conf =
        kafka::MakeClientConfig(producer_defaults, o.properties,
                                {{"transactional.id", o.group_id + "-" + o.instance_id},
                                 {"enable.idempotence", "true"},
                                 {"message.max.bytes", "1000000"}});
    if (auto* e = std::get_if<std::string>(&producer_conf)) return *e;
    rd_kafka_conf_t* pconf = std::get<rd_kafka_conf_t*>(producer_conf);
    // Delivery reports also wake the flush inside commit_transaction as soon as the
    // last record is acknowledged; without them it polls in 10 ms steps.
    rd_kafka_conf_set_dr_msg_cb(pconf, &Impl::OnDelivery);
    rd_kafka_conf_set_opaque(pconf, this);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, error, sizeof error);
    if (producer == nullptr) {
      rd_kafka_conf_destroy(pconf);
      return std::string("cannot create the transactional producer: ") + error;
    }
    KafkaError init(rd_kafka_init_transactions(producer, kTxnTimeoutMs));
    if (init) return "init_transactions: " + Describe(init);
    return {};
  }

  std::string CheckTopics() {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(consumer, 1, nullptr, &md, 10000);
    if (e) return std::string("cannot read the cluster's metadata: ") + rd_kafka_err2str(e);
    std::map<std::string, int> partitions;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        partitions[md->topics[i].topic] = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
    for (const std::string& t : {o.input_topic, o.dlq_topic, o.changelog_topic}) {
      if (!partitions.contains(t)) {
        return "topic " + t + " does not exist; create it (the changelog with as many " +
               "partitions as " + o.input_topic + ")";
      }
    }
    if (partitions[o.changelog_topic] != partitions[o.input_topic]) {
      return "topic " + o.changelog_topic + " has " +
             std::to_string(partitions[o.changelog_topic]) + " partitions; it needs " +
             std::to_string(partitions[o.input_topic]) + ", as many as " + o.input_topic;
    }
    board.SetPartitionCount(partitions[o.input_topic]);
    return {};
  }

  // --- Transactions ------------------------------------------------------------

  void Begin() {
    KafkaError e(rd_kafka_begin_transaction(producer));
    if (e) {
      fatal = "begin_transaction: " + Describe(e);
      return;
    }
    txn_open = true;
    txn_broken = false;
  }

  void Produce(const std::string& topic, int32_t partition, const void* key, size_t key_len,
               const void* value, size_t value_len, rd_kafka_headers_t* headers) {
    while (true) {
      const rd_kafka_resp_err_t e = rd_kafka_producev(
          producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE(const_cast<void*>(value), value_len),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(producer, 10);
        continue;
      }
      if (e) {
        if (headers != nullptr) rd_kafka_headers_destroy(headers);
        Log(std::string("produce to ") + topic + " failed: " + rd_kafka_err2str(e));
        txn_broken = true;
      }
      return;
    }
  }

  void ProduceEncoded(int32_t partition, const std::string& record) {
    Produce(o.changelog_topic, partition, nullptr, 0, record.data(), record.size(), nullptr);
  }

  void ProduceRecord(int32_t partition, const changelog::Record& record) {
    encode_buffer.clear();
    changelog::EncodeRecord(record, encode_buffer);
    ProduceEncoded(partition, encode_buffer);
  }

  void ProduceDeadLetter(DeadLetter& d) {
    // The producer owns the headers once the produce call succeeds.
    rd_kafka_headers_t* headers = d.headers.release();
    Produce(o.dlq_topic, RD_KAFKA_PARTITION_UA, d.key ? d.key->data() : nullptr,
            d.key ? d.key->size() : 0, d.value ? d.value->data() : nullptr,
            d.value ? d.value->size() : 0, headers);
  }

  // Runs one transactional step, retrying what librdkafka calls retriable. Returns
  // the error that remains (nullptr: success).
  template <class Step>
  KafkaError Retry(Step step) {
    for (int attempt = 1;; ++attempt) {
      KafkaError e(step());
      if (!e || !rd_kafka_error_is_retriable(e.get()) || attempt == kTxnAttempts) return e;
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    }
  }

  // --- Routing -------------------------------------------------------------------

  void Route(MessagePtr m) {
    auto it = shards.find(m->partition);
    if (it == shards.end() || it->second.phase != shard::ShardPhase::kRunning) return;
    ShardSlot& slot = it->second;
    if (++slot.routed_since_commit >= o.max_batch_events) commit_soon = true;
    ++routed_since_commit;
    std::vector<MessagePtr>& batch = staged[static_cast<size_t>(m->partition) % workers.size()];
    batch.push_back(std::move(m));
    if (batch.size() >= kHandOver)
      HandOver(static_cast<size_t>(batch.back()->partition) % workers.size());
  }

  void HandOver(size_t worker) {
    if (staged[worker].empty()) return;
    workers[worker]->Apply(std::move(staged[worker]));
    staged[worker].clear();  // moved-from: valid, unspecified
  }

  void HandOverAll() {
    for (size_t w = 0; w < workers.size(); ++w) HandOver(w);
  }

  // --- Transactions ----------------------------------------------------------------

  // Seals every shard's batch on its worker and commits them, with their dead
  // letters and input offsets, in one transaction; after an error that requires
  // it, aborts and restores every shard from its changelog.
  void Commit() {
    if (rd_kafka_assignment_lost(consumer)) return;  // the revocation drops the work
    HandOverAll();
    last_commit = Clock::now();
    commit_soon = false;
    routed_since_commit = 0;
    for (auto& [p, slot] : shards) slot.routed_since_commit = 0;
    // All workers seal at once; each answers once it has applied what it was given.
    std::vector<std::future<std::vector<SealedShard>>> parts;
    for (ShardWorker* w : workers) parts.push_back(w->Seal());
    std::vector<SealedShard> sealed;
    for (auto& part : parts) {
      for (SealedShard& s : part.get()) sealed.push_back(std::move(s));
    }
    if (sealed.empty() || !fatal.empty()) return;
    Begin();
    if (!fatal.empty()) return;
    for (SealedShard& s : sealed) {
      ProduceEncoded(s.partition, s.batch);
      for (const std::string& chunk : s.snapshot) ProduceEncoded(s.partition, chunk);
      for (DeadLetter& d : s.dead_letters) ProduceDeadLetter(d);
    }
    KafkaError e;
    if (txn_broken) {
      e.reset(rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE, "a produce call failed"));
    }
    if (!e) {
      PartitionList offsets(rd_kafka_topic_partition_list_new(static_cast<int>(sealed.size())));
      for (const SealedShard& s : sealed) {
        rd_kafka_topic_partition_list_add(offsets.get(), o.input_topic.c_str(), s.partition)
            ->offset = s.next_offset;
      }
      rd_kafka_consumer_group_metadata_t* group = rd_kafka_consumer_group_metadata(consumer);
      e = Retry([&] {
        return rd_kafka_send_offsets_to_transaction(producer, offsets.get(), group, kTxnTimeoutMs);
      });
      rd_kafka_consumer_group_metadata_destroy(group);
    }
    if (!e) e = Retry([&] { return rd_kafka_commit_transaction(producer, kTxnTimeoutMs); });
    txn_open = false;
    if (!e && txn_broken) {
      e.reset(rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE, "a delivery failed"));
    }
    if (!e) {
      for (ShardWorker* w : workers) w->Committed();
      for (SealedShard& s : sealed) {
        ShardSlot& slot = shards[s.partition];
        slot.committed_seq = s.seq;
        ++slot.transactions_committed;
        slot.state_view = std::move(s.view);
        Publish(s.partition, slot);
      }
      return;
    }
    if (!rd_kafka_error_txn_requires_abort(e.get())) {
      // A fenced or otherwise broken producer: our shards belong to someone else now.
      fatal = "transaction commit failed: " + Describe(e);
      return;
    }
    Log("transaction aborted: " + Describe(e));
    KafkaError aborted(rd_kafka_abort_transaction(producer, kTxnTimeoutMs));
    if (aborted) {
      fatal = "abort_transaction: " + Describe(aborted);
      return;
    }
    std::vector<int32_t> all;
    for (auto& [p, slot] : shards) {
      ++slot.transactions_aborted;
      all.push_back(p);
    }
    RestoreAndSeek(all, /*after_abort=*/true);
  }

  // --- Restore -------------------------------------------------------------------

  // Rebuilds the shards of `partitions` — from the hot replicas in `handoffs` and the
  // changelog records after them, the others from their whole changelog — claims
  // them with a new epoch in one transaction and hands them to their workers. After
  // an abort each claim continues from the shard's last committed batch, which drops
  // the aborted attempt for every reader.
  void Restore(const std::vector<int32_t>& partitions, bool after_abort,
               std::map<int32_t, replica::Handoff> handoffs = {}) {
    if (partitions.empty()) return;
    const auto start = Clock::now();
    std::map<int32_t, uint64_t> committed;
    std::map<ShardWorker*, std::vector<int32_t>> to_drop;
    for (int32_t p : partitions) {
      ShardSlot& slot = shards[p];
      if (after_abort) committed[p] = slot.committed_seq;
      slot.phase = shard::ShardPhase::kRestoring;
      slot.state_view.reset();
      to_drop[&WorkerOf(p)].push_back(p);
      Publish(p, slot);
    }
    // Whatever the workers still hold for these shards is ahead of the changelog.
    for (auto& [worker, dropped] : to_drop) worker->Drop(std::move(dropped));

    std::vector<changelog::ClaimRecord> claims;
    std::vector<std::unique_ptr<shard::ShardState>> restored;
    std::vector<int32_t> cold;
    TakeOver(handoffs, claims, restored);
    for (int32_t p : partitions) {
      if (!handoffs.contains(p)) cold.push_back(p);
    }
    RestoreCold(cold, committed, claims, restored);
    WriteClaims(claims);
    if (!fatal.empty()) return;
    for (std::unique_ptr<shard::ShardState>& state : restored) {
      const int32_t p = state->partition();
      ShardSlot& slot = shards[p];
      slot.phase = shard::ShardPhase::kRunning;
      slot.committed_seq = state->committed_seq();
      shard::ShardView base;
      base.target_fpp = o.dedup.target_fpp;
      slot.state_view = state->MakeView(std::move(base), o.now_ms());
      restored_positions[p] = state->position();
      WorkerOf(p).Adopt(std::move(state));
      Publish(p, slot);
    }
    Log("restored " + std::to_string(claims.size()) + " shard(s) in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()) +
        " ms");
  }

  // Brings hot replicas up to the changelog's end and claims them. A replica whose
  // lineage the tail cuts back is dropped from `handoffs` (it restores cold).
  void TakeOver(std::map<int32_t, replica::Handoff>& handoffs,
                std::vector<changelog::ClaimRecord>& claims,
                std::vector<std::unique_ptr<shard::ShardState>>& restored) {
    if (handoffs.empty()) return;
    std::vector<int32_t> taken;
    std::map<int32_t, int64_t> from;
    for (const auto& [p, h] : handoffs) {
      taken.push_back(p);
      from[p] = h.next_offset;
    }
    auto read = kafka::ReadPartitions(connection, o.properties, o.changelog_topic, taken,
                                      o.restore_timeout, from);
    if (std::holds_alternative<std::string>(read)) {
      Log("cannot read the changelog after the replicas (" + std::get<std::string>(read) +
          "); restoring from scratch");
      handoffs.clear();
      return;
    }
    auto& tails = std::get<kafka::PartitionRecords>(read);
    for (auto it = handoffs.begin(); it != handoffs.end();) {
      const int32_t p = it->first;
      replica::Handoff& h = it->second;
      size_t applied = 0;
      bool cut = false;
      for (const std::string& bytes : tails[p]) {
        auto record = changelog::DecodeRecord(bytes);
        if (!record) continue;
        const auto step = h.follower.Next(record.value());
        if (step == changelog::LineageFollower::Step::kApply) {
          h.state->Replay(std::get<changelog::BatchRecord>(record.value()));
          ++applied;
        } else if (step == changelog::LineageFollower::Step::kRebuild) {
          cut = true;
          break;
        }
      }
      if (cut) {
        Log("shard " + std::to_string(p) + ": its replica cannot follow the changelog's tail; " +
            "restoring from scratch");
        it = handoffs.erase(it);
        continue;
      }
      const changelog::ClaimRecord claim{p, h.follower.epoch() + 1, h.follower.applied_seq()};
      h.state->SetEpoch(claim.epoch);
      Log("shard " + std::to_string(p) + ": taken over from its standby replica at batch " +
          std::to_string(claim.base_seq) + " (" + std::to_string(applied) +
          " batches from the changelog's tail), epoch " + std::to_string(claim.epoch) +
          ", input offset " + std::to_string(h.state->position()));
      claims.push_back(claim);
      restored.push_back(std::move(h.state));
      ++it;
    }
  }

  void RestoreCold(const std::vector<int32_t>& partitions,
                   const std::map<int32_t, uint64_t>& committed,
                   std::vector<changelog::ClaimRecord>& claims,
                   std::vector<std::unique_ptr<shard::ShardState>>& restored) {
    if (partitions.empty()) return;
    auto read = kafka::ReadPartitions(connection, o.properties, o.changelog_topic, partitions,
                                      o.restore_timeout);
    if (auto* error = std::get_if<std::string>(&read)) {
      for (int32_t p : partitions) Fail(p, *error);
      return;
    }
    auto& records = std::get<kafka::PartitionRecords>(read);
    for (int32_t p : partitions) {
      changelog::LineageBuilder lineage;
      for (const std::string& r : records[p]) lineage.Add(std::string_view(r));
      const auto known = committed.find(p);
      const uint64_t base = known != committed.end() ? known->second : lineage.last_seq();
      const changelog::ClaimRecord claim{p, lineage.epoch() + 1, base};
      lineage.Add(changelog::Record{claim});
      auto plan = std::move(lineage).Finish();
      if (!plan) {
        Fail(p, plan.error());
        continue;
      }
      auto state = plan->snapshot ? shard::ShardState::FromSnapshot(*plan->snapshot)
                                  : shard::ShardState::Create(p, o.dedup, filter::Millis{0});
      if (!state) {
        Fail(p, state.error());
        continue;
      }
      for (const changelog::BatchRecord& b : plan->batches) state.value()->Replay(b);
      state.value()->SetEpoch(claim.epoch);
      Log("shard " + std::to_string(p) + ": restored " + std::to_string(plan->batches.size()) +
          " batches" +
          (plan->snapshot ? " after snapshot " + std::to_string(plan->snapshot_seq) : "") +
          ", epoch " + std::to_string(claim.epoch) + ", input offset " +
          std::to_string(state.value()->position()));
      claims.push_back(claim);
      restored.push_back(std::move(state.value()));
    }
  }

  void WriteClaims(const std::vector<changelog::ClaimRecord>& claims) {
    if (claims.empty() || !fatal.empty()) return;
    Begin();
    if (!fatal.empty()) return;
    for (const auto& claim : claims) ProduceRecord(claim.partition, claim);
    KafkaError e = Retry([&] { return rd_kafka_commit_transaction(producer, kTxnTimeoutMs); });
    txn_open = false;
    if (e || txn_broken) {
      fatal = "cannot commit the claim of restored shards: " +
              (e ? Describe(e) : std::string("a produce call failed"));
    }
  }

  // The input positions of the shards the last Restore handed to workers.
  std::map<int32_t, int64_t> restored_positions;

  void RestoreAndSeek(const std::vector<int32_t>& partitions, bool after_abort) {
    restored_positions.clear();
    Restore(partitions, after_abort);
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (const auto& [p, position] : restored_positions) {
      rd_kafka_topic_partition_list_add(list.get(), o.input_topic.c_str(), p)->offset = position;
    }
    if (list->cnt == 0) return;
    KafkaError e(rd_kafka_seek_partitions(consumer, list.get(), 10000));
    if (e) fatal = "cannot seek the input back after an abort: " + Describe(e);
    for (int i = 0; i < list->cnt && fatal.empty(); ++i) {
      if (list->elems[i].err) {
        fatal = "cannot seek " + o.input_topic + "/" + std::to_string(list->elems[i].partition) +
                " back after an abort: " + rd_kafka_err2str(list->elems[i].err);
      }
    }
  }

  void Fail(int32_t p, const std::string& why) {
    ShardSlot& slot = shards[p];
    slot.phase = shard::ShardPhase::kFailed;
    slot.failure = why;
    slot.state_view.reset();
    Log("shard " + std::to_string(p) + " failed: " + why);
    Publish(p, slot);
  }

  // Runs on the processor thread (inside rd_kafka_poll or commit_transaction).
  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    auto* self = static_cast<Impl*>(opaque);
    self->Log(std::string("delivery to ") + rd_kafka_topic_name(m->rkt) +
              " failed: " + rd_kafka_err2str(m->err));
    self->txn_broken = true;
  }

  // --- Rebalances ----------------------------------------------------------------

  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* parts, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    std::vector<int32_t> partitions;
    for (int i = 0; i < parts->cnt; ++i) partitions.push_back(parts->elems[i].partition);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      self->assignment_seen = true;
      if (self->stopping) {
        // Shutting down: take the assignment (the group expects it) and leave.
        KafkaError e(rd_kafka_incremental_assign(rk, parts));
        return;
      }
      self->OnAssign(rk, parts, partitions);
    } else {
      self->OnRevoke(rk, parts, partitions);
    }
  }

  void OnAssign(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                const std::vector<int32_t>& partitions) {
    Log("assigned " + std::to_string(partitions.size()) + " partition(s)");
    Commit();  // claims need a transaction of their own
    restored_positions.clear();
    Restore(partitions, false,
            replicator ? replicator->Take(partitions) : std::map<int32_t, replica::Handoff>{});
    PartitionList ready(rd_kafka_topic_partition_list_new(parts->cnt));
    // Shards that failed to restore keep their input unassigned.
    for (const auto& [p, position] : restored_positions) {
      rd_kafka_topic_partition_list_add(ready.get(), o.input_topic.c_str(), p)->offset = position;
    }
    KafkaError e(rd_kafka_incremental_assign(rk, ready.get()));
    if (e) fatal = "incremental_assign: " + Describe(e);
    board.SetAssignmentKnown(true);
  }

  void OnRevoke(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                const std::vector<int32_t>& partitions) {
    if (rd_kafka_assignment_lost(rk)) {
      // The group moved on without us (we were paused or cut off): another instance
      // may own these shards already. Committing now would be a zombie's commit.
      Log("lost " + std::to_string(partitions.size()) +
          " partition(s); dropping their uncommitted work");
    } else {
      Log("revoked " + std::to_string(partitions.size()) + " partition(s)");
      Commit();
    }
    std::map<ShardWorker*, std::vector<int32_t>> to_drop;
    for (int32_t p : partitions) {
      shards.erase(p);
      board.Remove(p);
      to_drop[&WorkerOf(p)].push_back(p);
    }
    for (auto& [worker, dropped] : to_drop) worker->Drop(std::move(dropped));
    KafkaError e(rd_kafka_incremental_unassign(rk, parts));
    if (e) Log("incremental_unassign: " + Describe(e));
    if (replicator) replicator->Follow(partitions);
  }

  // --- Views and the loop --------------------------------------------------------

  // Publishes the shard's view: its state as of the last commit (none while it is
  // restoring or failed) with what the processor knows beyond it.
  void Publish(int32_t p, const ShardSlot& slot) {
    auto view = slot.state_view ? std::make_shared<shard::ShardView>(*slot.state_view)
                                : std::make_shared<shard::ShardView>();
    view->partition = p;
    view->role = shard::ShardRole::kActive;
    view->phase = slot.phase;
    view->failure = slot.failure;
    view->high_watermark = slot.high_watermark;
    view->transactions_committed = slot.transactions_committed;
    view->transactions_aborted = slot.transactions_aborted;
    view->input_lost = slot.input_lost;
    view->target_fpp = o.dedup.target_fpp;
    if (!view->counters) view->counters = std::make_shared<const shard::CounterSnapshot>();
    view->published_at_ms = o.now_ms();
    board.Publish(std::move(view));
  }

  // The shard's next input record is older than the partition's oldest one:
  // retention removed input before it was applied (the service was down longer than
  // the topic keeps data, or fell that far behind). Those events are lost; count
  // them where operators look, and go on from the oldest record there is.
  void OnInputGone(int32_t p, int64_t from) {
    auto it = shards.find(p);
    if (it == shards.end()) return;
    int64_t low = 0, high = 0;
    const rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(consumer, o.input_topic.c_str(), p, &low, &high, 10000);
    if (e) {
      Fail(p, std::string("its input position is gone and the partition's start is unknown: ") +
                  rd_kafka_err2str(e));
      return;
    }
    const uint64_t lost = from >= 0 && low > from ? static_cast<uint64_t>(low - from) : 0;
    it->second.input_lost += lost;
    Log("shard " + std::to_string(p) + ": input offsets " + std::to_string(from) + ".." +
        std::to_string(low - 1) + " were removed by retention before they were applied: " +
        std::to_string(lost) + " messages lost; going on at offset " + std::to_string(low));
    // The error stopped the partition's fetcher, and a stopped partition cannot seek:
    // assign it again at the new start.
    PartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), o.input_topic.c_str(), p)->offset = low;
    KafkaError unassigned(rd_kafka_incremental_unassign(consumer, list.get()));
    KafkaError assigned(unassigned ? nullptr : rd_kafka_incremental_assign(consumer, list.get()));
    if (unassigned || assigned) {
      Fail(p, "cannot go on after lost input: " + Describe(unassigned ? unassigned : assigned));
    }
    Publish(p, it->second);
  }

  // Once a second: the input's high watermarks, fresh filter details of idle shards,
  // and a new timestamp on every view (it says how fresh the answer is).
  void RefreshViews() {
    for (auto& [p, slot] : shards) {
      int64_t low = 0, high = 0;
      if (rd_kafka_get_watermark_offsets(consumer, o.input_topic.c_str(), p, &low, &high) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          high >= 0) {
        slot.high_watermark = high;
      }
    }
    for (ShardWorker* w : workers) {
      for (auto& view : w->RefreshIdleViews()) {
        auto it = shards.find(view->partition);
        if (it != shards.end() && it->second.phase == shard::ShardPhase::kRunning) {
          it->second.state_view = std::move(view);
        }
      }
    }
    for (auto& [p, slot] : shards) Publish(p, slot);
  }

  // librdkafka 2.0.2 aborts the process (an assertion in the sticky assignor) when a
  // consumer is destroyed after joining its group but before its first assignment
  // arrived. An instance stopped that early waits, briefly, for the assignment.
  void AwaitFirstAssignment() {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!assignment_seen && Clock::now() < deadline) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
      if (m != nullptr) rd_kafka_message_destroy(m);
    }
  }

  std::string Run(const std::atomic<bool>& stop) {
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, o.input_topic.c_str(), RD_KAFKA_PARTITION_UA);
    const rd_kafka_resp_err_t sub = rd_kafka_subscribe(consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (sub)
      return std::string("cannot subscribe to ") + o.input_topic + ": " + rd_kafka_err2str(sub);
    auto next_refresh = Clock::now();
    while (!stop.load() && fatal.empty()) {
      int timeout_ms = 10;
      for (int i = 0; i < kBurst && fatal.empty(); ++i) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, timeout_ms);
        if (m == nullptr) break;
        timeout_ms = 0;
        MessagePtr message(m);
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          Route(std::move(message));
        } else if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
          OnInputGone(m->partition, m->offset);
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          Log(std::string("consumer: ") + rd_kafka_message_errstr(m));
          if (m->err == RD_KAFKA_RESP_ERR__FATAL) fatal = "the consumer hit a fatal error";
        }
        if (commit_soon) break;
      }
      HandOverAll();
      rd_kafka_poll(producer, 0);
      const auto now = Clock::now();
      if (routed_since_commit > 0 && (commit_soon || now - last_commit >= o.commit_interval)) {
        Commit();
      }
      if (now >= next_refresh) {
        RefreshViews();
        next_refresh = now + std::chrono::seconds(1);
      }
    }
    if (fatal.empty()) Commit();
    stopping = true;
    AwaitFirstAssignment();
    rd_kafka_consumer_close(consumer);  // revokes our partitions (committing first)
    if (txn_open) {
      KafkaError ignored(rd_kafka_abort_transaction(producer, kTxnTimeoutMs));
    }
    // Input messages still queued at the workers must be gone before the consumer is.
    for (ShardWorker* w : workers) {
      w->DropAll();
      w->Sync();
    }
    return fatal;
  }
};

Processor::Processor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Processor::~Processor() = default;

std::variant<std::unique_ptr<Processor>, std::string> Processor::Create(
    ProcessorOptions options, shard::StateBoard& board, std::vector<ShardWorker*> workers,
    replica::Replicator* replicator) {
  if (options.bootstrap_servers.empty()) return std::string("no bootstrap servers");
  if (workers.empty()) return std::string("no shard workers");
  if (options.instance_id.empty()) return std::string("no instance id");
  if (!options.now_ms) {
    options.now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  auto impl = std::make_unique<Impl>(std::move(options), board, std::move(workers), replicator);
  if (std::string e = impl->CreateClients(); !e.empty()) return e;
  if (std::string e = impl->CheckTopics(); !e.empty()) return e;
  return std::unique_ptr<Processor>(new Processor(std::move(impl)));
}

std::string Processor::Run() {
  return impl_->Run(stop_);
}

}  // namespace oncecount::service
