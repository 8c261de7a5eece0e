#include "processor/service/processor.h"

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "processor/kafka/topics.h"
#include "processor/replica/replicator.h"
#include "processor/service/input_timestamps.h"
#include "processor/service/lost_input.h"
#include "processor/service/restore.h"
#include "processor/service/router.h"
#include "processor/service/shard_loader.h"
#include "processor/service/shard_worker.h"
#include "processor/service/snapshot_cadence.h"
#include "processor/service/transaction.h"
#include "processor/shard/shard_state.h"

namespace oncecount::service {
namespace {

constexpr std::chrono::milliseconds kCallTimeout{30000};
// Messages taken from the consumer between two looks at the clock and the commit timer.
constexpr int kBurst = 2048;
// A burst is committed once the input is drained, if it holds this many events (or
// the last commit did: the burst's last few events) and a fifth of the commit
// interval has passed since the last commit: under a backlog, the last events would
// otherwise wait up to a whole interval to be visible (a fifth of a short benchmark's
// span); a light load (fewer events an interval) keeps its one transaction an
// interval.
constexpr uint64_t kDrainedCommitEvents = 1000;
// How often the views of idle shards are brought up to date (RefreshViews).
constexpr int64_t kViewRefreshMs = 1000;
// How often the instance asks whether the cluster still lists its input topic, and
// how long it waits for the answer (the consumer loop waits meanwhile).
constexpr int64_t kInputCheckMs = 10000;
// Two aborts of a shard's transactions further apart than this are not "in a row"
// (ShardSlot::aborts_in_a_row): the back-off, at most 30 s, is long behind.
constexpr int64_t kAbortsInARowWithinMs = 5 * 60 * 1000;
// An adopted shard commits a snapshot of its own within this (Adopt): the cadence's
// longest interval between two, which the workers keep to (SnapshotCadence).
constexpr int64_t kAdoptedSnapshotWithinMs = SnapshotCadence{}.max_interval.count();
// How long producers go on with a topic's old partition count: librdkafka's
// topic.metadata.refresh.interval.ms and the Java client's metadata.max.age.ms, both
// 5 minutes by default.
constexpr std::chrono::milliseconds kProducerMetadataAge{300000};
constexpr std::chrono::milliseconds kInputCheckTimeout{500};
// A running shard that received nothing for this many input checks has the end of its
// partition asked for (CheckQuietInputs), each question waiting at most
// kQuietAskTimeout and all of a check's at most kQuietAskBudget.
constexpr int kQuietChecks = 3;
constexpr std::chrono::milliseconds kQuietAskTimeout{300};
constexpr std::chrono::milliseconds kQuietAskBudget{1000};
// How long the consumer may report the same unreadable input record without going
// past it before its shard shows failed (OnInputUnreadable): librdkafka fetches a batch it
// cannot decompress again and again.
constexpr int64_t kUnreadableStuckMs = 30'000;
// What a record batch of one record needs beyond the record's value (batch header,
// record framing): our records must stay this far below a topic's max.message.bytes.
constexpr size_t kRecordFraming = 1024;

// One assigned shard, as the processor sees it: its state lives on a worker while it
// runs; the processor knows where it is in its life and what goes into its views.
struct ShardSlot {
  shard::ShardPhase phase = shard::ShardPhase::kRestoring;
  std::string failure;
  base::Offset high_watermark;
  base::Epoch epoch;        // the epoch of our claim
  base::Seq committed_seq;  // the last changelog batch committed
  uint64_t transactions_committed = 0;
  uint64_t transactions_aborted = 0;
  // Input messages retention removed before they were applied, or that the consumer
  // could not read and went past (OnInputUnreadable).
  uint64_t input_lost = 0;
  // The offsets counted in input_lost: a restore after an abort goes back over the
  // same gap, which must not count twice.
  LostInput lost;
  // An input record the consumer reported it could not read (OnInputUnreadable), not
  // gone past yet, and when it was first reported (steady clock); `stuck`: why the
  // shard shows failed while the consumer reports it and goes no further.
  std::optional<base::Offset> unreadable_at;
  int64_t unreadable_since_ms = 0;
  std::string stuck;
  uint64_t changelog_unreadable_records = 0;  // skipped by the restore that adopted it
  // A partition whose leader is gone (or whose brokers cannot be reached) gives the
  // consumer nothing and no error: the shard would look running and idle, its lag
  // frozen. The processor notes the last input offset routed, and once a shard got
  // none for a few checks it asks the partition's end itself (CheckQuietInputs);
  // `input_unreachable`: why the shard shows failed while that fails.
  base::Offset last_routed{-1};
  base::Offset routed_at_last_check{-1};
  int quiet_checks = 0;
  int end_query_failures = 0;
  // Of those, timeouts: the leader's silence, which an answer of it takes back.
  int timeouts_counted = 0;
  std::string input_unreachable;
  // Restores: failed attempts in a row, when the next may start (steady clock), and
  // whether it continues from our own last commit (after our abort).
  uint64_t restore_failures = 0;
  uint64_t restore_retries = 0;  // all failed attempts, for the metric
  // Failures while running (ShardWorker::Fail) since the shard last committed.
  uint64_t run_failures = 0;
  // Our own transactions with it that aborted since it last committed, each within
  // kAbortsInARowWithinMs of the one before, and when the last one did (steady clock).
  uint64_t aborts_in_a_row = 0;
  int64_t last_abort_ms = 0;
  int64_t next_restore_ms = 0;
  bool after_abort = false;
  // The state as of the last commit, without what only the processor knows.
  std::shared_ptr<const shard::ShardView> state_view;
  // Where, in its changelog partition, the transaction that wrote its newest
  // snapshot began (its own commits only; nullopt until one commits): a restore needs
  // the partition to keep everything from there (CheckSnapshotsKept).
  std::optional<base::Offset> snapshot_from;
  // When a snapshot the shard owes (its changelog lost the newest) is due, on the
  // steady clock; -1: none owed, or its worker told already.
  int64_t snapshot_due_ms = -1;
};

// 64 bits from the kernel's generator (std::random_device), never 0. A single draw of
// random_device is 32 bits: a generator seeded with one would give every instance's
// claims one of only 2^32 sequences.
uint64_t KernelRandomNonZero() {
  std::random_device device;
  uint64_t value = 0;
  while (value == 0) value = (uint64_t{device()} << 32) ^ device();
  return value;
}

// Only the `fields` of what the cluster told of a topic: a check compares what it
// reads, so that a change of another field is no change to it.
template <class... Fields>
std::optional<kafka::TopicSettings> Only(const std::optional<kafka::TopicSettings>& told,
                                         Fields... fields) {
  if (!told) return std::nullopt;
  kafka::TopicSettings read;
  ((read.*fields = (*told).*fields), ...);
  return read;
}

}  // namespace

struct Processor::Impl final : kafka::RebalanceListener {
  ProcessorOptions o;
  base::Clock& clock;
  shard::StateBoard& board;
  replica::Replicator* replicator = nullptr;  // may be null: no replicas
  std::unique_ptr<kafka::GroupConsumer> consumer;
  std::unique_ptr<kafka::TransactionalProducer> producer;
  std::map<base::Partition, ShardSlot> shards;
  base::Status fatal;  // what ended the processor; ok while it runs
  Router router;
  bool assignment_seen = false;
  bool stopping = false;  // shutting down: assignments are taken, not served
  int64_t last_commit_ms = 0;
  bool last_commit_was_burst = false;  // it carried kDrainedCommitEvents or more
  int64_t next_refresh_ms = 0;
  // Seeded runs only (claim_seed); others draw from the kernel (KernelRandomNonZero).
  std::mt19937_64 claim_ids;
  std::mt19937_64 hash_keys;
  ShardLoader loader;
  std::array<base::Counter*, kCheckpointFallbackNames.size()> checkpoint_fallbacks{};
  // The largest record we write; halved whenever a broker refuses one as too large
  // (a limit we could not read, or compression and framing we did not foresee).
  size_t record_cap = changelog::kMaxRecordBytes;
  // The producer's batch.size: a batch of one partition's records must pass the
  // broker's max.message.bytes check as a single record does (BatchLimit).
  size_t producer_batch_bytes = 0;
  // The topics' settings ApplyTopicSettings last acted on, only those it reads
  // (nullopt: none told yet): a change while the service runs is judged again, and a
  // change of another field (brokers of two versions telling different sets) is not.
  std::optional<kafka::TopicSettings> changelog_settings_checked;
  std::optional<kafka::TopicSettings> input_settings_judged;
  // What the running shards were last given (GiveShardsTheChangelogLimits).
  std::optional<shard::ChangelogLimits> changelog_limits_given;
  // InputTimestampVerdict::Guard, read by /metrics.
  std::atomic<int> input_timestamp_guard{static_cast<int>(InputTimestampVerdict::Guard::kUnknown)};
  int64_t next_settings_ms = 0;                      // when Step calls it next
  int64_t next_input_check_ms = 0;                   // when Step calls CheckTopicsListed
  int input_check_failures = 0;                      // CheckTopicsListed's, in a row
  base::Partition last_quiet_asked{-1};              // CheckQuietInputs goes round
  std::map<base::Partition, int32_t> input_leaders;  // by CheckQuietInputs, the last known
  base::Partition last_snapshot_checked{-1};         // CheckSnapshotsKept goes round
  // A shard must snapshot (CheckSnapshotsKept): the next commit is due at the commit
  // interval even when no input came.
  bool snapshot_owed = false;
  // 1: the cluster lists the input topic, 0: it is missing (CheckTopicsListed), -1: no
  // answer yet. Read by /metrics.
  std::atomic<int> input_listed{-1};
  // Likewise for the changelog and the dead-letter topic together.
  std::atomic<int> outputs_listed{-1};
  // What CheckTopicsListed saw of each topic it watches.
  struct WatchedTopic {
    bool last_listed = true;  // by the last answered check
    int in_a_row = 0;         // answered checks in a row that agreed with it
    bool missing = false;
  };
  static constexpr int kListingsToTell = 2;
  std::map<std::string, WatchedTopic> watched_topics;
  // The instance's `degraded` reasons (PublishInstanceDegraded); empty: none.
  std::string repartition_reason;
  std::string dead_letters_unlisted;
  // The input's largest partition count the cluster told (-1: not yet; read by
  // /metrics), and the smallest smaller count it told (-1: none): each smaller one is
  // warned about once.
  std::atomic<int> input_partitions{-1};
  int input_shrunk_to = -1;
  // Until when (steady ms) a gain of input partitions is reported (-1: none), and
  // whether it is now (read by /metrics).
  int64_t repartitioned_until_ms = -1;
  std::atomic<bool> repartition_reported{false};
  // The shards (0..n-1) the replicator was told to follow (FollowNewShards).
  int32_t followed_through = 0;
  std::unique_ptr<base::MetricRegistry> own_metrics;  // when the options bring none
  base::Counter* generation_retries = nullptr;
  base::Counter* snapshots_cut = nullptr;
  base::Counter* consumer_errors = nullptr;
  base::Histogram* commit_seconds = nullptr;
  base::Histogram* restore_seconds = nullptr;
  RestoreProgress restore_progress;  // read by /metrics while a restore blocks the thread
  // When the transaction in progress began (steady ms), -1 when none is open. Written
  // by the processor's thread, read by /metrics while a commit may be blocked.
  std::atomic<int64_t> txn_open_since_ms{-1};

