#include "processor/service/processor.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "processor/changelog/lineage.h"
#include "processor/kafka/partition_reader.h"
#include "processor/shard/shard_state.h"

namespace oncecount::service {
namespace {

constexpr int kTxnTimeoutMs = 30000;
constexpr int kTxnAttempts = 5;
// Messages taken from the consumer between two looks at the clock and the commit timer.
constexpr int kBurst = 512;

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

// One assigned shard: its state and what the owner knows beyond it.
struct ShardSlot {
  std::unique_ptr<shard::ShardState> state;
  shard::ShardPhase phase = shard::ShardPhase::kRestoring;
  std::string failure;
  int64_t high_watermark = 0;
  uint64_t transactions_committed = 0;
  uint64_t transactions_aborted = 0;
  size_t bytes_since_snapshot = 0;
  size_t last_snapshot_bytes = 0;
  int64_t last_snapshot_ms = 0;
  std::shared_ptr<const shard::ShardView> last_view;
  int64_t last_filter_detail_ms = 0;
};

// How often a published view recomputes the filter's summary and digest.
constexpr int64_t kFilterDetailEveryMs = 1000;

}  // namespace

struct Processor::Impl {
  ProcessorOptions o;
  shard::StateBoard& board;
  rd_kafka_t* consumer = nullptr;
  rd_kafka_t* producer = nullptr;
  kafka::Settings connection;
  std::map<int32_t, ShardSlot> shards;
  bool txn_open = false;
  bool txn_broken = false;  // a produce failed: the open transaction must abort
  Clock::time_point txn_started{};
  std::string fatal;
  std::string encode_buffer;

  Impl(ProcessorOptions options, shard::StateBoard& b) : o(std::move(options)), board(b) {}

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
    consumer_defaults.push_back({"auto.offset.reset", "earliest"});
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

