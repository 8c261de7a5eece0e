#include "processor/replica/replicator.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "processor/changelog/lineage.h"
#include "processor/kafka/topics.h"
#include "processor/replica/member_record.h"
#include "processor/replica/membership.h"

namespace oncecount::replica {
namespace {

// How often replicas reconsider whether they are hot (membership changes).
constexpr int64_t kRolesEveryMs = 200;
// A replica's view is published at least this often (its staleness moves).
constexpr int64_t kRepublishEveryMs = 1000;
// A replica recomputes its filter's summary and digest at most this often.
constexpr int64_t kFilterDetailEveryMs = 1000;
// A replica that failed (its changelog lacks batches) tries again after this long.
constexpr int64_t kRetryFailedAfterMs = 10000;    // doubling while it keeps failing,
constexpr int64_t kRetryFailedAtMostMs = 300000;  // up to this
// How long a built replica waits to learn where its changelog partition begins.
constexpr std::chrono::milliseconds kLogStartWait{10000};
// A caught-up replica asks its changelog partition's stable end this often: the
// reader reports an end once, and a fetcher that stops sends nothing to say it
// stopped. The answer must be where the replica's last end was.
constexpr int64_t kConfirmEndEveryMs = 5000;
// Unconfirmed for this long (the question failed, or went unasked), a caught-up
// replica reads as behind since its last confirmation.
constexpr int64_t kCaughtUpForMs = 15000;
// Short: the questions share the loop with reading, and one a broker cannot answer
// must not keep the others from being asked in time (a healthy one answers in ms).
constexpr std::chrono::milliseconds kStableEndWait{250};
// How long one step reads before it lets the rest of the loop (heartbeats, commands,
// roles, views) run: a replica caught up with a long tail builds inside the read.
constexpr int64_t kReadSliceMs = 100;
// An assignment the reader refused is tried again after this long.
constexpr int64_t kReassignAfterMs = 1000;

struct Replica {
  enum class Mode : uint8_t { kCollecting, kFollowing, kFailed };
  Mode mode = Mode::kCollecting;
  bool hot = false;  // keeps the filter: a standby
  std::unique_ptr<changelog::LineageBuilder> collecting;
  // Collects keeping every record: the streamed build found its lineage cut back
  // before the snapshot it kept.
  bool keep_everything = false;
  std::unique_ptr<shard::ShardState> state;
  std::optional<changelog::LineageFollower> follower;
  base::Offset next_offset = kafka::kOffsetBeginning;
  uint64_t unreadable_records = 0;  // damaged records its last build skipped
  changelog::SnapshotCycle cycle;   // of what it built from and followed since (Handoff)
  bool at_end = false;
  // Where the reader last reported the partition's end, while no record came after
  // it: what a confirmation of the end compares with.
  std::optional<base::Offset> reported_end;
  int64_t next_end_check_ms = 0;
  bool end_unconfirmed = false;  // the last question failed (warned once)
  bool stall_warned = false;     // found behind with nothing coming (warned once)
  // When the current build began, or when it was last known caught up (the
  // reader's end, or a confirmation of it).
  int64_t since_ms = 0;
  // Failures in a row, across the retries' rebuilds, until it catches up: the first one's
  // time (-1: none), for its lag, and their number, for the retries' back-off.
  int64_t failed_since_ms = -1;
  uint32_t failures = 0;
  std::string failure;
  // Since when no live instance owns the shard (-1: one does, or not known yet).
  int64_t unowned_since_ms = -1;
  bool dirty = true;
  int64_t last_publish_ms = 0;
  int64_t last_filter_detail_ms = 0;
  std::shared_ptr<const shard::ShardView> last_view;
};

}  // namespace

struct Replicator::Impl {
  ReplicatorOptions o;
  base::Clock& clock;
  shard::StateBoard& board;
  std::unique_ptr<kafka::PartitionReader> reader;  // the changelog and the members topic
  std::unique_ptr<kafka::PlainProducer> members_producer;
  // What the members producer's deliveries were when last looked at (CheckHeartbeats),
  // and whether heartbeats fail now: a run of failures is logged once, not each second.
  kafka::Deliveries heartbeats_seen;
  bool heartbeats_failing = false;
  int32_t partitions = 0;
  std::map<base::Partition, Replica> replicas;
  std::set<base::Partition> actives;
  std::optional<Membership> membership;
  base::Offset members_next_offset = kafka::kOffsetBeginning;
  static constexpr size_t kMaxUnreadableSendersNamed = 64;
  std::set<std::string> unreadable_senders;  // whose unreadable heartbeat was logged
  int64_t started_ms = 0;                    // Now() at Start
  bool assignment_changed = true;
  int64_t next_assign_ms = 0;  // after a refused assignment
  bool heartbeat_soon = true;
  int64_t next_heartbeat_ms = 0;
  int64_t next_roles_ms = 0;
  base::Status fatal;  // what ended the replicator; ok while it runs