  Impl(ProcessorOptions options, shard::StateBoard& b, std::vector<ShardWorker*> w,
       replica::Replicator* r)
      : o(std::move(options)),
        clock(o.clock != nullptr ? *o.clock : base::DefaultClock()),
        board(b),
        replicator(r),
        router(std::move(w), o.max_batch_events),
        claim_ids(o.claim_seed),
        hash_keys(o.claim_seed ^ 0x6B65797365656421ULL),
        loader(LoaderOptions()) {
    last_commit_ms = clock.SteadyMs();
    RegisterMetrics();
  }

  void RegisterMetrics() {
    base::MetricRegistry* metrics = o.metrics;
    if (metrics == nullptr) {
      own_metrics = std::make_unique<base::MetricRegistry>();
      metrics = own_metrics.get();
    }
    commit_seconds = &metrics->AddHistogram(
        "oncecount_commit_duration_seconds",
        "How long each transaction of the instance took, from its start to its commit or "
        "abort (a commit carries every shard's batch, dead letters and offsets).",
        base::DurationBuckets());
    restore_seconds = &metrics->AddHistogram(
        "oncecount_restore_duration_seconds",
        "How long each restore of the shards assigned at once took, claim included.",
        base::DurationBuckets());
    metrics->AddGaugeFunction(
        "oncecount_open_transaction_age_seconds",
        "How long the instance's open transaction has been running (0: none is open). An "
        "open transaction holds back the last stable offset of the changelog and the "
        "dead-letter topic: read_committed readers (restores, standbys) wait for it.",
        "", [this] {
          const int64_t since = txn_open_since_ms.load(std::memory_order_relaxed);
          return since < 0 ? 0.0 : static_cast<double>(clock.SteadyMs() - since) / 1000.0;
        });
    metrics->AddGaugeFunction(
        "oncecount_input_timestamps_guarded",
        "1 when the input topic's settings keep producer clocks from moving the shards' "
        "clocks, in a backlog too (message.timestamp.type=LogAppendTime, or "
        "message.timestamp.after.max.ms within dedup.timestamp_tolerance_ms); 0 when they "
        "do not; -1 while the cluster has not told them. The log says what to set.",
        "", [this] {
          return static_cast<double>(input_timestamp_guard.load(std::memory_order_relaxed));
        });
    metrics->AddGaugeFunction(
        "oncecount_input_topic_listed",
        "0 once two answered listings in a row lacked the input topic (deleted, or Describe "
        "revoked: no shard can run, and /readyz says so), 1 otherwise, -1 before the first "
        "answer. Asked every 10 s.",
        "", [this] { return static_cast<double>(input_listed.load(std::memory_order_relaxed)); });
    metrics->AddGaugeFunction(
        "oncecount_input_partitions",
        "How many partitions the cluster says the input topic has (-1 before it tells). "
        "Asked every 10 s: a change moves keys between shards (docs/operations.md, "
        "\"Partitions are the unit of scale\").",
        "",
        [this] { return static_cast<double>(input_partitions.load(std::memory_order_relaxed)); });
    metrics->AddGaugeFunction(
        "oncecount_input_repartitioned",
        "1 while the input topic's gain of partitions may still get retries counted twice "
        "(for the producers' metadata refresh, 5 min by default, plus one dedup window after "
        "this instance saw it), 0 otherwise: a retry of an event produced before a producer "
        "learned the new count may reach a shard that never saw its first copy (/readyz lists "
        "it under degraded).",
        "", [this] { return repartition_reported.load(std::memory_order_relaxed) ? 1.0 : 0.0; });
    metrics->AddGaugeFunction(
        "oncecount_output_topics_listed",
        "0 once two answered listings in a row lacked the changelog or the dead-letter topic "
        "(deleted, or Describe revoked: a commit that writes there fails; /readyz says so), 1 "
        "otherwise, -1 before the first answer. Asked every 10 s.",
        "", [this] { return static_cast<double>(outputs_listed.load(std::memory_order_relaxed)); });
    consumer_errors = &metrics->AddCounter(
        "oncecount_consumer_errors_total",
        "Errors the input consumer reported (each logged with its name: an authorization "
        "refused, a topic gone, brokers that cannot be reached...). librdkafka retries most "
        "of them itself and reports one only once: a rise is worth a look at the log.");
    snapshots_cut = &metrics->AddCounter(
        "oncecount_changelog_snapshots_cut_total",
        "Times a running shard found that its changelog partition no longer begins before "
        "the transaction of its newest snapshot (retention.bytes smaller than the service "
        "was told, records deleted): until its next snapshot commits, a restore could not "
        "rebuild the shard. Each is logged, and the shard writes a snapshot at its next "
        "commit.");
    generation_retries = &metrics->AddCounter(
        "oncecount_generation_retries_total",
        "Transactions tried a second time after the group refused their offsets for a "
        "generation that moved on while the instance still held its partitions (a "
        "rebalance completed in the background).");
    RegisterRestoreProgress(*metrics);
    for (const auto& [why, name] : kCheckpointFallbackNames) {
      checkpoint_fallbacks[static_cast<size_t>(why)] = &metrics->AddCounter(
          "oncecount_checkpoint_fallbacks_total",
          "Local checkpoints passed over for a restore from the changelog, by reason: "
          "unreadable, before_log_start, not_in_changelog (another cluster or topic), "
          "not_on_lineage (a zombie's), diverged, read_failed, newer_format (a newer release wrote "
          "after it).",
          std::string("reason=\"") + name + "\"");
    }
  }

  // Per shard while its changelog is read, absent otherwise.
  void RegisterRestoreProgress(base::MetricRegistry& metrics) {
    const auto family = [this](bool remaining) {
      std::vector<base::MetricRegistry::LabeledValue> samples;
      for (const RestoreProgress::Shard& s : restore_progress.Read()) {
        samples.push_back({"partition=\"" + std::to_string(s.partition.value()) + "\"",
                           remaining ? static_cast<double>(s.remaining_offsets) : s.fraction});
      }
      return samples;
    };
    metrics.AddGaugeFamily(
        "oncecount_restore_progress_ratio",
        "The share of its changelog a shard being restored has read (0..1); present only "
        "while the read is under way.",
        [family] { return family(false); });
    metrics.AddGaugeFamily("oncecount_restore_remaining_offsets",
                           "Changelog offsets a shard being restored has still to read.",
                           [family] { return family(true); });
  }

  ShardWorker& WorkerOf(base::Partition partition) { return router.WorkerOf(partition); }

  ShardLoaderOptions LoaderOptions() {
    ShardLoaderOptions l;
    l.clients = o.clients;
    l.clock = &clock;
    l.changelog_topic = o.changelog_topic;
    l.wait = o.restore_wait;
    l.dedup = o.dedup;
    l.replicator = replicator;
    l.new_claim = [this] {
      return ClaimDraw{NewClaimId(), NewHashKey(), o.group_id, o.previous_group_id};
    };
    l.log = o.log;
    l.checkpoint_dir = o.checkpoint_dir;
    l.progress = &restore_progress;
    l.on_checkpoint_fallback = [this](CheckpointFallback why) {
      checkpoint_fallbacks[static_cast<size_t>(why)]->Add();
    };
    return l;
  }

  // A claim's id: random, so that two claims of one epoch (which reading the
  // changelog to its high watermark rules out) could still be told apart, whichever
  // instances made them.
  uint64_t NewClaimId() {
    if (o.claim_seed == 0) return KernelRandomNonZero();
    uint64_t id = 0;
    while (id == 0) id = claim_ids();
    return id;
  }

  // A shard's id hash key, used if the claim is its first. Keys must not follow from
  // claim ids, which every changelog record shows; only a seeded run (claim_seed, for
  // tests that want to be repeatable) draws both from one seed.
  filter::IdHashKey NewHashKey() {
    if (o.claim_seed == 0) return filter::IdHashKey{KernelRandomNonZero()};
    uint64_t key = 0;
    while (key == 0) key = hash_keys();
    return filter::IdHashKey{key};
  }

  void Log(const std::string& line) const { o.log.Info(line); }
  // Something went wrong that the processor handles (an abort, a failed restore, lost
  // input); an operator may need to act.
  void Warn(const std::string& line) const { o.log.Warn(line); }

  // --- Set-up ----------------------------------------------------------------------

  base::Status CreateClients() {
    auto c = o.clients->NewGroupConsumer(
        {o.input_topic, o.group_id, true, o.group_instance_id, o.leave_group_on_stop});
    if (!c) return c.error();
    consumer = std::move(c.value());
    return CreateProducer();
  }

  // A new transactional producer (fencing any earlier one of this instance id) whose
  // batches fit the topics' limits as they are known now.
  base::Status CreateProducer() {
    producer.reset();
    producer_batch_bytes = BatchLimit();
    auto p = o.clients->NewTransactionalProducer(
        {o.group_id + "-" + o.instance_id, o.transaction_timeout, producer_batch_bytes});
    if (!p) return p.error();
    producer = std::move(p.value());
    if (kafka::KafkaError e = producer->InitTransactions(kCallTimeout)) return e.ToError();
    if (kafka::KafkaError e =
            producer->LookUpTopics({o.changelog_topic, o.dlq_topic}, kCallTimeout)) {
      return e.ToError();
    }
    return {};
  }

  // Says, as soon as the cluster answers and again whenever the answer changes,
  // whether the input topic's timestamp settings keep producer clocks from moving the
  // shards' clocks (input_timestamps.h).
  void CheckInputTimestamps() {
    using kafka::TopicSettings;
    const std::optional<TopicSettings> told =
        Only(o.clients->DescribeTopic(o.input_topic), &TopicSettings::timestamp_type,
             &TopicSettings::timestamp_after_max_ms, &TopicSettings::timestamp_difference_max_ms);
    if (!told || told == input_settings_judged) return;  // not answered yet, or judged
    const bool changed = input_settings_judged.has_value();
    input_settings_judged = told;
    const InputTimestampVerdict verdict =
        JudgeInputTimestamps(o.input_topic, *told, o.timestamp_tolerance);
    input_timestamp_guard.store(static_cast<int>(verdict.guard), std::memory_order_relaxed);
    const std::string line =
        (changed ? o.input_topic + "'s settings changed: " : std::string()) + verdict.sentence;
    if (verdict.guard == InputTimestampVerdict::Guard::kGuarded) {
      Log(line);
    } else {
      Warn(line);
    }
  }