  void BeginIfNeeded() {
    if (txn_open) return;
    KafkaError e(rd_kafka_begin_transaction(producer));
    if (e) {
      fatal = "begin_transaction: " + Describe(e);
      return;
    }
    txn_open = true;
    txn_broken = false;
    txn_started = Clock::now();
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

  void ProduceRecord(int32_t partition, const changelog::Record& record) {
    encode_buffer.clear();
    changelog::EncodeRecord(record, encode_buffer);
    Produce(o.changelog_topic, partition, nullptr, 0, encode_buffer.data(), encode_buffer.size(),
            nullptr);
  }

  void ProduceSnapshot(int32_t partition, ShardSlot& slot, uint64_t epoch, uint64_t seq) {
    const std::string bytes = slot.state->EncodeSnapshot(epoch);
    const size_t chunk = changelog::kSnapshotChunkBytes;
    const auto count = static_cast<uint32_t>((bytes.size() + chunk - 1) / chunk);
    for (uint32_t i = 0; i < count; ++i) {
      ProduceRecord(partition, changelog::SnapshotChunk{partition, epoch, seq, i, count,
                                                        bytes.substr(i * chunk, chunk)});
    }
    slot.bytes_since_snapshot = 0;
    slot.last_snapshot_bytes = bytes.size();
    slot.last_snapshot_ms = o.now_ms();
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

  // Ends the open transaction: commits it or, failing that, aborts it and restores
  // the shards from their changelogs.
  void Commit() {
    if (!txn_open) return;
    std::vector<int32_t> batched;
    for (auto& [p, slot] : shards) {
      if (!slot.state) continue;
      const uint64_t epoch = slot.state->epoch();
      std::optional<changelog::BatchRecord> batch = slot.state->PendingBatch(epoch);
      if (!batch) continue;
      batched.push_back(p);
      ProduceRecord(p, *batch);
      slot.bytes_since_snapshot += encode_buffer.size();
      // A snapshot costs the filter's whole state: write one after at least as many
      // bytes of batches, so that snapshots stay within half of the changelog's bytes.
      if (slot.bytes_since_snapshot >= std::max(o.snapshot_after_bytes, slot.last_snapshot_bytes) ||
          o.now_ms() - slot.last_snapshot_ms >= o.snapshot_after.count()) {
        ProduceSnapshot(p, slot, epoch, batch->seq);
      }
    }
    KafkaError e;
    if (txn_broken) {
      e.reset(rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE, "a produce call failed"));
    }
    if (!e) {
      PartitionList offsets(rd_kafka_topic_partition_list_new(static_cast<int>(shards.size())));
      for (auto& [p, slot] : shards) {
        if (slot.state && slot.state->position() >= 0) {
          rd_kafka_topic_partition_list_add(offsets.get(), o.input_topic.c_str(), p)->offset =
              slot.state->position();
        }
      }
      rd_kafka_consumer_group_metadata_t* group = rd_kafka_consumer_group_metadata(consumer);
      e = Retry([&] {
        return rd_kafka_send_offsets_to_transaction(producer, offsets.get(), group, kTxnTimeoutMs);
      });
      rd_kafka_consumer_group_metadata_destroy(group);
    }
    if (!e) e = Retry([&] { return rd_kafka_commit_transaction(producer, kTxnTimeoutMs); });
    txn_open = false;
    if (!e) {
      for (int32_t p : batched) {
        ShardSlot& slot = shards[p];
        slot.state->MarkCommitted(slot.state->epoch());
        ++slot.transactions_committed;
        Publish(p, slot);
      }
      return;
    }
    if (rd_kafka_error_is_fatal(e.get()) || !rd_kafka_error_txn_requires_abort(e.get())) {
      // A fenced or otherwise broken producer: our shards belong to someone else now.
      if (!rd_kafka_error_txn_requires_abort(e.get())) {
        fatal = "transaction commit failed: " + Describe(e);
        return;
      }
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

  // Rebuilds the shards of `partitions` from their changelogs and claims them with a
  // new epoch in one transaction. After an abort each claim continues from the
  // shard's last committed batch, which drops the aborted attempt for every reader.
  void Restore(const std::vector<int32_t>& partitions, bool after_abort) {
    if (partitions.empty()) return;
    const auto start = Clock::now();
    std::map<int32_t, uint64_t> committed;
    for (int32_t p : partitions) {
      ShardSlot& slot = shards[p];
      if (after_abort && slot.state) committed[p] = slot.state->committed_seq();
      slot.phase = shard::ShardPhase::kRestoring;
      slot.state.reset();
      Publish(p, slot);
    }
    auto read = kafka::ReadPartitions(connection, o.properties, o.changelog_topic, partitions,
                                      o.restore_timeout);
    if (auto* error = std::get_if<std::string>(&read)) {
      for (int32_t p : partitions) Fail(p, *error);
      return;
    }
    auto& records = std::get<kafka::PartitionRecords>(read);
    std::vector<changelog::ClaimRecord> claims;
    for (int32_t p : partitions) {
      changelog::LineageBuilder lineage;
      for (const std::string& r : records[p]) lineage.Add(std::string_view(r));
      const uint64_t base = committed.contains(p) ? committed[p] : lineage.last_seq();
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
      for (const changelog::BatchRecord& b : plan->batches) state.value()->ApplyBatch(b);
      state.value()->SetEpoch(claim.epoch);
      ShardSlot& slot = shards[p];
      slot.state = std::move(state.value());
      slot.bytes_since_snapshot = 0;
      for (const changelog::BatchRecord& b : plan->batches) {
        slot.bytes_since_snapshot += 64 + 8 * b.segments.size();
        for (const auto& s : b.segments) slot.bytes_since_snapshot += 8 * s.hashes.size();
      }
      slot.last_snapshot_ms = o.now_ms();
      claims.push_back(claim);
      Log("shard " + std::to_string(p) + ": restored " + std::to_string(plan->batches.size()) +
          " batches" +
          (plan->snapshot ? " after snapshot " + std::to_string(plan->snapshot_seq) : "") +
          ", epoch " + std::to_string(claim.epoch) + ", input offset " +
          std::to_string(slot.state->position()));
    }
    WriteClaims(claims);
    for (const auto& claim : claims) {
      ShardSlot& slot = shards[claim.partition];
      if (!slot.state) continue;
      slot.phase = shard::ShardPhase::kRunning;
      Publish(claim.partition, slot);
    }
    Log("restored " + std::to_string(claims.size()) + " shard(s) in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()) +
        " ms");
  }

  void WriteClaims(const std::vector<changelog::ClaimRecord>& claims) {
    if (claims.empty() || !fatal.empty()) return;
    BeginIfNeeded();
    if (!fatal.empty()) return;
    for (const auto& claim : claims) ProduceRecord(claim.partition, claim);
    KafkaError e = Retry([&] { return rd_kafka_commit_transaction(producer, kTxnTimeoutMs); });
    txn_open = false;
    if (e || txn_broken) {
      fatal = "cannot commit the claim of restored shards: " +
              (e ? Describe(e) : std::string("a produce call failed"));
    }
  }

  void RestoreAndSeek(const std::vector<int32_t>& partitions, bool after_abort) {
    Restore(partitions, after_abort);
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (int32_t p : partitions) {
      ShardSlot& slot = shards[p];
      if (!slot.state) continue;
      rd_kafka_topic_partition_list_add(list.get(), o.input_topic.c_str(), p)->offset =
          slot.state->position();
    }
    if (list->cnt == 0) return;
    KafkaError e(rd_kafka_seek_partitions(consumer, list.get(), 10000));
    if (e) fatal = "cannot seek the input back after an abort: " + Describe(e);
  }

  void Fail(int32_t p, const std::string& why) {
    ShardSlot& slot = shards[p];
    slot.state.reset();
    slot.phase = shard::ShardPhase::kFailed;
    slot.failure = why;
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
      self->OnAssign(rk, parts, partitions);
    } else {
      self->OnRevoke(rk, parts, partitions);
    }
  }

  void OnAssign(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                const std::vector<int32_t>& partitions) {
    Log("assigned " + std::to_string(partitions.size()) + " partition(s)");
    Commit();  // claims need a transaction of their own
    Restore(partitions, false);
    PartitionList ready(rd_kafka_topic_partition_list_new(parts->cnt));
    for (int32_t p : partitions) {
      const ShardSlot& slot = shards[p];
      if (!slot.state) continue;  // failed: leave its input alone
      rd_kafka_topic_partition_list_add(ready.get(), o.input_topic.c_str(), p)->offset =
          slot.state->position();
    }
    KafkaError e(rd_kafka_incremental_assign(rk, ready.get()));
    if (e) fatal = "incremental_assign: " + Describe(e);
    board.SetAssignmentKnown(true);
  }

  void OnRevoke(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                const std::vector<int32_t>& partitions) {
    Log("revoked " + std::to_string(partitions.size()) + " partition(s)");
    Commit();
    for (int32_t p : partitions) {
      shards.erase(p);
      board.Remove(p);
    }
    KafkaError e(rd_kafka_incremental_unassign(rk, parts));
    if (e) Log("incremental_unassign: " + Describe(e));
  }

  // --- The loop ------------------------------------------------------------------

  void Publish(int32_t p, ShardSlot& slot) {
    shard::ShardView base;
    base.partition = p;
    base.phase = slot.phase;
    base.failure = slot.failure;
    base.high_watermark = slot.high_watermark;
    base.transactions_committed = slot.transactions_committed;
    base.transactions_aborted = slot.transactions_aborted;
    base.target_fpp = o.dedup.target_fpp;
    const int64_t now = o.now_ms();
    if (slot.state) {
      auto detail = shard::ShardState::FilterDetail::kRefresh;
      if (slot.last_view && slot.last_view->phase == slot.phase &&
          now - slot.last_filter_detail_ms < kFilterDetailEveryMs) {
        detail = shard::ShardState::FilterDetail::kReuse;
        base.filter = slot.last_view->filter;
        base.digest = slot.last_view->digest;
        base.digest_seq = slot.last_view->digest_seq;
      } else {
        slot.last_filter_detail_ms = now;
      }
      slot.last_view = slot.state->MakeView(std::move(base), now, detail);
      board.Publish(slot.last_view);
    } else {
      slot.last_view.reset();  // a restored state starts with fresh filter details
      base.counters = std::make_shared<const shard::CounterSnapshot>();
      base.published_at_ms = now;
      board.Publish(std::make_shared<const shard::ShardView>(std::move(base)));
    }
  }

  void Process(const rd_kafka_message_t* m, filter::Millis now) {
    auto it = shards.find(m->partition);
    if (it == shards.end() || !it->second.state) return;
    shard::ShardState& state = *it->second.state;
    if (state.position() >= 0 && m->offset < state.position()) return;  // applied already
    BeginIfNeeded();
    if (!fatal.empty()) return;
    shard::InputMessage input{m->offset, std::nullopt,
                              std::string_view(static_cast<const char*>(m->payload), m->len)};
    if (m->key != nullptr)
      input.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
    if (m->payload == nullptr) input.value = {};
    const shard::Decision d = state.Apply(input, now);
    if (d.outcome == shard::Outcome::kDeadLetter) DeadLetter(m, d.reason);
    if (state.pending_events() >= o.max_batch_events) Commit();
  }

  void DeadLetter(const rd_kafka_message_t* m, event::DlqReason reason) {
    rd_kafka_headers_t* original = nullptr;
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &original) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      headers = rd_kafka_headers_copy(original);
    } else {
      headers = rd_kafka_headers_new(2);
    }
    const char* name = event::DlqReasonName(reason);
    rd_kafka_header_add(headers, "oncecount.error", -1, name, -1);
    const std::string source =
        o.input_topic + "/" + std::to_string(m->partition) + "/" + std::to_string(m->offset);
    rd_kafka_header_add(headers, "oncecount.source", -1, source.data(),
                        static_cast<ssize_t>(source.size()));
    Produce(o.dlq_topic, RD_KAFKA_PARTITION_UA, m->key, m->key_len, m->payload, m->len, headers);
  }