  // Commands from other threads.
  struct TakeCommand {
    std::vector<base::Partition> partitions;
    std::promise<std::map<base::Partition, Handoff>> done;
  };
  struct FollowCommand {
    std::vector<base::Partition> partitions;
  };
  std::mutex commands_mu;
  std::vector<std::variant<TakeCommand, FollowCommand>> commands;
  bool closed = false;  // Run has ended: commands are answered at once
  // The thread that runs the loop; Take called on it runs at once.
  std::atomic<std::thread::id> owner{};

  std::unique_ptr<base::MetricRegistry> own_metrics;  // when the options bring none
  base::Counter* rebuilds = nullptr;
  base::Counter* heartbeat_failures = nullptr;

  Impl(ReplicatorOptions options, shard::StateBoard& b)
      : o(std::move(options)),
        clock(o.clock != nullptr ? *o.clock : base::DefaultClock()),
        board(b) {
    base::MetricRegistry* metrics = o.metrics;
    if (metrics == nullptr) {
      own_metrics = std::make_unique<base::MetricRegistry>();
      metrics = own_metrics.get();
    }
    rebuilds = &metrics->AddCounter(
        "oncecount_replica_rebuilds_total",
        "Replicas read again from the start of their changelog partition (a gap, a "
        "changelog that moved under them, a new epoch they could not follow).");
    heartbeat_failures = &metrics->AddCounter(
        "oncecount_heartbeat_failures_total",
        "Heartbeats to the members topic that could not be sent or were not delivered (the "
        "topic deleted, a partition without a leader, Write refused). While this instance's "
        "heartbeats fail, the others see it absent and stand by for its shards.");
  }

  void Log(const std::string& line) const { o.log.Info(line); }
  void Warn(const std::string& line) const { o.log.Warn(line); }

  // --- Set-up --------------------------------------------------------------------

  base::Status CreateClients() {
    if (base::Status s = CreateReader(); !s) return s;
    if (o.members_topic.empty()) return {};
    if (base::Status s = CreateMembersProducer(); !s) return s;
    membership.emplace(o.instance_id, o.member_timeout);
    return {};
  }

  base::Status CreateReader() {
    auto r = o.clients->NewPartitionReader("replica-" + o.instance_id);
    if (!r) return r.error().Wrap("cannot create the changelog follower");
    reader = std::move(r.value());
    return {};
  }

  base::Status CreateMembersProducer() {
    // A heartbeat that cannot be delivered (a partition without a leader, brokers out of
    // reach) is told failed after member_timeout, when the others already count this
    // instance absent, not after librdkafka's five minutes.
    kafka::PlainProducerSpec spec;
    spec.delivery_timeout = o.member_timeout;
    auto p = o.clients->NewPlainProducer(spec);
    if (!p) return p.error().Wrap("cannot create the members producer");
    members_producer = std::move(p.value());
    heartbeats_seen = {};
    return {};
  }

  // A client's fatal error ends that client, not what the replicas hold: the
  // replicator makes a new one and goes on from where it was (each replica from its
  // next offset). Only a client that cannot be made again ends the replicator.
  void RenewReader(const std::string& error) {
    Warn("replicas: the changelog follower had a fatal error (" + error +
         "); following on with a new one");
    reader->Close();
    reader.reset();
    if (base::Status s = CreateReader(); !s) {
      fatal = base::KafkaFailure("the changelog follower hit a fatal error (" + error +
                                 ") and could not be made again: " + s.message());
      return;
    }
    assignment_changed = true;
    next_assign_ms = 0;
  }

  void RenewMembersProducer(const std::string& error) {
    Warn("members: the heartbeat producer had a fatal error (" + error +
         "); sending on with a new one");
    members_producer->Flush(std::chrono::milliseconds(0));
    members_producer.reset();
    if (base::Status s = CreateMembersProducer(); !s) {
      fatal = base::KafkaFailure("the heartbeat producer hit a fatal error (" + error +
                                 ") and could not be made again: " + s.message());
      return;
    }
    heartbeat_soon = true;
  }