  // Acts on the topics' settings once the cluster has told them (DescribeConfigs
  // answers in the background; the embedded cluster's requests time out, telling
  // nothing): the input topic's timestamp settings are judged, the changelog's
  // retention is checked, and a producer whose batches are larger than a topic now
  // known to take is replaced. Called between transactions.
  base::Status ApplyTopicSettings() {
    CheckInputTimestamps();
    // A changelog made compacted or time-limited while the service runs is refused as
    // at start (the instance stops, saying why): an idle shard's state would go.
    using kafka::TopicSettings;
    const std::optional<TopicSettings> told =
        Only(o.clients->DescribeTopic(o.changelog_topic), &TopicSettings::cleanup_policy,
             &TopicSettings::retention_ms, &TopicSettings::retention_bytes);
    if (told && told != changelog_settings_checked) {
      changelog_settings_checked = told;
      if (base::Status s = CheckChangelogRetention(*told); !s) return s;
    }
    GiveShardsTheChangelogLimits();
    if (producer != nullptr && producer_batch_bytes > BatchLimit()) {
      Log("batches of " + std::to_string(producer_batch_bytes) + " bytes are above a topic's " +
          "limit: a new producer writes batches of at most " + std::to_string(BatchLimit()));
      return CreateProducer();
    }
    return {};
  }

  // Shards adopted before the cluster told the changelog's limits (its answer comes
  // after the start, in the background) or before they changed would otherwise keep
  // the old ones until their next adoption: snapshots timed as if retention were
  // unknown, which can let it take the last complete one.
  void GiveShardsTheChangelogLimits() {
    const shard::ChangelogLimits limits = ChangelogLimits();
    if (limits == changelog_limits_given) return;
    if (changelog_limits_given) {
      Log("the changelog's limits are now records of at most " +
          std::to_string(limits.max_record_bytes) + " bytes and " +
          (limits.retention_bytes > 0 ? std::to_string(limits.retention_bytes) + " bytes kept"
                                      : std::string("retention unknown")) +
          " per partition; the running shards follow them");
    }
    changelog_limits_given = limits;
    for (ShardWorker* w : router.workers()) w->SetChangelogLimits(limits);
  }

  shard::ChangelogLimits ChangelogLimits() {
    return {RecordLimit(o.changelog_topic),
            o.clients->RetentionBytes(o.changelog_topic).value_or(o.changelog_retention_bytes)};
  }

  // The group's consumers see a deleted input topic (or one whose Describe was
  // revoked) as no partitions at all: every instance ends with an empty assignment,
  // which is ready. So the instance asks the cluster itself whether it still lists
  // the topic, and is not ready while it does not; nor while it does not list the
  // changelog, which every commit writes. A missing dead-letter topic fails every
  // commit only once a malformed event comes (maybe hours later): the instance counts
  // on and lists it under `degraded`. An unanswered question changes nothing (an
  // unreachable cluster shows in the commits).
  void CheckTopicsListed() {
    ExpireRepartitionNotice();
    const auto counts = o.clients->PartitionCounts(kInputCheckTimeout);
    if (!counts) {
      if (++input_check_failures == 3) {
        Warn("the cluster did not say which topics exist at the last 3 checks (last: " +
             counts.error().ToString() + "): whether topic " + o.input_topic +
             " still exists is not known");
      }
      return;
    }
    input_check_failures = 0;
    if (counts.value().contains(o.input_topic)) NoticeInputPartitions(counts.value());
    const std::string gone_doc = " (docs/operations.md, \"A topic the service writes is gone\")";
    const auto input = Watch(counts.value(), o.input_topic, "no shard can run until it is back");
    const auto changelog = Watch(counts.value(), o.changelog_topic,
                                 "no commit can succeed until it is back" + gone_doc);
    const auto dead_letters =
        Watch(counts.value(), o.dlq_topic,
              "the shards count on, but a malformed event would fail every commit until it is "
              "back" +
                  gone_doc);
    input_listed.store(input ? 0 : 1, std::memory_order_relaxed);
    outputs_listed.store(changelog || dead_letters ? 0 : 1, std::memory_order_relaxed);
    std::string unavailable = input.value_or("");
    if (changelog) unavailable += (unavailable.empty() ? "" : "; ") + *changelog;
    board.SetTopicsUnavailable(std::move(unavailable));
    dead_letters_unlisted = dead_letters.value_or("");
    PublishInstanceDegraded();
  }

  // Why `topic` is missing (nullopt: it is not), saying so when that changes. It goes
  // missing, and comes back, only after kListingsToTell answered checks in a row agree:
  // librdkafka asks any one broker, and one that just restarted (or lags) may answer
  // from a partial or stale cache.
  std::optional<std::string> Watch(const std::map<std::string, int>& counts,
                                   const std::string& topic, const std::string& consequence) {
    WatchedTopic& w = watched_topics[topic];
    const bool listed = counts.contains(topic);
    w.in_a_row = listed == w.last_listed ? w.in_a_row + 1 : 1;
    w.last_listed = listed;
    const std::string why = "topic " + topic +
                            " is not in the cluster's list of topics (deleted, or this "
                            "instance's principal may no longer Describe it): " +
                            consequence;
    if (w.in_a_row >= kListingsToTell && w.missing == listed) {
      w.missing = !listed;
      if (w.missing) {
        Warn(why);
      } else {
        Log("topic " + topic + " is listed by the cluster again");
      }
    }
    if (!w.missing) return std::nullopt;
    return why;
  }

  void PublishInstanceDegraded() {
    std::vector<std::string> reasons;
    if (!o.previous_group_unverified.empty()) reasons.push_back(o.previous_group_unverified);
    if (!repartition_reason.empty()) reasons.push_back(repartition_reason);
    if (!dead_letters_unlisted.empty()) reasons.push_back(dead_letters_unlisted);
    board.SetInstanceDegraded(std::move(reasons));
  }

  // Adding partitions to the input moves keys (the producers' default partitioner
  // takes a key's hash modulo the count): a retry produced after a producer learned
  // the new count may reach a shard that never saw its first copy and be counted
  // twice. Producers learn it at their next metadata refresh, and a retry comes up to
  // a dedup window after its first copy: the instance says so for that long (a log
  // line, /readyz `degraded`, oncecount_input_repartitioned), and follows the new
  // shards it does not own, so that its merged answers are complete again.
  void NoticeInputPartitions(const std::map<std::string, int>& counts) {
    const int now = counts.at(o.input_topic);
    const int before = input_partitions.load(std::memory_order_relaxed);
    if (now > before) {
      input_partitions.store(now, std::memory_order_relaxed);
      ReportRepartition(before, now, counts);
    } else if (now < before && (input_shrunk_to < 0 || now < input_shrunk_to)) {
      // Kafka never removes partitions: a broker's stale metadata, or a topic deleted
      // and created again (whose shards' states no longer match its records).
      Warn("the cluster says topic " + o.input_topic + " has " + std::to_string(now) +
           " partitions, fewer than the " + std::to_string(before) +
           " it had: Kafka never removes partitions, so a broker answered from stale "
           "metadata, or the topic was deleted and created again (its shards' counts then "
           "no longer match its records; docs/operations.md, \"A shard's input is behind its "
           "state\")");
    }
    if (now < before && (input_shrunk_to < 0 || now < input_shrunk_to)) input_shrunk_to = now;
    FollowNewShards(counts);
  }

  void ReportRepartition(int before, int now, const std::map<std::string, int>& counts) {
    board.SetPartitionCount(now);
    const std::chrono::milliseconds lasts =
        kProducerMetadataAge + o.dedup.window + o.timestamp_tolerance;
    repartitioned_until_ms = clock.SteadyMs() + lasts.count();
    const std::string why =
        "topic " + o.input_topic + " has " + std::to_string(now) + " partitions now, " +
        std::to_string(before) +
        " before: a producer that learns the new count sends keys to other partitions, so a "
        "retry of an event produced before it did may reach a shard that never saw its first "
        "copy and be counted twice, for " +
        std::to_string(lasts.count() / 1000) +
        " s after the change (the producers' metadata refresh, 5 min by default, and one "
        "dedup window, for events produced meanwhile; docs/operations.md, \"Partitions are "
        "the unit of scale\")";
    repartition_reason = why;
    PublishInstanceDegraded();
    repartition_reported.store(true, std::memory_order_relaxed);
    const auto changelog = counts.find(o.changelog_topic);
    if (changelog != counts.end() && changelog->second < now) {
      Warn(why + "; and topic " + o.changelog_topic + " has " + std::to_string(changelog->second) +
           " partitions: the new partitions' shards cannot run until it has as many");
    } else {
      Warn(why);
    }
  }

  // Called before every check, whether the cluster answers it or not.
  void ExpireRepartitionNotice() {
    if (repartitioned_until_ms < 0 || clock.SteadyMs() < repartitioned_until_ms) return;
    repartitioned_until_ms = -1;
    repartition_reason.clear();
    PublishInstanceDegraded();
    repartition_reported.store(false, std::memory_order_relaxed);
    Log("the producers' metadata refresh and one dedup window have passed since topic " +
        o.input_topic + " gained partitions: a retry now reaches its first copy's shard");
  }

  // The replicator follows the shards that existed when it started; shards added
  // since that another instance owns are followed from the moment their changelog
  // partition exists (a revocation gives it the ones this instance owns).
  void FollowNewShards(const std::map<std::string, int>& counts) {
    if (replicator == nullptr) return;
    const auto changelog = counts.find(o.changelog_topic);
    if (changelog == counts.end()) return;
    const int32_t followable = std::min(input_partitions.load(std::memory_order_relaxed),
                                        static_cast<int>(changelog->second));
    std::vector<base::Partition> added;
    for (int32_t p = followed_through; p < followable; ++p) {
      if (!shards.contains(base::Partition(p))) added.push_back(base::Partition(p));
    }
    followed_through = std::max(followed_through, followable);
    if (added.empty()) return;
    Log("following " + std::to_string(added.size()) +
        " new shard(s) this instance does not own, as standbys or replicas");
    replicator->Follow(added);
  }