  void RefreshWatermarks() {
    for (auto& [p, slot] : shards) {
      int64_t low = 0, high = 0;
      if (rd_kafka_get_watermark_offsets(consumer, o.input_topic.c_str(), p, &low, &high) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          high >= 0) {
        slot.high_watermark = high;
      }
      // Inside a transaction the live state is ahead of what is committed (an abort
      // would roll it back): the commit publishes it instead.
      if (slot.phase == shard::ShardPhase::kRunning && !txn_open) Publish(p, slot);
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
      // Drain what the consumer holds (up to a burst) before the per-loop work: one
      // clock reading per burst is the filters' time for all of it.
      const filter::Millis now{o.now_ms()};
      int timeout_ms = 10;
      for (int i = 0; i < kBurst && fatal.empty(); ++i) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, timeout_ms);
        if (m == nullptr) break;
        timeout_ms = 0;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          Process(m, now);
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          Log(std::string("consumer: ") + rd_kafka_message_errstr(m));
          if (m->err == RD_KAFKA_RESP_ERR__FATAL) fatal = "the consumer hit a fatal error";
        }
        rd_kafka_message_destroy(m);
      }
      rd_kafka_poll(producer, 0);
      const auto steady = Clock::now();
      if (txn_open && steady - txn_started >= o.commit_interval) Commit();
      if (steady >= next_refresh) {
        RefreshWatermarks();
        next_refresh = steady + std::chrono::seconds(1);
      }
    }
    if (fatal.empty()) Commit();
    rd_kafka_consumer_close(consumer);  // revokes our partitions (committing first)
    if (txn_open) {
      KafkaError ignored(rd_kafka_abort_transaction(producer, kTxnTimeoutMs));
    }
    return fatal;
  }
};

Processor::Processor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Processor::~Processor() = default;

std::variant<std::unique_ptr<Processor>, std::string> Processor::Create(ProcessorOptions options,
                                                                        shard::StateBoard& board) {
  if (options.bootstrap_servers.empty()) return std::string("no bootstrap servers");
  if (options.instance_id.empty()) return std::string("no instance id");
  if (!options.now_ms) {
    options.now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  auto impl = std::make_unique<Impl>(std::move(options), board);
  if (std::string e = impl->CreateClients(); !e.empty()) return e;
  if (std::string e = impl->CheckTopics(); !e.empty()) return e;
  return std::unique_ptr<Processor>(new Processor(std::move(impl)));
}

std::string Processor::Run() {
  return impl_->Run(stop_);
}

}  // namespace oncecount::service