  base::Status CheckTopics() {
    std::vector<kafka::RequiredTopic> required = {{o.changelog_topic, ""}};
    if (!o.members_topic.empty()) {
      required.push_back({o.members_topic,
                          "create it with one partition (standbys need it), or set "
                          "processing.standby_replicas: 0"});
    }
    auto counts = kafka::RequireTopics(*o.clients, required, std::chrono::milliseconds(10000));
    if (!counts) return counts.error();
    partitions = counts.value()[o.changelog_topic];
    return {};
  }

  // --- Commands ------------------------------------------------------------------

  void RunCommands() {
    std::vector<std::variant<TakeCommand, FollowCommand>> pending;
    {
      std::lock_guard lock(commands_mu);
      pending.swap(commands);
    }
    for (auto& command : pending) {
      if (auto* take = std::get_if<TakeCommand>(&command)) {
        take->done.set_value(TakeNow(take->partitions));
      } else {
        FollowNow(std::get<FollowCommand>(command).partitions);
      }
    }
  }

  std::map<base::Partition, Handoff> TakeNow(const std::vector<base::Partition>& taken) {
    std::map<base::Partition, Handoff> handoffs;
    for (base::Partition p : taken) {
      actives.insert(p);
      auto it = replicas.find(p);
      if (it == replicas.end()) continue;
      Replica& r = it->second;
      if (r.mode == Replica::Mode::kFollowing && r.hot && !r.state->forgot_filter()) {
        handoffs[p] =
            Handoff{std::move(r.state), *r.follower, r.next_offset, r.unreadable_records, r.cycle};
      }
      replicas.erase(it);
      board.RemoveFollowerView(p);
    }
    assignment_changed = true;
    heartbeat_soon = true;
    return handoffs;
  }

  void FollowNow(const std::vector<base::Partition>& given_back) {
    for (base::Partition p : given_back) {
      actives.erase(p);
      if (!replicas.contains(p)) StartCollecting(p, WantsHot(p, Now()));
    }
    assignment_changed = true;
    heartbeat_soon = true;
  }

  // --- Replicas ------------------------------------------------------------------

  // The replicator's clock: when heartbeats arrived, whether a member is live, when a
  // replica was last caught up or failed, when the next heartbeat, publish or retry is
  // due. Durations on this host: on the wall clock a step (NTP) larger than
  // member_timeout made every peer look dead (this instance then stood by for every
  // shard, rebuilding each replica from the changelog's start) or kept a dead one
  // live, and a step back made a replica behind look caught up. The wall clock only
  // stamps what other processes read (heartbeats, views).
  int64_t Now() const { return clock.SteadyMs(); }
  // The wall-clock time of steady time `steady_ms` (a view's published_at_ms).
  int64_t WallAt(int64_t steady_ms) const { return clock.WallMs() - (Now() - steady_ms); }

  void StartCollecting(base::Partition p, bool hot, bool keep_everything = false) {
    Replica& r = replicas[p];
    r = Replica{};
    r.hot = hot;
    r.keep_everything = keep_everything;
    r.collecting = std::make_unique<changelog::LineageBuilder>(
        keep_everything ? changelog::LineageBuilder::Keep::kEverything
                        : changelog::LineageBuilder::Keep::kFromNewestSnapshot);
    r.since_ms = Now();
  }

  // Reads partition p from its start again: the replica is rebuilt.
  void Rebuild(base::Partition p, Replica& r, const std::string& why,
               bool keep_everything = false) {
    Log("replica " + std::to_string(p.value()) + ": rebuilding (" + why + ")");
    rebuilds->Add();
    StartCollecting(p, r.hot, keep_everything);
    if (kafka::KafkaError e = reader->Seek({o.changelog_topic, p, kafka::kOffsetBeginning})) {
      Warn("replica " + std::to_string(p.value()) + ": seek failed: " + e.ToString());
      assignment_changed = true;  // assigning again starts it over as well
    }
  }

  void Reassign() {
    std::vector<kafka::TopicPartitionOffset> assignment;
    for (const auto& [p, r] : replicas) {
      if (r.mode != Replica::Mode::kFailed)
        assignment.push_back({o.changelog_topic, p, r.next_offset});
    }
    if (membership)
      assignment.push_back({o.members_topic, base::Partition(0), members_next_offset});
    if (kafka::KafkaError e = reader->Assign(assignment)) {
      // Nothing is read until an assignment holds: a replica whose changelog moves
      // meanwhile reads as behind at its next question (ConfirmAnEnd).
      Warn("replicas: cannot assign the changelog (trying again): " + e.ToString());
      next_assign_ms = Now() + kReassignAfterMs;
      return;
    }
    assignment_changed = false;
  }