  // Asks the end of the input partitions of running shards that received nothing for
  // kQuietChecks checks (CheckTopicsListed's cadence): a partition without a leader, or
  // whose brokers cannot be reached, gives the consumer nothing and says nothing. Two
  // questions in a row that fail (four that time out) show the shard failed, naming
  // the error (/readyz 503), until one is answered or input comes. An answer also refreshes the
  // shard's lag, which the fetcher's cached watermark no longer moves. Each call asks for at most
  // kQuietAskBudget in all, going round the shards. A question goes to the partition's leader:
  // one that waited its full timeout for a broker that answered nothing else this check counts
  // for every quiet partition that broker leads, asked or not, so that a broker that does not
  // answer shows all its shards failed in four checks, however many they are (asked one by
  // one, twelve took twelve checks). A broker that is only slow answers some: it is not
  // judged by a question the budget cut short.
  void CheckQuietInputs() {
    const int64_t until = clock.SteadyMs() + kQuietAskBudget.count();
    std::vector<base::Partition> to_ask;
    for (auto& [p, slot] : shards) {
      if (slot.phase != shard::ShardPhase::kRunning) continue;
      if (slot.last_routed != slot.routed_at_last_check) {
        slot.routed_at_last_check = slot.last_routed;
        slot.quiet_checks = 0;
        slot.end_query_failures = 0;
        slot.timeouts_counted = 0;
        MarkInputReachable(p, slot);
      } else if (++slot.quiet_checks >= kQuietChecks) {
        to_ask.push_back(p);
      }
    }
    if (to_ask.empty()) return;
    // The last leaders known stand when the question fails (it may have gone to the
    // broker that does not answer); none known: each partition is asked alone.
    const bool leaders_fresh = [&] {
      auto known = consumer->PartitionLeaders(kQuietAskTimeout);
      if (!known) return false;
      input_leaders = std::move(known).value();
      return true;
    }();
    const auto leader_of = [&](base::Partition p) {
      const auto it = input_leaders.find(p);
      return it != input_leaders.end() ? it->second : -1;
    };
    std::map<int32_t, kafka::KafkaError> silent;  // brokers that answered nothing, by id
    std::set<int32_t> answered;                   // brokers that answered a question
    std::set<base::Partition> judged;  // answered, failed, or counted for a silent broker
    // Going round: those after the last one asked first.
    std::stable_partition(to_ask.begin(), to_ask.end(),
                          [&](base::Partition p) { return p > last_quiet_asked; });
    for (base::Partition p : to_ask) {
      ShardSlot& slot = shards[p];
      const int32_t broker = leader_of(p);
      if (const auto it = silent.find(broker); it != silent.end()) {
        judged.insert(p);
        CountEndQueryFailure(p, slot, it->second);
        continue;
      }
      const int64_t left = until - clock.SteadyMs();
      if (left < kQuietAskTimeout.count() / 3) continue;
      base::Offset high;
      const auto timeout = std::min(kQuietAskTimeout, std::chrono::milliseconds(left));
      if (kafka::KafkaError e = consumer->QueryEnd(p, high, timeout)) {
        if (e.code == "_TIMED_OUT" && broker >= 0 && timeout == kQuietAskTimeout &&
            !answered.contains(broker)) {
          silent[broker] = {e.kind, e.code,
                            "broker " + std::to_string(broker) +
                                ", which leads it, answered no question about its partitions "
                                "this check (one waited " +
                                std::to_string(timeout.count()) + " ms: " + e.message + ")"};
        }
        // A broker's error (NOT_LEADER_FOR_PARTITION) is an answer; librdkafka's own
        // (_TIMED_OUT, _TRANSPORT) is not.
        if (broker >= 0 && !e.code.starts_with("_")) answered.insert(broker);
        // A question the budget cut short proves nothing of a slow broker; it goes first
        // at the next check, with a full timeout.
        if (e.code == "_TIMED_OUT" && timeout < kQuietAskTimeout) continue;
        last_quiet_asked = p;
        judged.insert(p);
        CountEndQueryFailure(p, slot, e);
        continue;
      }
      if (broker >= 0) answered.insert(broker);
      last_quiet_asked = p;
      judged.insert(p);
      slot.end_query_failures = 0;
      slot.timeouts_counted = 0;
      slot.high_watermark = std::max(slot.high_watermark, high);
      MarkInputReachable(p, slot);
    }
    // Timeouts are a broker's silence, counted in a row: a broker that answered this
    // check takes them back from the partitions it was not asked about, as long as the
    // leaders are known to be the ones the questions went to.
    if (!leaders_fresh) return;
    for (base::Partition p : to_ask) {
      ShardSlot& slot = shards[p];
      if (!judged.contains(p) && answered.contains(leader_of(p))) {
        slot.end_query_failures -= slot.timeouts_counted;
        slot.timeouts_counted = 0;
      }
    }
  }

  // A question that timed out may only have met a busy broker: it takes four of them in
  // a row, or two answers that say there is no leader.
  void CountEndQueryFailure(base::Partition p, ShardSlot& slot, const kafka::KafkaError& e) {
    if (e.code == "_TIMED_OUT") ++slot.timeouts_counted;
    ++slot.end_query_failures;
    const bool enough =
        slot.end_query_failures - slot.timeouts_counted >= 2 || slot.end_query_failures >= 4;
    if (!enough || !slot.input_unreachable.empty()) return;
    slot.input_unreachable =
        "its input partition cannot be read: the consumer got nothing from it for " +
        std::to_string(slot.quiet_checks * kInputCheckMs / 1000) +
        " s and its end cannot be asked for (" + e.ToString() +
        "; a partition without a leader, or brokers that cannot be reached)";
    Warn("shard " + std::to_string(p.value()) + ": " + slot.input_unreachable);
    Publish(p, slot);
  }

  // Retention counts bytes per partition, and the snapshot cadence keeps two
  // snapshots and the batches between them within what the cluster says it keeps (or
  // kafka.changelog_retention_bytes when it does not say). Told too much, the cadence
  // writes too rarely, and retention takes a shard's newest complete snapshot while
  // the shard runs: nothing would say so until a restore failed ("A shard's changelog
  // lost its state"), with the state gone for good. One running shard per check, in
  // turn, has its partition's start asked for; one that passed its snapshot's
  // transaction is said, counted, and snapshots again at its next commit.
  void CheckSnapshotsKept() {
    std::vector<base::Partition> known;
    for (const auto& [p, slot] : shards) {
      if (slot.phase == shard::ShardPhase::kRunning && slot.snapshot_from) known.push_back(p);
    }
    if (known.empty()) return;
    auto next = std::find_if(known.begin(), known.end(),
                             [&](base::Partition p) { return p > last_snapshot_checked; });
    const base::Partition p = next != known.end() ? *next : known.front();
    last_snapshot_checked = p;
    auto start = o.clients->LogStart(o.changelog_topic, p, kQuietAskTimeout);
    if (!start) return;  // asked again at its next turn
    ShardSlot& slot = shards[p];
    if (start.value() <= *slot.snapshot_from) return;
    Warn("shard " + std::to_string(p.value()) +
         ": its changelog partition no longer holds its newest complete snapshot (its "
         "transaction began at offset " +
         std::to_string(slot.snapshot_from->value()) + "; the partition now begins at " +
         std::to_string(start.value().value()) +
         "): a restore could not rebuild the shard until it writes another, which it does "
         "at its next commit. The changelog keeps less than the snapshot cadence was told "
         "(the topic's retention.bytes, or kafka.changelog_retention_bytes when the cluster "
         "does not say), or its records were deleted (docs/operations.md, \"A shard's "
         "changelog lost its state\")");
    if (snapshots_cut != nullptr) snapshots_cut->Add();
    slot.snapshot_from.reset();
    slot.snapshot_due_ms = clock.SteadyMs();
    OweDueSnapshots();
  }

  void MarkInputReachable(base::Partition p, ShardSlot& slot) {
    if (slot.input_unreachable.empty()) return;
    slot.input_unreachable.clear();
    Log("shard " + std::to_string(p.value()) + ": its input partition can be read again");
    Publish(p, slot);
  }

  base::Status CheckTopics() {
    const std::string create =
        "create it (the changelog with as many partitions as " + o.input_topic + ")";
    auto counts = kafka::RequireTopics(
        *o.clients, {{o.input_topic, create}, {o.dlq_topic, create}, {o.changelog_topic, create}},
        std::chrono::milliseconds(10000));
    if (!counts) return counts.error();
    std::map<std::string, int>& partitions = counts.value();
    if (partitions[o.changelog_topic] != partitions[o.input_topic]) {
      return base::Error(base::Errc::kBadConfig,
                         "has " + std::to_string(partitions[o.changelog_topic]) +
                             " partitions; it needs " + std::to_string(partitions[o.input_topic]) +
                             ", as many as " + o.input_topic,
                         "topic " + o.changelog_topic);
    }
    board.SetPartitionCount(partitions[o.input_topic]);
    board.SetTransactionTimeout(o.transaction_timeout.count());
    input_partitions.store(partitions[o.input_topic], std::memory_order_relaxed);
    followed_through = partitions[o.input_topic];  // the replicator follows these from its start
    return ApplyTopicSettings();
  }

  // Guarantee 6: a changelog that deletes records by key (compaction) or by age (an
  // idle shard's whole changelog can expire) would reset shards to zero. Refused at
  // start; a cluster that does not tell (the embedded one) is logged.
  base::Status CheckChangelogRetention(const kafka::TopicSettings& told) {
    const std::string topic = "topic " + o.changelog_topic;
    if (told.cleanup_policy && told.cleanup_policy->find("compact") != std::string::npos) {
      return base::Error(base::Errc::kBadConfig,
                         "has cleanup.policy=" + *told.cleanup_policy +
                             ": compaction keeps one record per key and drops the batches a "
                             "restore needs; set cleanup.policy=delete",
                         topic);
    }
    if (told.retention_ms && *told.retention_ms >= 0) {
      return base::Error(base::Errc::kBadConfig,
                         "has retention.ms=" + std::to_string(*told.retention_ms) +
                             ": a shard idle longer than that would lose its whole changelog "
                             "and restart from zero; set retention.ms=-1 (retention.bytes "
                             "bounds its size)",
                         topic);
    }
    if (!told.cleanup_policy || !told.retention_ms) {
      Warn("the cluster did not tell " + o.changelog_topic +
           "'s cleanup.policy and retention.ms; they must be delete and -1 (a compacted or "
           "time-limited changelog can lose a shard's state)");
    }
    if (!told.retention_bytes && o.changelog_retention_bytes == 0) {
      Warn("the cluster did not tell " + o.changelog_topic +
           "'s retention.bytes: snapshots are timed as if each partition kept at least "
           "three snapshots' worth, and a smaller one can lose the last complete snapshot; "
           "set kafka.changelog_retention_bytes to what a partition keeps (dev-kafka: "
           "5242880)");
    }
    return {};
  }

  // The largest record we may write to `topic`: under its max.message.bytes (once
  // the cluster told it) and our own cap.
  size_t RecordLimit(const std::string& topic) {
    size_t limit = record_cap;
    if (const std::optional<size_t> broker = o.clients->MaxMessageBytes(topic)) {
      limit = std::min(limit, *broker > kRecordFraming ? *broker - kRecordFraming : 0);
    }
    return std::max(limit, changelog::kMinRecordBytes);
  }

  // The largest batch the producer may send: every topic it writes to must take it.
  size_t BatchLimit() { return std::min(RecordLimit(o.changelog_topic), RecordLimit(o.dlq_topic)); }

  shard::ShardRules ShardRules() {
    shard::ShardRules rules;
    const shard::ChangelogLimits limits = ChangelogLimits();
    rules.max_record_bytes = limits.max_record_bytes;
    rules.changelog_retention_bytes = limits.retention_bytes;
    rules.max_clock_ahead = o.timestamp_tolerance;
    // SPEC §2.1: the guarantee covers a retry only while the shard's clock is at most
    // the tolerance past its timestamp; the filter keeps window + tolerance.
    rules.late_after = o.timestamp_tolerance;
    rules.record_window = o.dedup.window - o.timestamp_tolerance;
    rules.late_records = o.late_records;
    rules.dedups = o.dedup.mode != filter::DedupMode::kNone;
    rules.bounds_filters = o.dedup.memory_limit_bytes != 0;
    return rules;
  }

  // --- Routing -------------------------------------------------------------------------

  void Route(kafka::Message m) {
    auto it = shards.find(m.partition);
    // A paused shard's input may still arrive from before the pause: its restore
    // seeks back to the position its changelog records.
    if (it == shards.end() || it->second.phase != shard::ShardPhase::kRunning) return;
    if (it->second.unreadable_at && m.offset > *it->second.unreadable_at) {
      PassedUnreadable(m.partition, it->second, m.offset);
    }
    it->second.last_routed = m.offset;
    if (!it->second.input_unreachable.empty()) MarkInputReachable(m.partition, it->second);
    router.Route(std::move(m));
  }

  // --- Commits ---------------------------------------------------------------------------

  std::vector<SealedShard> SealAll(bool backlog) {
    std::vector<std::future<std::vector<SealedShard>>> parts;
    for (ShardWorker* w : router.workers()) parts.push_back(w->Seal(backlog));
    std::vector<SealedShard> sealed;
    for (auto& part : parts) {
      for (SealedShard& s : part.get()) sealed.push_back(std::move(s));
    }
    return sealed;
  }

  // Seals every shard's batch on its worker and commits them, with their dead
  // letters and input offsets, in one transaction. `backlog`: the input was not
  // drained (ShardWorker::Seal).
  void Commit(bool backlog = false) {
    if (!fatal.ok() || consumer->AssignmentLost()) return;  // the revocation drops the work
    snapshot_owed = false;
    router.HandOverAll();
    last_commit_ms = clock.SteadyMs();
    last_commit_was_burst = router.routed_since_commit() >= kDrainedCommitEvents;
    router.Sealed();
    std::vector<SealedShard> sealed = SealAll(backlog);
    // A shard that failed on its worker commits nothing (its input offsets stay
    // where its last commit left them); the others go on without it.
    std::erase_if(sealed, [this](const SealedShard& s) {
      if (s.failure) ShardFailed(s.partition, *s.failure);
      return s.failure.has_value();
    });
    if (sealed.empty()) return;
    TxnContent content;
    content.offsets_topic = o.input_topic;
    const size_t dead_letter_limit = RecordLimit(o.dlq_topic);
    for (SealedShard& s : sealed) {
      for (const std::string& batch : s.batches) {
        content.records.push_back({o.changelog_topic, s.partition, std::nullopt, batch, {}});
      }
      for (const std::string& chunk : s.snapshot) {
        content.records.push_back({o.changelog_topic, s.partition, std::nullopt, chunk, {}});
      }
      for (DeadLetter& d : s.dead_letters) {
        FitDeadLetter(d, dead_letter_limit);
        content.records.push_back({o.dlq_topic, kafka::kAnyPartition, d.key, d.value, d.headers});
      }
      content.offsets.push_back({s.partition, s.next_offset});
    }
    const TxnResult result = TransactionWithGroup(content);
    if (result.outcome == TxnOutcome::kCommitted) return OnCommitted(sealed);
    // An abort undoes only what the transaction carried: a shard with no batch in it
    // (no input since its last commit) is what its changelog says, and runs on rather
    // than re-reading its changelog. When the group moved on, every shard goes.
    // A shard that carried only a snapshot (no batch: SnapshotAtNextSeal) holds its
    // committed state too, which its changelog cannot rebuild (that is why it
    // snapshots): it runs on, owed the snapshot again (OnSnapshotAborted).
    std::vector<base::Partition> affected;
    std::vector<base::Partition> snapshot_only;
    if (result.outcome == TxnOutcome::kAssignmentGone) {
      for (auto& [p, slot] : shards) affected.push_back(p);
    } else {
      for (const SealedShard& s : sealed) {
        (s.batches.empty() ? snapshot_only : affected).push_back(s.partition);
      }
    }
    OnTransactionFailed(result, affected, "transaction");
    if (!fatal.ok()) return;
    for (base::Partition p : snapshot_only) OnSnapshotAborted(p, result);
  }

  // A transaction that carried only the shard's owed snapshot aborted. The snapshot is
  // owed again: at once after a one-off abort; after a back-off when they come back
  // (the shard's changelog partition refusing writes, say), so that a snapshot that
  // cannot be written does not make every commit of the instance abort, the shards
  // with input restoring each time.
  void OnSnapshotAborted(base::Partition p, const TxnResult& result) {
    ShardSlot& slot = shards[p];
    const int64_t now = clock.SteadyMs();
    ++slot.transactions_aborted;
    const uint64_t aborts = CountAbortInARow(slot);
    slot.snapshot_due_ms = aborts == 1 ? now : now + BackoffMs(aborts - 1);
    if (aborts > 1) {
      Warn("shard " + std::to_string(p.value()) + ": the transaction of its snapshot aborted " +
           std::to_string(aborts) + " times in a row (last: " + result.error.ToString() +
           "); writing it again in " + std::to_string(slot.snapshot_due_ms - now) +
           " ms; until then its changelog cannot rebuild it");
    }
    OweDueSnapshots();
  }

  // Counts an abort of the shard's transaction and returns how many came in a row.
  // Aborts far apart are one-offs each: a shard that restored and then stayed idle (no
  // commit of its own to reset the count) starts over.
  uint64_t CountAbortInARow(ShardSlot& slot) {
    const int64_t now = clock.SteadyMs();
    if (now - slot.last_abort_ms > kAbortsInARowWithinMs) slot.aborts_in_a_row = 0;
    slot.last_abort_ms = now;
    return ++slot.aborts_in_a_row;
  }

  // Tells the workers of the shards whose owed snapshot is due to write it at the
  // next seal, and has the next commit come at the commit interval without input.
  void OweDueSnapshots() {
    const int64_t now = clock.SteadyMs();
    for (auto& [p, slot] : shards) {
      if (slot.snapshot_due_ms < 0 || slot.snapshot_due_ms > now) continue;
      slot.snapshot_due_ms = -1;
      if (slot.phase != shard::ShardPhase::kRunning) continue;
      WorkerOf(p).SnapshotAtNextSeal(p);
      snapshot_owed = true;
    }
  }

  // Runs the transaction with the group's metadata as the consumer knows it. A
  // rebalance that completes between reading the metadata and the offsets reaching
  // the coordinator (librdkafka rejoins in the background: another member joined,
  // say) gets a member that still owns every partition refused (ILLEGAL_GENERATION).
  // Unless the consumer knows its assignment is lost, the same content is tried once
  // more with the metadata read anew: the aborted attempt counts for no reader, and
  // the coordinator checks the generation again, so a member the group did leave
  // behind is refused again — and only then gives its shards up.
  TxnResult TransactionWithGroup(TxnContent& content) {
    std::unique_ptr<kafka::GroupMetadata> group = consumer->Metadata();
    content.group = group.get();
    const TxnResult result = TimedTransaction(content);
    if (result.outcome != TxnOutcome::kAssignmentGone || consumer->AssignmentLost()) return result;
    Warn("the group refused this instance's offsets (" + result.error.ToString() +
         "); trying once more with the group's metadata as it is now");
    group = consumer->Metadata();
    content.group = group.get();
    generation_retries->Add();
    return TimedTransaction(content);
  }

  TxnResult TimedTransaction(const TxnContent& content) {
    const int64_t start = clock.SteadyMs();
    txn_open_since_ms.store(start, std::memory_order_relaxed);
    board.SetTransactionOpenSince(start);
    TxnResult result = Transaction(*producer, clock, kCallTimeout, [this](const std::string& what) {
                         Warn("the instance's transaction: " + what);
                       }).Run(content);
    board.SetTransactionOpenSince(-1);
    txn_open_since_ms.store(-1, std::memory_order_relaxed);
    commit_seconds->Observe(static_cast<double>(clock.SteadyMs() - start) / 1000.0);
    return result;
  }

  void OnCommitted(std::vector<SealedShard>& sealed) {
    const ChangelogWritten written = LastCommitWritten();
    for (ShardWorker* w : router.workers()) w->Committed(written);
    for (SealedShard& s : sealed) {
      ShardSlot& slot = shards[s.partition];
      // Its transactions go through again. Only its own: a shard backing off from
      // aborts that come back must not start over because another one committed.
      slot.aborts_in_a_row = 0;
      if (!s.snapshot.empty()) {
        if (const auto w = written.records.find(s.partition); w != written.records.end()) {
          slot.snapshot_from = w->second.first;
          slot.snapshot_due_ms = -1;  // whatever was owed, this one pays it
        }
      }
      slot.committed_seq = s.seq;
      slot.run_failures = 0;
      ++slot.transactions_committed;
      slot.state_view = std::move(s.view);
      Publish(s.partition, slot);
    }
  }

  ChangelogWritten LastCommitWritten() {
    return {producer->OffsetsOfLastCommit(o.changelog_topic),
            o.clients->WritesTransactionMarkers()};
  }

  // A transaction (a commit or a claim) of `partitions` failed; see transaction.h.
  void OnTransactionFailed(const TxnResult& result, const std::vector<base::Partition>& partitions,
                           const std::string& what) {
    if (result.outcome == TxnOutcome::kFatal) {
      fatal = base::KafkaFailure(
          what + " failed and the producer cannot go on: " + result.error.ToString() +
          (result.error.kind == kafka::ErrorKind::kProducerFenced
               ? " (another instance runs with instance id " + o.instance_id +
                     ", or a transaction of ours outlived kafka.transaction_timeout_ms); "
                     "exiting so that a restart fences whatever is left"
               : ""));
      return;
    }
    const bool gone = result.outcome == TxnOutcome::kAssignmentGone;
    if (kafka::IsRecordTooLarge(result.error)) {
      record_cap = std::max(changelog::kMinRecordBytes, RecordLimit(o.changelog_topic) / 2);
      Warn("a broker refused a record batch as too large; records and batches are at most " +
           std::to_string(record_cap) + " bytes from now on");
      // The shards that run on (those with no batch in the transaction) seal their
      // next batches under the new cap too.
      GiveShardsTheChangelogLimits();
      // A smaller record cap does not shrink the producer's batches: only a new
      // producer gets a new batch.size.
      if (producer_batch_bytes > BatchLimit()) {
        if (base::Status s = CreateProducer(); !s) {
          fatal = base::KafkaFailure("cannot create a producer with smaller batches: " +
                                     s.error().ToString());
          return;
        }
      }
    }
    Warn(what + " aborted: " + result.error.ToString() +
         (gone ? "; the group moved on without this instance: dropping its shards without a "
                 "claim until the group gives them back"
               : "; restoring the shards that had a batch in it from their changelog"));
    for (base::Partition p : partitions) {
      auto it = shards.find(p);
      // A shard still restoring (failed, or held back) had no part in the transaction.
      if (it == shards.end() || it->second.phase != shard::ShardPhase::kRunning) continue;
      ++it->second.transactions_aborted;
      // After our own abort the claim continues from our last commit; when the group
      // moved on, someone else may own the shard already: cut nothing of theirs.
      if (gone) {
        Suspend(p,
                "the group moved on without this instance (" + result.error.code +
                    "); waiting for it to give the shard back",
                /*after_abort=*/false, o.restore_backoff);
        continue;
      }
      // A one-off abort restores at once. One that comes back at every commit (a
      // record the broker always refuses, a permission missing) would restore every
      // shard again and again, reading their changelogs, while nothing commits: it
      // backs off, and the shards show failed with the error until one commits.
      const uint64_t aborts = CountAbortInARow(it->second);
      if (aborts == 1) {
        Suspend(p, "", /*after_abort=*/true, std::chrono::milliseconds(0));
        continue;
      }
      const int64_t backoff = BackoffMs(aborts - 1);
      Suspend(p,
              what + " aborted " + std::to_string(aborts) +
                  " times in a row since the shard last committed (last: " +
                  result.error.ToString() + "); restoring it in " + std::to_string(backoff) + " ms",
              /*after_abort=*/true, std::chrono::milliseconds(backoff));
    }
  }