  void OnChangelogRecord(base::Partition p, Replica& r, const kafka::Message& m) {
    r.next_offset = m.offset.Next();
    r.at_end = false;
    r.reported_end.reset();
    const std::string_view bytes = m.value.value_or(std::string_view());
    if (r.mode == Replica::Mode::kCollecting) {
      r.collecting->Add(bytes);
      return;
    }
    if (r.mode != Replica::Mode::kFollowing) return;
    base::Result<changelog::Record> record = changelog::DecodeRecord(bytes);
    if (!record) {
      // Skipped, it might have held the newest batches: the replica would stand by
      // behind its active and say it was caught up. A rebuild (the retry) skips a
      // damaged record with a warning, and refuses a newer release's format.
      const std::optional<uint16_t> newer = changelog::NewerFormatOf(bytes);
      return Fail(p, r,
                  newer ? changelog::NewerFormatError(*newer)
                        : "the changelog record at offset " + std::to_string(m.offset.value()) +
                              " could not be read (" + record.message() + ")");
    }
    switch (r.follower->Next(record.value())) {
      case changelog::LineageFollower::Step::kApply:
        try {
          r.state->Replay(std::get<changelog::BatchRecord>(record.value()));
        } catch (const std::bad_alloc&) {
          return Fail(p, r, "out of memory replaying its changelog");
        }
        r.cycle.OnBatch(std::get<changelog::BatchRecord>(record.value()));
        r.dirty = true;
        break;
      case changelog::LineageFollower::Step::kSkip:
        if (const auto* chunk = std::get_if<changelog::SnapshotChunk>(&record.value());
            chunk != nullptr && r.follower->IsCurrentClaim(chunk->epoch, chunk->claim)) {
          r.cycle.OnChunk(*chunk);
        }
        break;
      case changelog::LineageFollower::Step::kRebuild:
        Rebuild(p, r, "its lineage was cut back or has a gap");
        return;
    }
    AdoptClaimsKey(r);
  }

  // The state learns its shard's id hash key from the claims followed, for its view
  // (a handoff's claim takes it from the follower all the same, restore.h).
  static void AdoptClaimsKey(Replica& r) {
    if (const std::optional<uint64_t> key = r.follower->hash_key()) {
      r.state->AdoptHashKey(filter::IdHashKey{*key});
    }
  }

  void OnEnd(base::Partition p, Replica& r, base::Offset end) {
    // A replica that failed on a record before it (its retry rebuilds it) is not
    // caught up: taken as such, its lag read 0 and its retry waited longer.
    if (r.mode == Replica::Mode::kFailed) return;
    if (r.stall_warned) Log("replica " + std::to_string(p.value()) + ": reading again");
    r.stall_warned = false;
    r.at_end = true;
    r.reported_end = end;
    r.since_ms = Now();
    r.next_end_check_ms = r.since_ms + kConfirmEndEveryMs;
    r.dirty = true;
    if (r.mode == Replica::Mode::kCollecting) FinishCollecting(p, r);
    if (r.mode == Replica::Mode::kFollowing) {  // caught up
      r.failed_since_ms = -1;
      r.failures = 0;
    }
  }