  // Takes a shard off its worker and pauses its input; a restore is due after `delay`.
  void Suspend(base::Partition p, const std::string& why, bool after_abort,
               std::chrono::milliseconds delay) {
    ShardSlot& slot = shards[p];
    if (slot.phase == shard::ShardPhase::kRunning) {
      WorkerOf(p).Drop({p});
      if (kafka::KafkaError e = consumer->Pause({p}))
        Warn("shard " + std::to_string(p.value()) + ": " + e.ToString());
    }
    slot.phase = why.empty() ? shard::ShardPhase::kRestoring : shard::ShardPhase::kFailed;
    slot.failure = why;
    slot.snapshot_from.reset();  // known again once the shard commits a snapshot
    slot.after_abort = after_abort;
    slot.next_restore_ms = clock.SteadyMs() + delay.count();
    slot.state_view.reset();
    Publish(p, slot);
  }

  // --- Restores ----------------------------------------------------------------------------

  std::vector<base::Partition> DueRestores() {
    std::vector<base::Partition> due;
    const int64_t now = clock.SteadyMs();
    for (const auto& [p, slot] : shards) {
      if (slot.phase != shard::ShardPhase::kRunning && slot.next_restore_ms <= now) {
        due.push_back(p);
      }
    }
    return due;
  }

  // Retries the restores that are due (after a failure, an abort, or the group
  // moving on) and starts their input where their changelog says.
  void RestoreDue() {
    std::vector<base::Partition> due = DueRestores();
    // A lost assignment (the group moved on while we were paused or cut off) is
    // revoked at the next poll: a claim now would be a zombie's, which a real broker
    // refuses and the embedded cluster does not.
    if (due.empty() || !fatal.ok() || stopping || consumer->AssignmentLost()) return;
    for (const auto& [p, position] : RestoreAndClaim(due)) {
      if (kafka::KafkaError e = StartInputAt(p, position)) {
        RestoreFailed(p, "cannot resume its input: " + e.ToString());
      }
    }
  }

  // Restores `partitions`, claims them in one transaction and hands them to their
  // workers; returns the input position of each shard that runs now.
  std::map<base::Partition, base::Offset> RestoreAndClaim(
      const std::vector<base::Partition>& partitions) {
    Commit();  // a claim needs a transaction of its own
    if (!fatal.ok()) return {};
    const int64_t start = clock.SteadyMs();
    std::map<base::Partition, OwnCommit> own;
    for (base::Partition p : partitions) {
      const ShardSlot& slot = shards[p];
      if (slot.after_abort) own[p] = OwnCommit{slot.epoch, slot.committed_seq};
    }
    LoadResult loaded = loader.Load(partitions, own);
    for (const auto& [p, why] : loaded.failed) RestoreFailed(p, why);
    for (const auto& [p, why] : loaded.held_back) RestoreHeldBack(p, why);
    // The read may have waited: the group may have moved on meanwhile, and a claim
    // now would be a zombie's (the next poll serves the revocation).
    if (loaded.restored.empty()) return {};
    const int64_t took_ms = clock.SteadyMs() - start;
    if (consumer->AssignmentLost()) {
      Warn("restoring " + std::to_string(loaded.restored.size()) + " shard(s) took " +
           std::to_string(took_ms) +
           " ms, and meanwhile the group moved on without this instance (a rebalance that "
           "waited longer than max.poll.interval.ms, " +
           std::to_string(o.max_poll_interval.count()) +
           " ms, for it, or a session timeout): no claim; the restore starts over once the "
           "group gives the shards again");
      return {};
    }
    if (2 * took_ms > o.max_poll_interval.count()) {
      Warn("restoring " + std::to_string(loaded.restored.size()) + " shard(s) took " +
           std::to_string(took_ms) + " ms, more than half of max.poll.interval.ms (" +
           std::to_string(o.max_poll_interval.count()) +
           " ms): the consumer does not poll while it restores, and past that a rebalance "
           "that waits for this instance (or, for a restore retried outside a rebalance, "
           "librdkafka itself) puts it out of the group, and the restore starts over; raise "
           "max.poll.interval.ms in kafka.properties, or "
           "keep restores short (state.dir on a volume that outlives the pod, "
           "processing.standby_replicas)");
    }
    std::map<base::Partition, base::Offset> positions = Claim(loaded.restored);
    if (!positions.empty()) {
      restore_seconds->Observe(static_cast<double>(clock.SteadyMs() - start) / 1000.0);
      // The claim published fresh views; refreshing them now would pass over every
      // filter bit again (about 20 ms for 8 shards) while their first input waits.
      next_refresh_ms = std::max(next_refresh_ms, clock.SteadyMs() + kViewRefreshMs);
    }
    Log("restored " + std::to_string(positions.size()) + " shard(s) in " +
        std::to_string(clock.SteadyMs() - start) + " ms");
    return positions;
  }

  // Not a failure: the shard stays restoring, says why, and tries again after
  // restore_backoff (the attempt itself waited ProcessorOptions::restore_wait), so
  // that the loop polls, the running shards go on and the group can rebalance in
  // between.
  void RestoreHeldBack(base::Partition p, const std::string& why) {
    ShardSlot& slot = shards[p];
    const std::string waiting = "waiting for the changelog: " + why;
    if (slot.failure != waiting) Warn("shard " + std::to_string(p.value()) + ": " + waiting);
    slot.phase = shard::ShardPhase::kRestoring;
    slot.failure = waiting;
    slot.next_restore_ms = clock.SteadyMs() + o.restore_backoff.count();
    Publish(p, slot);
  }

  void RestoreFailed(base::Partition p, const std::string& why) {
    ShardSlot& slot = shards[p];
    ++slot.restore_failures;
    ++slot.restore_retries;
    const int64_t backoff = BackoffMs(slot.restore_failures);
    Warn("shard " + std::to_string(p.value()) + ": restore failed (" + why + "); retrying in " +
         std::to_string(backoff) + " ms");
    Suspend(p,
            why + " (attempt " + std::to_string(slot.restore_failures) + ", retrying in " +
                std::to_string(backoff) + " ms)",
            slot.after_abort, std::chrono::milliseconds(backoff));
  }

  // A running shard failed on its worker (ShardWorker::Fail): its state is lost, so it
  // is restored from its changelog after a back-off that grows while it keeps failing
  // (a deterministic failure, replayed, comes back), and shown failed until then. The
  // other shards run on: one shard's failure does not end the instance.
  void ShardFailed(base::Partition p, const std::string& why) {
    ShardSlot& slot = shards[p];
    if (slot.phase != shard::ShardPhase::kRunning) return;
    ++slot.run_failures;
    ++slot.restore_retries;
    const int64_t backoff = BackoffMs(slot.run_failures);
    Warn("shard " + std::to_string(p.value()) + ": " + why + "; restoring it in " +
         std::to_string(backoff) + " ms");
    Suspend(p, why + " (restoring in " + std::to_string(backoff) + " ms)", /*after_abort=*/false,
            std::chrono::milliseconds(backoff));
  }

  // How long to wait after `failures` in a row: doubling from restore_backoff, up to
  // restore_backoff_max.
  int64_t BackoffMs(uint64_t failures) const {
    return std::min<int64_t>(o.restore_backoff_max.count(),
                             o.restore_backoff.count() << std::min<uint64_t>(failures - 1, 16));
  }

  // The input offset a claim carries: the shard's position, or for a shard that never
  // had input the partition's oldest offset. Never a logical (negative) offset:
  // librdkafka drops those, and a claim without offsets would reach no group
  // coordinator, which is what refuses the claim of a member the group left behind.
  //
  // A shard claimed before that never applied a batch has no position in its state,
  // but its last claim committed one for the group: the partition's start then. When
  // retention has removed records from there since (the shard unowned, or its owner
  // down, longer than the input topic keeps data), the claim carries that offset: the
  // first fetch finds it gone and counts the loss (OnInputGone). Claiming the start as
  // it is now would commit over the only evidence, with no count.
  base::Result<base::Offset> ClaimOffset(const RestoredShard& r) {
    const base::Offset position = r.state->position();
    if (!base::IsLogical(position)) return position;
    base::Offset low, high;
    if (kafka::KafkaError e =
            consumer->QueryWatermarks(r.claim.partition, low, high, kCallTimeout)) {
      return base::KafkaFailure("the start of its input partition is unknown: " + e.ToString());
    }
    if (r.claim.epoch == base::Epoch(1)) return low;  // no claim before (StateGoneWithItsChangelog)
    std::optional<base::Offset> committed;
    if (kafka::KafkaError e =
            consumer->CommittedOffset(r.claim.partition, committed, kCallTimeout)) {
      return base::KafkaFailure(
          "cannot tell whether retention removed input it never applied: the group's committed "
          "offset is unknown (" +
          e.ToString() + ")");
    }
    if (committed && !base::IsLogical(*committed) && *committed < low) return *committed;
    return low;
  }

  // Why a shard's first claim in its changelog partition would reset it to zero: the
  // partition holds no claim (a new shard, or every record of it gone: the changelog
  // topic deleted and created again, a cluster it was not copied to) while the group
  // has committed input offsets for it, which only a claim or a commit writes. nullopt:
  // not a first claim, or a new shard.
  std::optional<std::string> StateGoneWithItsChangelog(const RestoredShard& r) {
    if (r.claim.epoch != base::Epoch(1)) return std::nullopt;
    std::optional<base::Offset> committed;
    if (kafka::KafkaError e =
            consumer->CommittedOffset(r.claim.partition, committed, kCallTimeout)) {
      return "cannot tell whether the shard counted before (" + e.ToString() + ")";
    }
    if (!committed) return std::nullopt;
    return "its changelog partition holds no record of the shard, yet group " + o.group_id +
           " has committed input offset " + std::to_string(committed->value()) +
           " for it: the shard's state is gone (the changelog topic deleted and created "
           "again, or a cluster it was not copied to), and claiming it would restart its "
           "counters at zero with the events before that offset uncounted. To start over at "
           "zero on purpose, delete the group's committed offsets of the input topic "
           "(docs/operations.md, \"A shard's changelog lost its state\")";
  }

  // Writes the claims with the shards' input positions and the group's metadata, so
  // that a broker refuses the claim of a member the group has left behind.
  std::map<base::Partition, base::Offset> Claim(std::vector<RestoredShard>& restored) {
    TxnContent content;
    content.offsets_topic = o.input_topic;
    std::vector<std::string> encoded(restored.size());
    std::map<base::Partition, base::Offset> claimed;  // where each claimed shard's input starts
    for (size_t i = 0; i < restored.size(); ++i) {
      const base::Partition p = restored[i].claim.partition;
      if (const std::optional<std::string> gone = StateGoneWithItsChangelog(restored[i])) {
        RestoreFailed(p, *gone);
        continue;
      }
      const base::Result<base::Offset> offset = ClaimOffset(restored[i]);
      if (!offset) {
        RestoreFailed(p, offset.message());
        continue;
      }
      changelog::EncodeRecord(restored[i].claim, encoded[i]);
      claimed[p] = *offset;
      content.records.push_back({o.changelog_topic, p, std::nullopt, encoded[i], {}});
      content.offsets.push_back({p, *offset});
    }
    if (claimed.empty()) return {};
    const TxnResult result = TransactionWithGroup(content);
    if (result.outcome != TxnOutcome::kCommitted) {
      if (result.outcome == TxnOutcome::kFatal) {
        std::vector<base::Partition> partitions;
        for (const auto& [p, offset] : claimed) partitions.push_back(p);
        OnTransactionFailed(result, partitions, "claim");
        return {};
      }
      for (const auto& [p, offset] : claimed) {
        RestoreFailed(p, "its claim was refused: " + result.error.ToString());
      }
      return {};
    }
    // Input resumes at the offset the claim carries: absolute even for a shard that
    // never had input, so that the consumer starts fetching at once (a logical offset
    // costs an offset query, which librdkafka retries only after 500 ms while a
    // partition new to it has no leader yet), and so that input retention removes
    // after the claim is counted as lost (OnInputGone), not skipped silently.
    const ChangelogWritten written = LastCommitWritten();
    for (RestoredShard& r : restored) {
      if (claimed.count(r.claim.partition) > 0) Adopt(r, written);
    }
    return claimed;
  }

  // Hands a claimed shard to its worker; `claim_written`: where its claim went.
  void Adopt(RestoredShard& r, const ChangelogWritten& claim_written) {
    const base::Partition p = r.claim.partition;
    ShardSlot& slot = shards[p];
    if (r.unreadable_records > 0) {
      Warn("shard " + std::to_string(p.value()) + ": " + r.summary);
    } else {
      Log("shard " + std::to_string(p.value()) + ": " + r.summary);
    }
    slot.phase = shard::ShardPhase::kRunning;
    slot.failure.clear();
    slot.unreadable_at.reset();  // its input starts again: the consumer says it again
    // (slot.stuck stays until the consumer goes past the record)
    slot.changelog_unreadable_records = r.unreadable_records;
    slot.quiet_checks = 0;
    slot.end_query_failures = 0;
    slot.timeouts_counted = 0;
    slot.input_unreachable.clear();
    slot.restore_failures = 0;
    slot.after_abort = false;
    slot.epoch = r.claim.epoch;
    slot.committed_seq = r.state->committed_seq();
    // Where its snapshot lies in the changelog is not known (a restore reads records,
    // not their offsets), so CheckSnapshotsKept cannot watch the shard until it commits
    // one: a busy shard does within the cadence, an idle one never would, and retention
    // or a deletion could take its state unseen while it alone holds it. One is owed
    // within the cadence's longest interval, staggered as the cycles are.
    slot.snapshot_from.reset();
    slot.snapshot_due_ms =
        clock.SteadyMs() + static_cast<int64_t>((1.0 - SnapshotPhase(p)) *
                                                static_cast<double>(kAdoptedSnapshotWithinMs));
    // The rules first: the first view says what they found (record_window_held).
    const shard::ShardRules rules = ShardRules();
    r.state->set_rules(rules);
    shard::ShardView base;
    base.target_fpp = o.dedup.target_fpp;
    slot.state_view = r.state->MakeView(std::move(base), clock.WallMs());
    if (r.state->rules().filter_unbounded) {
      Warn("shard " + std::to_string(p.value()) +
           ": its filter, restored from a state written before filters had a memory bound, "
           "holds more than dedup.max_filter_mib already and keeps no bound: it grows with "
           "the load, and a later restore gives it the bound once it fits (/readyz lists "
           "it as degraded; docs/operations.md, \"The memory bound\")");
    }
    if (const auto held = r.state->rules().record_window_held) {
      Warn("shard " + std::to_string(p.value()) +
           ": its filter, made under a smaller dedup.window_ms (or dedup.mode none), holds "
           "retries up to " +
           std::to_string(held->count()) + " ms after their first copy, not the window's " +
           std::to_string(rules.record_window->count()) +
           " ms: a retry later than that after its first copy may be counted twice, until the "
           "shard starts from an empty changelog (/readyz lists it as degraded; "
           "docs/operations.md, \"Time is the records' time\")");
    } else if (r.state->rules().late_after < rules.late_after) {
      Warn("shard " + std::to_string(p.value()) +
           ": its filter, restored from a state made under " +
           "a smaller dedup.timestamp_tolerance_ms or dedup.window_ms, holds " +
           std::to_string(r.state->rules().late_after->count()) +
           " ms beyond the window, not the configured tolerance's " +
           std::to_string(rules.late_after->count()) +
           " ms: records later than that are late (dedup.late_records) until the shard starts "
           "from an empty changelog (docs/operations.md, \"Time is the records' time\")");
    }
    std::optional<OwnedRun> run;
    if (const auto claim = claim_written.records.find(p);
        r.read_to && claim != claim_written.records.end()) {
      run.emplace(*r.read_to);
      run->Committed(claim->second, claim_written.markers);
    }
    WorkerOf(p).Adopt(std::move(r.state), r.read_to, r.kept, run);
    Publish(p, slot);
  }

  // Makes the consumer read partition p from `position` on. A seek is not enough: a
  // partition assigned paused at kOffsetEnd may still be resolving that logical
  // offset, and the answer arriving after a seek would override it (input skipped);
  // a partition whose position retention removed has a stopped fetcher, which cannot
  // seek. Assigning it again at an absolute offset drops both.
  kafka::KafkaError StartInputAt(base::Partition p, base::Offset position) {
    kafka::KafkaError e = consumer->IncrementalUnassign({p});
    if (!e) e = consumer->IncrementalAssign({{p, position}});
    if (!e) e = consumer->Resume({p});
    return e;
  }

  // --- Rebalances ----------------------------------------------------------------

  void OnAssigned(const std::vector<base::Partition>& partitions) override {
    assignment_seen = true;
    std::map<base::Partition, base::Offset> positions;
    if (!stopping) {
      Log("assigned " + std::to_string(partitions.size()) + " partition(s)");
      for (base::Partition p : partitions) {
        ShardSlot& slot = shards[p];
        slot = ShardSlot{};
        Publish(p, slot);
      }
    }
    // Only now, with the new shards on the board as restoring, may /readyz answer.
    board.SetAssignmentKnown(true);
    if (!stopping) positions = RestoreAndClaim(partitions);
    // Every partition the group gives us is assigned, so that the group revokes it
    // from us before anyone else gets it. A shard that is not restored yet is
    // paused until a retry restores it (RestoreDue).
    std::vector<kafka::PartitionOffset> assign;
    std::vector<base::Partition> paused;
    for (base::Partition p : partitions) {
      const auto it = positions.find(p);
      assign.push_back({p, it != positions.end() ? it->second : kafka::kOffsetEnd});
      if (it == positions.end()) paused.push_back(p);
    }
    if (kafka::KafkaError e = consumer->IncrementalAssign(assign)) {
      if (consumer->AssignmentLost()) {
        // Dropped by the group during the restore: these partitions are no longer
        // ours to take, and no revocation will name them.
        Warn("the group moved on without this instance before it took its assignment (" +
             e.ToString() + "); waiting for the group to give the shards again");
        board.SetAssignmentKnown(false);
        Forget(partitions);
        // The restore took them from the replicator, as a revocation gives them back.
        if (replicator) replicator->Follow(partitions);
        return;
      }
      fatal = e.ToError();
      return;
    }
    if (paused.empty()) return;
    if (kafka::KafkaError e = consumer->Pause(paused)) Warn(e.ToString());
  }

  void OnRevoked(const std::vector<base::Partition>& partitions, bool lost) override {
    if (lost) {
      // The group moved on without us (we were paused or cut off): another instance
      // may own these shards already. Committing now would be a zombie's commit.
      Warn("lost " + std::to_string(partitions.size()) +
           " partition(s); dropping their uncommitted work");
      // Out of the group until it rejoins: with no shard left to check, /readyz would
      // say ready while the instance processes nothing. The next assignment (librdkafka
      // delivers one, empty or not, once the member is back) says so again.
      board.SetAssignmentKnown(false);
    } else {
      Log("revoked " + std::to_string(partitions.size()) + " partition(s)");
      Commit();
    }
    Forget(partitions);
    if (kafka::KafkaError e = consumer->IncrementalUnassign(partitions)) {
      // One of them may be unassigned already (a StartInputAt that failed half-way);
      // the group completes the revocation only once every one is.
      Warn(e.ToString() + "; unassigning the revoked partitions one by one");
      for (base::Partition p : partitions) consumer->IncrementalUnassign({p});
    }
    if (replicator) replicator->Follow(partitions);
  }

  // Takes the shards off the instance: their slots, views and workers' states.
  void Forget(const std::vector<base::Partition>& partitions) {
    std::map<ShardWorker*, std::vector<base::Partition>> to_drop;
    for (base::Partition p : partitions) {
      shards.erase(p);
      board.Remove(p);
      to_drop[&WorkerOf(p)].push_back(p);
    }
    for (auto& [worker, dropped] : to_drop) worker->Drop(std::move(dropped));
  }

  // --- Views and the loop --------------------------------------------------------

  // Publishes the shard's view: its state as of the last commit (none while it is
  // restoring or failed) with what the processor knows beyond it.
  void Publish(base::Partition p, const ShardSlot& slot) {
    auto view = slot.state_view ? std::make_shared<shard::ShardView>(*slot.state_view)
                                : std::make_shared<shard::ShardView>();
    view->partition = p;
    view->role = shard::ShardRole::kActive;
    view->phase = slot.phase;
    view->failure = slot.failure;
    if (slot.phase == shard::ShardPhase::kRunning &&
        (!slot.stuck.empty() || !slot.input_unreachable.empty())) {
      view->phase = shard::ShardPhase::kFailed;  // it runs, and can go no further
      view->failure = !slot.stuck.empty() ? slot.stuck : slot.input_unreachable;
    }
    view->high_watermark = slot.high_watermark;
    view->transactions_committed = slot.transactions_committed;
    view->transactions_aborted = slot.transactions_aborted;
    view->input_lost = slot.input_lost;
    view->changelog_unreadable_records = slot.changelog_unreadable_records;
    view->restore_retries = slot.restore_retries;
    view->target_fpp = o.dedup.target_fpp;
    if (!view->counters) view->counters = std::make_shared<const shard::CounterSnapshot>();
    view->RestampAt(clock.WallMs());
    board.Publish(std::move(view));
  }