  void FinishCollecting(base::Partition p, Replica& r) {
    const int64_t start_ms = clock.SteadyMs();
    if (r.collecting->needs_full_read()) {
      return Rebuild(p, r, "its lineage was cut back before the snapshot it kept",
                     /*keep_everything=*/true);
    }
    // A partition whose every record was deleted (time retention of an idle shard,
    // DeleteRecords) reads as a new shard's: a replica built from it would stand by,
    // and take over, at zero. Asked after the read, as a cold restore asks: records
    // deleted while it ran are deleted all the same.
    auto start = o.clients->LogStart(o.changelog_topic, p, kLogStartWait);
    if (!start) {
      return Fail(p, r, "cannot tell where the changelog partition begins: " + start.message());
    }
    if (base::Status s = r.collecting->CheckStart(start.value()); !s) {
      return Fail(p, r, s.message());
    }
    base::Result<changelog::RestorePlan> plan = std::move(*r.collecting).Finish();
    r.collecting.reset();
    if (!plan) return Fail(p, r, plan.message());
    size_t batch_bytes = 0;
    for (const changelog::BatchRecord& b : plan->batches) batch_bytes += BatchRecordBytes(b);
    r.cycle = changelog::SnapshotCycle(plan->snapshot ? plan->snapshot->size() : 0, batch_bytes);
    auto state = plan->snapshot ? shard::ShardState::FromSnapshot(std::move(*plan->snapshot),
                                                                  filter::DecodeLimitsFor(o.dedup))
                                : shard::ShardState::Create(p, o.dedup, filter::Millis{0});
    if (!state) return Fail(p, r, state.message());
    r.state = std::move(state).value();
    try {
      for (const changelog::BatchRecord& b : plan->batches) r.state->Replay(b);
    } catch (const std::bad_alloc&) {
      return Fail(p, r, "out of memory replaying its changelog");
    }
    if (!r.hot) r.state->ForgetFilter();
    r.follower.emplace(plan->epoch, plan->last_seq, plan->claim, plan->hash_key, plan->group);
    r.unreadable_records = plan->unreadable_records;
    AdoptClaimsKey(r);
    r.mode = Replica::Mode::kFollowing;
    const std::string built =
        "replica " + std::to_string(p.value()) + (r.hot ? " (standby)" : " (counters only)") +
        ": built from " + std::to_string(plan->batches.size()) + " batches" +
        (plan->snapshot ? " after snapshot " + std::to_string(plan->snapshot_seq.value()) : "") +
        " in " + std::to_string(clock.SteadyMs() - start_ms) + " ms";
    if (plan->unreadable_records > 0) {
      Warn(built + "; " + changelog::UnreadableRecordsWarning(plan->unreadable_records));
    } else {
      Log(built);
    }
  }

  void Fail(base::Partition p, Replica& r, const std::string& why) {
    r.mode = Replica::Mode::kFailed;
    r.failure = why;
    r.state.reset();
    r.at_end = false;  // behind from now on: its lag grows until a retry catches up
    r.reported_end.reset();
    r.since_ms = Now();
    if (r.failed_since_ms < 0) r.failed_since_ms = r.since_ms;
    ++r.failures;
    r.dirty = true;
    assignment_changed = true;  // stop reading it until the retry
    Warn("replica " + std::to_string(p.value()) + " failed: " + why);
  }

  // Asks the stable end of the following replica whose confirmation is the most
  // overdue, one question a step (it blocks for a round trip). At the replica's last
  // reported end, it is caught up still; past it, records committed since have not
  // come, and it is behind from its last confirmation until they do. Without an
  // answer it cannot say, and reads as behind once kCaughtUpForMs have passed.
  void ConfirmAnEnd(int64_t now) {
    Replica* due = nullptr;
    base::Partition due_partition;
    for (auto& [p, r] : replicas) {
      if (r.mode != Replica::Mode::kFollowing || !r.reported_end || now < r.next_end_check_ms)
        continue;
      if (due == nullptr || r.next_end_check_ms < due->next_end_check_ms) {
        due = &r;
        due_partition = p;
      }
    }
    if (due == nullptr) return;
    Replica& r = *due;
    const std::string name = "replica " + std::to_string(due_partition.value());
    r.next_end_check_ms = now + kConfirmEndEveryMs;
    base::Result<base::Offset> end =
        reader->StableEnd(o.changelog_topic, due_partition, kStableEndWait);
    if (!end) {
      if (!r.end_unconfirmed) Warn(name + ": cannot confirm it is caught up: " + end.message());
      r.end_unconfirmed = true;
      r.dirty = true;
      return;
    }
    if (r.end_unconfirmed) Log(name + ": its changelog's end is known again");
    r.end_unconfirmed = false;
    r.dirty = true;
    if (end.value() == *r.reported_end) {
      r.at_end = true;
      r.since_ms = Now();
      return;
    }
    // Found away from its end twice with nothing read between: nothing came for a
    // whole period (once is a commit not fetched yet).
    if (!r.at_end && !r.stall_warned) {
      Warn(name + ": nothing read for " + std::to_string(kConfirmEndEveryMs / 1000) +
           " s though its changelog ends at " + std::to_string(end.value().value()) +
           ", not where the reader stopped (" + std::to_string(r.reported_end->value()) +
           "); it reads as behind until it gets there");
      r.stall_warned = true;
    }
    r.at_end = false;
  }

  // Caught up: at the end the reader reported, confirmed within kCaughtUpForMs.
  static bool CaughtUp(const Replica& r, int64_t now) {
    return r.at_end && now - r.since_ms < kCaughtUpForMs;
  }