  // The consumer could not read an input record (or batch): librdkafka either goes on
  // past it (a checksum mismatch) or fetches it again and again (a batch it cannot
  // decompress). Gone past, its events are neither counted nor dead-lettered: the
  // offsets skipped are counted as lost (PassedUnreadable). Stuck on it, the shard
  // makes no progress: after kUnreadableStuckMs its view shows it failed, naming the
  // error (/readyz 503), until the consumer goes past the record.
  void OnInputUnreadable(base::Partition p, base::Offset offset, const std::string& error) {
    auto it = shards.find(p);
    if (it == shards.end() || it->second.phase != shard::ShardPhase::kRunning) {
      Warn("consumer: " + error);
      return;
    }
    ShardSlot& slot = it->second;
    const int64_t now = clock.SteadyMs();
    if (slot.unreadable_at && offset > *slot.unreadable_at) PassedUnreadable(p, slot, offset);
    if (slot.unreadable_at != offset) {
      slot.unreadable_at = offset;
      slot.unreadable_since_ms = now;
      Warn("shard " + std::to_string(p.value()) + ": the input record at offset " +
           std::to_string(offset.value()) + " cannot be read (" + error +
           "); what it holds is lost if the consumer goes on past it");
    } else if (slot.stuck.empty() && now - slot.unreadable_since_ms >= kUnreadableStuckMs) {
      slot.stuck = "its input record at offset " + std::to_string(offset.value()) +
                   " cannot be read and the consumer does not go past it (" + error +
                   "): find what wrote it (docs/operations.md, \"An input record cannot be "
                   "read\")";
      Warn("shard " + std::to_string(p.value()) + ": " + slot.stuck);
      Publish(p, slot);
    }
  }

  // The consumer went past the unreadable record: a record after it arrived, or
  // another unreadable one. What it skipped is counted as lost up to there (at most:
  // the offsets may hold transaction markers), once across aborts.
  void PassedUnreadable(base::Partition p, ShardSlot& slot, base::Offset next) {
    const base::Offset from = *slot.unreadable_at;
    slot.unreadable_at.reset();
    slot.stuck.clear();
    const uint64_t lost = slot.lost.Count(from, next);
    slot.input_lost += lost;
    Warn("shard " + std::to_string(p.value()) + ": the consumer went past input offsets " +
         std::to_string(from.value()) + ".." + std::to_string(next.Previous().value()) +
         ", which it could not read: up to " + std::to_string(next.Since(from)) +
         " message(s) lost" +
         (lost < static_cast<uint64_t>(next.Since(from))
              ? " (" + std::to_string(lost) + " not counted before)"
              : std::string()));
    Publish(p, slot);
  }

  // The shard's next input record is older than the partition's oldest one:
  // retention removed input before it was applied (the service was down longer than
  // the topic keeps data, or fell that far behind). Those events are lost; count
  // them where operators look, and go on from the oldest record there is.
  void OnInputGone(base::Partition p, base::Offset from) {
    auto it = shards.find(p);
    if (it == shards.end() || it->second.phase != shard::ShardPhase::kRunning) return;
    base::Offset low, high;
    if (kafka::KafkaError e = consumer->QueryWatermarks(p, low, high, kCallTimeout)) {
      return RestoreFailed(
          p, "its input position is gone and the partition's start is unknown: " + e.ToString());
    }
    // A log that ends before the position: the input is not the one the state
    // counted (a topic deleted and recreated, a log truncated by an unclean leader
    // election, a changelog mirrored from another cluster). Its new records would
    // sit below the position, where the worker skips what it already applied: none
    // would be counted, and none reported lost. Nothing can be counted exactly here.
    if (!base::IsLogical(from) && !base::IsLogical(high) && high < from) {
      return RestoreFailed(
          p, "its input partition ends at offset " + std::to_string(high.value()) +
                 ", before the offset " + std::to_string(from.value()) +
                 " its state has counted up to: the input topic was recreated or truncated, "
                 "and its records would be skipped as counted already (docs/operations.md, "
                 "\"A shard's input is behind its state\")");
    }
    ShardSlot& slot = it->second;
    const uint64_t gone =
        !base::IsLogical(from) && low > from ? static_cast<uint64_t>(low.Since(from)) : 0;
    const uint64_t lost = gone > 0 ? slot.lost.Count(from, low) : 0;
    slot.input_lost += lost;
    if (slot.unreadable_at && *slot.unreadable_at < low) {  // deleted past it (the way out)
      slot.unreadable_at.reset();
      slot.stuck.clear();
    }
    Warn("shard " + std::to_string(p.value()) + ": input offsets " + std::to_string(from.value()) +
         ".." + std::to_string(low.Previous().value()) +
         " were removed by retention before they were applied: " + std::to_string(gone) +
         " messages lost" +
         (lost < gone ? " (" + std::to_string(gone - lost) +
                            " of them counted already: before an abort took the shard back, "
                            "or as records the consumer could not read)"
                      : std::string()) +
         "; going on at offset " + std::to_string(low.value()));
    if (kafka::KafkaError e = StartInputAt(p, low)) {
      return RestoreFailed(p, "cannot go on after lost input: " + e.ToString());
    }
    Publish(p, it->second);
  }

  // Once a second: the input's high watermarks, fresh filter details of idle shards,
  // and a new timestamp on every view (it says how fresh the answer is).
  void RefreshViews() {
    for (auto& [p, slot] : shards) {
      // The fetcher's cache stops while its partition cannot be fetched; an end
      // CheckQuietInputs asked for since may be newer.
      const base::Offset high = consumer->CachedHighWatermark(p);
      if (!base::IsLogical(high)) slot.high_watermark = std::max(slot.high_watermark, high);
    }
    // Every worker is asked before any answer is awaited: they recompute their idle
    // shards' filter details side by side, not one after another.
    std::vector<std::future<std::vector<std::shared_ptr<const shard::ShardView>>>> answers;
    for (ShardWorker* w : router.workers()) answers.push_back(w->RefreshIdleViews());
    for (auto& answer : answers) {
      for (auto& view : answer.get()) {
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
    const int64_t deadline = clock.SteadyMs() + 30000;
    while (!assignment_seen && clock.SteadyMs() < deadline) {
      if (!consumer->Poll(std::chrono::milliseconds(100)))
        clock.Sleep(std::chrono::milliseconds(10));
    }
  }

  base::Status Start() {
    if (kafka::KafkaError e = consumer->Subscribe(this)) return e.ToError();
    next_refresh_ms = clock.SteadyMs();
    return {};
  }

  bool Step(std::chrono::milliseconds poll_timeout) {
    if (fatal.ok() && clock.SteadyMs() >= next_input_check_ms) {
      next_input_check_ms = clock.SteadyMs() + kInputCheckMs;
      CheckTopicsListed();
      CheckQuietInputs();
      CheckSnapshotsKept();
    }
    // Every turn, not only at the checks: owed snapshots are staggered (Adopt), and
    // each goes at its own commit rather than with all that fell due since the last.
    if (fatal.ok()) OweDueSnapshots();
    if (fatal.ok() && clock.SteadyMs() >= next_settings_ms) {
      next_settings_ms = clock.SteadyMs() + kViewRefreshMs;
      if (base::Status s = ApplyTopicSettings(); !s) {
        fatal = std::move(s).error();
        return false;  // its producer may be gone (CreateProducer failed to make another)
      }
    }
    std::chrono::milliseconds timeout = poll_timeout;
    bool drained = false;
    for (int i = 0; i < kBurst && fatal.ok(); ++i) {
      std::optional<kafka::Message> m = consumer->Poll(timeout);
      if (!m) {
        drained = true;
        break;
      }
      timeout = std::chrono::milliseconds(0);
      switch (m->kind) {
        case kafka::MessageKind::kRecord:
          Route(std::move(*m));
          break;
        case kafka::MessageKind::kOffsetOutOfRange:
          OnInputGone(m->partition, m->offset);
          break;
        case kafka::MessageKind::kFatal:
          fatal = base::KafkaFailure("the consumer hit a fatal error: " + m->error +
                                     FencedInstanceHint(m->error));
          break;
        case kafka::MessageKind::kUnreadable:
          OnInputUnreadable(m->partition, m->offset, m->error);
          break;
        case kafka::MessageKind::kError:
          consumer_errors->Add();
          Warn("consumer: " + m->error);
          break;
        case kafka::MessageKind::kPartitionEnd:
          break;
      }
      if (router.commit_due()) break;
    }
    router.HandOverAll();
    // A commit inside the poll (a rebalance's) may have ended the processor, and with
    // it the producer (CreateProducer failed to make another).
    if (!fatal.ok()) return false;
    producer->Poll();
    const int64_t now = clock.SteadyMs();
    if ((router.routed_since_commit() > 0 || snapshot_owed) &&
        (router.commit_due() || now - last_commit_ms >= o.commit_interval.count() ||
         (drained &&
          (last_commit_was_burst || router.routed_since_commit() >= kDrainedCommitEvents) &&
          now - last_commit_ms >= o.commit_interval.count() / 5))) {
      Commit(!drained);
    }
    RestoreDue();
    if (now >= next_refresh_ms) {
      RefreshViews();
      next_refresh_ms = now + kViewRefreshMs;
    }
    return fatal.ok();
  }

  // FENCED_INSTANCE_ID (librdkafka: "Static consumer fenced by other consumer with
  // same group.instance.id"): a newer process took this instance's place in the group.
  std::string FencedInstanceHint(const std::string& error) const {
    if (o.group_instance_id.empty() || error.find("enced") == std::string::npos) return "";
    return " (another process joined the group with this instance id, " + o.group_instance_id +
           ", and took its shards: this one stops)";
  }

  base::Status Finish() {
    if (fatal.ok()) Commit();
    stopping = true;
    AwaitFirstAssignment();
    if (!o.group_instance_id.empty() && !o.leave_group_on_stop) {
      Log("stopping without leaving the group (kafka.leave_group_on_stop: false): its " +
          std::to_string(shards.size()) + " shards wait for instance " + o.group_instance_id +
          ", unread, until it is back or its session times out (session.timeout.ms)");
    }
    consumer->Close();  // revokes our partitions (committing first)
    // Input messages still queued at the workers must be gone before the consumer is.
    for (ShardWorker* w : router.workers()) {
      w->DropAll();
      w->Sync();
    }
    return fatal;
  }
};

Processor::Processor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Processor::~Processor() = default;

base::Result<std::unique_ptr<Processor>> Processor::Create(ProcessorOptions options,
                                                           shard::StateBoard& board,
                                                           std::vector<ShardWorker*> workers,
                                                           replica::Replicator* replicator) {
  if (options.clients == nullptr) return base::InvalidArgument("no Kafka clients");
  if (workers.empty()) return base::InvalidArgument("no shard workers");
  if (options.instance_id.empty()) return base::InvalidArgument("no instance id");
  auto impl = std::make_unique<Impl>(std::move(options), board, std::move(workers), replicator);
  if (base::Status s = impl->CheckTopics(); !s) return std::move(s).error();
  if (base::Status s = impl->CreateClients(); !s) return std::move(s).error();
  impl->PublishInstanceDegraded();
  return std::unique_ptr<Processor>(new Processor(std::move(impl)));
}

base::Status Processor::Run() {
  if (base::Status s = Start(); !s) return s;
  while (!stop_.load() && Step()) {
  }
  return Finish();
}

base::Status Processor::Start() {
  return impl_->Start();
}

bool Processor::Step(std::chrono::milliseconds poll_timeout) {
  return impl_->Step(poll_timeout);
}

base::Status Processor::Finish() {
  return impl_->Finish();
}

void Processor::CommitNow() {
  impl_->Commit();
}

}  // namespace oncecount::service