  // Until when shard p had an owner, as far as the members topic tells: `now` while a
  // live instance owns it (or before everyone could be heard from), else when an
  // owner was last heard listing it, or when this instance first saw it unowned.
  int64_t OwnedUntil(base::Partition p, Replica& r, int64_t now) {
    if (!membership || now - started_ms < o.member_timeout.count() ||
        !membership->ActiveOf(p, now).empty()) {
      r.unowned_since_ms = -1;
      return now;
    }
    if (r.unowned_since_ms < 0) {
      const int64_t heard = membership->LastHeardOwning(p);
      r.unowned_since_ms = heard >= 0 ? std::min(heard, now) : now;
    }
    return r.unowned_since_ms;
  }

  // --- Roles and membership ----------------------------------------------------------

  bool WantsHot(base::Partition p, int64_t now) const {
    if (o.standby_replicas <= 0 || !membership) return false;
    // Until everyone has been heard from, every replica is kept hot: dropping a
    // filter is cheap, building one again means reading the whole changelog.
    if (now - started_ms < o.member_timeout.count()) return true;
    return membership->IsStandby(o.instance_id, p, o.standby_replicas, now);
  }

  void UpdateRoles(int64_t now) {
    for (auto& [p, r] : replicas) {
      const bool hot = WantsHot(p, now);
      if (hot == r.hot) continue;
      r.hot = hot;
      r.dirty = true;
      if (r.mode != Replica::Mode::kFollowing) continue;  // the build will follow the role
      if (hot) {
        Rebuild(p, r, "it stands by for the shard now");
      } else {
        r.state->ForgetFilter();
        Log("replica " + std::to_string(p.value()) +
            ": keeps counters only (another instance stands by)");
      }
    }
  }

  void HeartbeatIfDue() {
    if (!membership) return;
    const int64_t now = Now();
    if (!heartbeat_soon && now < next_heartbeat_ms) return;
    Heartbeat(false);
    next_heartbeat_ms = now + o.heartbeat.count();
  }

  void Heartbeat(bool leaving) {
    if (!members_producer) return;
    MemberRecord m;
    m.instance_id = o.instance_id;
    m.api_url = o.api_url;
    m.actives.assign(actives.begin(), actives.end());
    m.standby_replicas = o.standby_replicas;
    m.sent_at_ms = clock.WallMs();
    m.leaving = leaving;
    const std::string bytes = EncodeMemberRecord(m);
    heartbeat_soon = false;
    if (kafka::KafkaError e = members_producer->Produce(
            {o.members_topic, base::Partition(0), o.instance_id, bytes, {}})) {
      if (e.kind == kafka::ErrorKind::kFatal && !leaving) return RenewMembersProducer(e.ToString());
      HeartbeatsFail("cannot send a heartbeat: " + e.ToString());
    }
    members_producer->Poll(std::chrono::milliseconds(0));
    CheckHeartbeats();
  }

  // Deliveries fail after the send succeeded (a partition without a leader, Write
  // refused): counted and said as failed sends are; an acknowledged one ends the run.
  void CheckHeartbeats() {
    const kafka::Deliveries& now = members_producer->deliveries();
    const uint64_t failed = now.failed - heartbeats_seen.failed;
    const bool acked = now.acked > heartbeats_seen.acked;
    heartbeats_seen = now;
    if (failed > 0) {
      heartbeat_failures->Add(failed - 1);  // HeartbeatsFail counts one
      HeartbeatsFail("heartbeats were not delivered: " + now.last_error);
    } else if (acked && heartbeats_failing) {
      heartbeats_failing = false;
      Log("members: heartbeats are delivered again");
    }
  }

  void HeartbeatsFail(const std::string& why) {
    heartbeat_failures->Add();
    if (heartbeats_failing) return;
    heartbeats_failing = true;
    Warn("members: " + why +
         "; the other instances see this one absent and stand by for its shards until its "
         "heartbeats go through (oncecount_heartbeat_failures_total counts them; this is "
         "said once until then)");
  }

  void OnMemberRecord(const kafka::Message& m) {
    members_next_offset = m.offset.Next();
    auto record = DecodeMemberRecord(m.value.value_or(std::string_view()));
    if (!record) {
      // An instance whose heartbeats no one can read is absent for every instance: say
      // so once per sender (a bounded set: the members topic is not ours alone).
      const std::string sender(m.key.value_or("(no key)").substr(0, kMaxInstanceIdBytes));
      if (unreadable_senders.size() < kMaxUnreadableSendersNamed &&
          unreadable_senders.insert(sender).second) {
        Warn("members: cannot read a heartbeat of " + sender + " at offset " +
             std::to_string(m.offset.value()) + ": " + record.error().message() +
             "; that instance is absent to this one (later ones from it are not logged)");
      }
      return;
    }
    if (membership) membership->Observe(record.value(), Now());
  }

  // --- Views ---------------------------------------------------------------------

  void PublishDue(int64_t now) {
    for (auto& [p, r] : replicas) {
      const int64_t since = now - r.last_publish_ms;
      if ((r.dirty && since >= o.publish_every.count()) || since >= kRepublishEveryMs) {
        Publish(p, r, now);
      }
    }
  }

  void Publish(base::Partition p, Replica& r, int64_t now) {
    shard::ShardView base;
    base.partition = p;
    base.role = r.hot ? shard::ShardRole::kStandby : shard::ShardRole::kReplica;
    base.target_fpp = o.dedup.target_fpp;
    const bool caught_up = CaughtUp(r, now);
    base.replica_lag_ms =
        caught_up ? 0 : now - (r.failed_since_ms >= 0 ? r.failed_since_ms : r.since_ms);
    std::shared_ptr<const shard::ShardView> view;
    if (r.mode == Replica::Mode::kFollowing) {
      base.phase = shard::ShardPhase::kRunning;
      auto detail = shard::ShardState::FilterDetail::kRefresh;
      const bool digest_current =
          r.last_view && r.last_view->digest_seq == r.state->committed_seq();
      if (r.last_view && (digest_current || now - r.last_filter_detail_ms < kFilterDetailEveryMs)) {
        detail = shard::ShardState::FilterDetail::kReuse;
        base.filter = r.last_view->filter;
        base.digest = r.last_view->digest;
        base.digest_seq = r.last_view->digest_seq;
      } else {
        r.last_filter_detail_ms = now;
      }
      auto made = r.state->MakeView(std::move(base), WallAt(now), detail);
      auto stamped = std::make_shared<shard::ShardView>(*made);
      // What a replica answers is as fresh as its last look at the changelog's end,
      // and no fresher than the last owner: at the end of a changelog that nobody
      // writes (the owner killed, until the group gives the shard to another), the
      // input piles up unread.
      stamped->published_at_ms =
          WallAt(std::min(caught_up ? now : r.since_ms, OwnedUntil(p, r, now)));
      view = std::move(stamped);
    } else {
      base.phase = r.mode == Replica::Mode::kFailed ? shard::ShardPhase::kFailed
                                                    : shard::ShardPhase::kRestoring;
      base.failure = r.failure;
      base.counters = std::make_shared<const shard::CounterSnapshot>();
      base.published_at_ms = WallAt(now);
      view = std::make_shared<const shard::ShardView>(std::move(base));
    }
    r.last_view = view;
    r.last_publish_ms = now;
    r.dirty = false;
    board.Publish(std::move(view));
  }

  // --- The loop ------------------------------------------------------------------

  void Start() {
    owner.store(std::this_thread::get_id());
    started_ms = Now();
    board.SetPartitionCount(partitions);
    for (base::Partition p : base::AllPartitions(partitions)) {
      if (!actives.contains(p) && !replicas.contains(p))
        StartCollecting(p, WantsHot(p, started_ms));
    }
  }

  bool Step(std::chrono::milliseconds poll_timeout) {
    if (!fatal.ok()) return false;  // a client could not be made again: nothing to step
    RunCommands();
    if (assignment_changed && Now() >= next_assign_ms) Reassign();
    const int64_t read_from = Now();
    for (int i = 0; i < 4096 && fatal.ok(); ++i) {
      std::optional<kafka::Message> m =
          reader->Poll(i == 0 ? poll_timeout : std::chrono::milliseconds(0));
      if (!m) break;
      if (m->kind == kafka::MessageKind::kFatal) {
        const std::string error = m->error;
        m.reset();  // a handle's messages go before the handle
        RenewReader(error);
        break;
      }
      OnMessage(*m);
      // The heartbeat must not wait for a long read (a message may end a replica's
      // build, its whole tail replayed), or the other instances count this one absent
      // (member_timeout, 5 s) and rebuild its standbys elsewhere.
      if (Now() - read_from >= kReadSliceMs) break;
    }
    if (!fatal.ok()) return false;
    const int64_t now = Now();
    HeartbeatIfDue();
    if (members_producer) {
      members_producer->Poll(std::chrono::milliseconds(0));
      CheckHeartbeats();
    }
    if (now >= next_roles_ms) {
      UpdateRoles(now);
      RetryFailed(now);
      next_roles_ms = now + kRolesEveryMs;
    }
    ConfirmAnEnd(now);
    PublishDue(Now());
    return fatal.ok();
  }

  void OnMessage(const kafka::Message& m) {
    if (m.kind == kafka::MessageKind::kUnreadable && m.topic == o.changelog_topic) {
      // Followed past, the replica would miss what it held (a claim leaves no gap in
      // the batches); its rebuild's read fails on it, loudly.
      if (auto it = replicas.find(m.partition);
          it != replicas.end() && it->second.mode != Replica::Mode::kFailed) {
        return Fail(m.partition, it->second,
                    "the changelog record at offset " + std::to_string(m.offset.value()) +
                        " could not be read (" + m.error + ")");
      }
    }
    if (m.kind != kafka::MessageKind::kRecord && m.kind != kafka::MessageKind::kPartitionEnd) {
      Warn("replicas: " + m.error);
      return;
    }
    const bool end = m.kind == kafka::MessageKind::kPartitionEnd;
    if (m.topic == o.members_topic) {
      if (!end) OnMemberRecord(m);
      return;
    }
    auto it = replicas.find(m.partition);
    if (it == replicas.end()) return;
    if (end) {
      OnEnd(it->first, it->second, m.offset);
    } else {
      OnChangelogRecord(it->first, it->second, m);
    }
  }

  base::Status Finish() {
    {
      std::lock_guard lock(commands_mu);
      closed = true;
    }
    RunCommands();  // answer what came in meanwhile
    if (!fatal.ok()) {
      // Nothing follows the changelog any more: every replica says so, rather than
      // standing by, caught up, as it was last published.
      const int64_t now = Now();
      for (auto& [p, r] : replicas) {
        Fail(p, r, "the replicator stopped: " + fatal.message());
        Publish(p, r, now);
      }
    }
    Heartbeat(true);
    if (members_producer) members_producer->Flush(std::chrono::milliseconds(2000));
    if (reader) reader->Close();
    return fatal;
  }

  void RetryFailed(int64_t now) {
    for (auto& [p, r] : replicas) {
      const int64_t after = std::min(kRetryFailedAtMostMs,
                                     kRetryFailedAfterMs << std::min<uint32_t>(r.failures - 1, 8));
      if (r.mode == Replica::Mode::kFailed && now - r.since_ms >= after) {
        const int64_t failed_since_ms = r.failed_since_ms;
        const uint32_t failures = r.failures;
        StartCollecting(p, r.hot);
        r.failed_since_ms = failed_since_ms;
        r.failures = failures;
        assignment_changed = true;
      }
    }
  }
};

Replicator::Replicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Replicator::~Replicator() = default;

base::Result<std::unique_ptr<Replicator>> Replicator::Create(ReplicatorOptions options,
                                                             shard::StateBoard& board) {
  if (options.clients == nullptr) return base::InvalidArgument("no Kafka clients");
  if (options.instance_id.empty()) return base::InvalidArgument("no instance id");
  if (options.standby_replicas > 0 && options.members_topic.empty()) {
    return base::InvalidArgument("standbys need a members topic");
  }
  auto impl = std::make_unique<Impl>(std::move(options), board);
  if (base::Status s = impl->CheckTopics(); !s) return std::move(s).error();
  if (base::Status s = impl->CreateClients(); !s) return std::move(s).error();
  return std::unique_ptr<Replicator>(new Replicator(std::move(impl)));
}

base::Status Replicator::Run() {
  Start();
  while (!stop_.load() && Step()) {
  }
  return Finish();
}

void Replicator::Start() {
  impl_->Start();
}

bool Replicator::Step(std::chrono::milliseconds poll_timeout) {
  return impl_->Step(poll_timeout);
}

base::Status Replicator::Finish() {
  return impl_->Finish();
}

std::map<base::Partition, Handoff> Replicator::Take(
    const std::vector<base::Partition>& partitions) {
  Impl::TakeCommand command;
  command.partitions = partitions;
  if (impl_->owner.load() == std::this_thread::get_id()) {
    // The processor and the replicator share a thread (tests that script both):
    // what was posted before runs first, as it would on the replicator's thread.
    impl_->RunCommands();
    return impl_->TakeNow(partitions);
  }
  auto result = command.done.get_future();
  {
    std::lock_guard lock(impl_->commands_mu);
    if (impl_->closed) return {};  // no replicas any more: the shards restore cold
    impl_->commands.emplace_back(std::move(command));
  }
  return result.get();
}

void Replicator::Follow(const std::vector<base::Partition>& partitions) {
  std::lock_guard lock(impl_->commands_mu);
  impl_->commands.emplace_back(Impl::FollowCommand{partitions});
}

}  // namespace oncecount::replica
