#include "processor/replica/replicator.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "processor/changelog/lineage.h"
#include "processor/kafka/client_config.h"
#include "processor/replica/member_record.h"
#include "processor/replica/membership.h"

namespace oncecount::replica {
namespace {

using Clock = std::chrono::steady_clock;

// How often replicas reconsider whether they are hot (membership changes).
constexpr int64_t kRolesEveryMs = 200;
// A replica's view is published at least this often (its staleness moves).
constexpr int64_t kRepublishEveryMs = 1000;
// A replica recomputes its filter's summary and digest at most this often.
constexpr int64_t kFilterDetailEveryMs = 1000;
// A replica that failed (its changelog lacks batches) tries again after this long.
constexpr int64_t kRetryFailedAfterMs = 10000;

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

struct Replica {
  enum class Mode : uint8_t { kCollecting, kFollowing, kFailed };
  Mode mode = Mode::kCollecting;
  bool hot = false;  // keeps the filter: a standby
  std::unique_ptr<changelog::LineageBuilder> collecting;
  std::unique_ptr<shard::ShardState> state;
  std::optional<changelog::LineageFollower> follower;
  int64_t next_offset = RD_KAFKA_OFFSET_BEGINNING;
  bool at_end = false;
  int64_t since_ms = 0;  // when the current build began, or when it last caught up
  std::string failure;
  bool dirty = true;
  int64_t last_publish_ms = 0;
  int64_t last_filter_detail_ms = 0;
  std::shared_ptr<const shard::ShardView> last_view;
};

}  // namespace

struct Replicator::Impl {
  ReplicatorOptions o;
  shard::StateBoard& board;
  rd_kafka_t* consumer = nullptr;
  rd_kafka_t* members_producer = nullptr;
  int32_t partitions = 0;
  std::map<int32_t, Replica> replicas;
  std::set<int32_t> actives;
  std::optional<Membership> membership;
  int64_t members_next_offset = RD_KAFKA_OFFSET_BEGINNING;
  int64_t started_ms = 0;
  bool assignment_changed = true;
  bool heartbeat_soon = true;

  // Commands from other threads.
  struct TakeCommand {
    std::vector<int32_t> partitions;
    std::promise<std::map<int32_t, Handoff>> done;
  };
  struct FollowCommand {
    std::vector<int32_t> partitions;
  };
  std::mutex commands_mu;
  std::vector<std::variant<TakeCommand, FollowCommand>> commands;
  bool closed = false;  // Run has ended: commands are answered at once

  Impl(ReplicatorOptions options, shard::StateBoard& b) : o(std::move(options)), board(b) {}

  ~Impl() {
    if (consumer != nullptr) rd_kafka_destroy(consumer);
    if (members_producer != nullptr) rd_kafka_destroy(members_producer);
  }

  void Log(const std::string& line) const {
    if (o.log) o.log(line);
  }

  // --- Set-up --------------------------------------------------------------------

  std::string CreateClients() {
    const kafka::Settings connection = {{"bootstrap.servers", o.bootstrap_servers}};
    kafka::Settings defaults = connection;
    defaults.push_back({"auto.offset.reset", "earliest"});
    defaults.push_back({"fetch.wait.max.ms", "20"});
    defaults.push_back({"queued.min.messages", "1000000"});
    auto conf = kafka::MakeClientConfig(defaults, o.properties,
                                        {{"group.id", o.group_id + "-replica-" + o.instance_id},
                                         {"enable.auto.commit", "false"},
                                         {"enable.auto.offset.store", "false"},
                                         {"enable.partition.eof", "true"},
                                         {"isolation.level", "read_committed"}});
    if (auto* e = std::get_if<std::string>(&conf)) return *e;
    char error[512];
    rd_kafka_conf_t* cconf = std::get<rd_kafka_conf_t*>(conf);
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, error, sizeof error);
    if (consumer == nullptr) {
      rd_kafka_conf_destroy(cconf);
      return std::string("cannot create the changelog follower: ") + error;
    }
    rd_kafka_poll_set_consumer(consumer);
    if (o.members_topic.empty()) return {};
    auto pconf = kafka::MakeClientConfig(connection, o.properties,
                                         {{"enable.idempotence", "true"}, {"linger.ms", "0"}});
    if (auto* e = std::get_if<std::string>(&pconf)) return *e;
    rd_kafka_conf_t* p = std::get<rd_kafka_conf_t*>(pconf);
    members_producer = rd_kafka_new(RD_KAFKA_PRODUCER, p, error, sizeof error);
    if (members_producer == nullptr) {
      rd_kafka_conf_destroy(p);
      return std::string("cannot create the members producer: ") + error;
    }
    membership.emplace(o.instance_id, o.member_timeout);
    return {};
  }

  std::string CheckTopics() {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(consumer, 1, nullptr, &md, 10000);
    if (e) return std::string("cannot read the cluster's metadata: ") + rd_kafka_err2str(e);
    std::map<std::string, int> counts;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        counts[md->topics[i].topic] = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
    if (!counts.contains(o.changelog_topic))
      return "topic " + o.changelog_topic + " does not exist";
    partitions = counts[o.changelog_topic];
    if (!o.members_topic.empty() && !counts.contains(o.members_topic)) {
      return "topic " + o.members_topic +
             " does not exist; create it with one partition (standbys need it), or set "
             "processing.standby_replicas: 0";
    }
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

  std::map<int32_t, Handoff> TakeNow(const std::vector<int32_t>& taken) {
    std::map<int32_t, Handoff> handoffs;
    for (int32_t p : taken) {
      actives.insert(p);
      auto it = replicas.find(p);
      if (it == replicas.end()) continue;
      Replica& r = it->second;
      if (r.mode == Replica::Mode::kFollowing && r.hot && !r.state->forgot_filter()) {
        handoffs[p] = Handoff{std::move(r.state), *r.follower, r.next_offset};
      }
      replicas.erase(it);
      board.Remove(p);
    }
    assignment_changed = true;
    heartbeat_soon = true;
    return handoffs;
  }

  void FollowNow(const std::vector<int32_t>& given_back) {
    for (int32_t p : given_back) {
      actives.erase(p);
      if (!replicas.contains(p)) StartCollecting(p, WantsHot(p, Now()));
    }
    assignment_changed = true;
    heartbeat_soon = true;
  }

  // --- Replicas ------------------------------------------------------------------

  int64_t Now() const { return o.now_ms(); }

  void StartCollecting(int32_t p, bool hot) {
    Replica& r = replicas[p];
    r = Replica{};
    r.hot = hot;
    r.collecting = std::make_unique<changelog::LineageBuilder>();
    r.since_ms = Now();
  }

  // Reads partition p from its start again: the replica is rebuilt.
  void Rebuild(int32_t p, Replica& r, const std::string& why) {
    Log("replica " + std::to_string(p) + ": rebuilding (" + why + ")");
    StartCollecting(p, r.hot);
    Seek(p, RD_KAFKA_OFFSET_BEGINNING);
  }

  void Seek(int32_t p, int64_t offset) {
    PartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), o.changelog_topic.c_str(), p)->offset = offset;
    rd_kafka_error_t* e = rd_kafka_seek_partitions(consumer, list.get(), 5000);
    if (e != nullptr) {
      Log("replica " + std::to_string(p) + ": seek failed: " + rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      assignment_changed = true;  // assigning again starts it over as well
    }
  }

  void Reassign() {
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(replicas.size()) + 1));
    for (const auto& [p, r] : replicas) {
      if (r.mode == Replica::Mode::kFailed) continue;
      rd_kafka_topic_partition_list_add(list.get(), o.changelog_topic.c_str(), p)->offset =
          r.next_offset;
    }
    if (membership) {
      rd_kafka_topic_partition_list_add(list.get(), o.members_topic.c_str(), 0)->offset =
          members_next_offset;
    }
    const rd_kafka_resp_err_t e = rd_kafka_assign(consumer, list.get());
    if (e) Log(std::string("replicas: cannot assign the changelog: ") + rd_kafka_err2str(e));
    assignment_changed = false;
  }

  void OnChangelogRecord(int32_t p, Replica& r, const rd_kafka_message_t& m) {
    r.next_offset = m.offset + 1;
    r.at_end = false;
    const std::string_view bytes(static_cast<const char*>(m.payload), m.len);
    if (r.mode == Replica::Mode::kCollecting) {
      r.collecting->Add(bytes);
      return;
    }
    if (r.mode != Replica::Mode::kFollowing) return;
    filter::Result<changelog::Record> record = changelog::DecodeRecord(bytes);
    if (!record) return;  // counted as ignored by a restore, too
    switch (r.follower->Next(record.value())) {
      case changelog::LineageFollower::Step::kApply:
        r.state->Replay(std::get<changelog::BatchRecord>(record.value()));
        r.dirty = true;
        break;
      case changelog::LineageFollower::Step::kSkip:
        break;
      case changelog::LineageFollower::Step::kRebuild:
        Rebuild(p, r, "its lineage was cut back or has a gap");
        break;
    }
  }

  void OnEnd(int32_t p, Replica& r) {
    r.at_end = true;
    r.since_ms = Now();
    r.dirty = true;
    if (r.mode == Replica::Mode::kCollecting) FinishCollecting(p, r);
  }

  void FinishCollecting(int32_t p, Replica& r) {
    const auto start = Clock::now();
    filter::Result<changelog::RestorePlan> plan = std::move(*r.collecting).Finish();
    r.collecting.reset();
    if (!plan) return Fail(p, r, plan.error());
    auto state = plan->snapshot ? shard::ShardState::FromSnapshot(*plan->snapshot)
                                : shard::ShardState::Create(p, o.dedup, filter::Millis{0});
    if (!state) return Fail(p, r, state.error());
    r.state = std::move(state).value();
    for (const changelog::BatchRecord& b : plan->batches) r.state->Replay(b);
    if (!r.hot) r.state->ForgetFilter();
    r.follower.emplace(plan->epoch, plan->last_seq);
    r.mode = Replica::Mode::kFollowing;
    Log("replica " + std::to_string(p) + (r.hot ? " (standby)" : " (counters only)") +
        ": built from " + std::to_string(plan->batches.size()) + " batches" +
        (plan->snapshot ? " after snapshot " + std::to_string(plan->snapshot_seq) : "") + " in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()) +
        " ms");
  }

  void Fail(int32_t p, Replica& r, const std::string& why) {
    r.mode = Replica::Mode::kFailed;
    r.failure = why;
    r.state.reset();
    r.since_ms = Now();
    r.dirty = true;
    assignment_changed = true;  // stop reading it until the retry
    Log("replica " + std::to_string(p) + " failed: " + why);
  }

  // --- Roles and membership ----------------------------------------------------------

  bool WantsHot(int32_t p, int64_t now) const {
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
        Log("replica " + std::to_string(p) + ": keeps counters only (another instance stands by)");
      }
    }
  }

  void Heartbeat(bool leaving) {
    if (members_producer == nullptr) return;
    MemberRecord m;
    m.instance_id = o.instance_id;
    m.api_url = o.api_url;
    m.actives.assign(actives.begin(), actives.end());
    m.standby_replicas = o.standby_replicas;
    m.sent_at_ms = Now();
    m.leaving = leaving;
    const std::string bytes = EncodeMemberRecord(m);
    const rd_kafka_resp_err_t e = rd_kafka_producev(
        members_producer, RD_KAFKA_V_TOPIC(o.members_topic.c_str()), RD_KAFKA_V_PARTITION(0),
        RD_KAFKA_V_KEY(o.instance_id.data(), o.instance_id.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(bytes.data()), bytes.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (e) Log(std::string("members: cannot send a heartbeat: ") + rd_kafka_err2str(e));
    rd_kafka_poll(members_producer, 0);
    heartbeat_soon = false;
  }

  void OnMemberRecord(const rd_kafka_message_t& m) {
    members_next_offset = m.offset + 1;
    auto record = DecodeMemberRecord(std::string_view(static_cast<const char*>(m.payload), m.len));
    if (record && membership) membership->Observe(record.value(), Now());
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

  void Publish(int32_t p, Replica& r, int64_t now) {
    shard::ShardView base;
    base.partition = p;
    base.role = r.hot ? shard::ShardRole::kStandby : shard::ShardRole::kReplica;
    base.target_fpp = o.dedup.target_fpp;
    base.replica_lag_ms = r.at_end ? 0 : now - r.since_ms;
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
      auto made = r.state->MakeView(std::move(base), now, detail);
      auto stamped = std::make_shared<shard::ShardView>(*made);
      // What a replica answers is as fresh as its last look at the changelog's end.
      stamped->published_at_ms = r.at_end ? now : r.since_ms;
      view = std::move(stamped);
    } else {
      base.phase = r.mode == Replica::Mode::kFailed ? shard::ShardPhase::kFailed
                                                    : shard::ShardPhase::kRestoring;
      base.failure = r.failure;
      base.counters = std::make_shared<const shard::CounterSnapshot>();
      base.published_at_ms = now;
      view = std::make_shared<const shard::ShardView>(std::move(base));
    }
    r.last_view = view;
    r.last_publish_ms = now;
    r.dirty = false;
    board.Publish(std::move(view));
  }

  // --- The loop ------------------------------------------------------------------

  std::string Run(const std::atomic<bool>& stop) {
    started_ms = Now();
    board.SetPartitionCount(partitions);
    {
      const int64_t now = Now();
      for (int32_t p = 0; p < partitions; ++p) {
        if (!actives.contains(p) && !replicas.contains(p)) StartCollecting(p, WantsHot(p, now));
      }
    }
    int64_t next_heartbeat = 0;
    int64_t next_roles = 0;
    std::string fatal;
    while (!stop.load() && fatal.empty()) {
      RunCommands();
      if (assignment_changed) Reassign();
      for (int i = 0; i < 4096; ++i) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, i == 0 ? 10 : 0);
        if (m == nullptr) break;
        const std::string topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          if (topic == o.members_topic) {
            if (!m->err) OnMemberRecord(*m);
          } else if (auto it = replicas.find(m->partition); it != replicas.end()) {
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
              OnEnd(it->first, it->second);
            } else {
              OnChangelogRecord(it->first, it->second, *m);
            }
          }
        } else {
          Log(std::string("replicas: ") + rd_kafka_message_errstr(m));
          if (m->err == RD_KAFKA_RESP_ERR__FATAL)
            fatal = "the changelog follower hit a fatal error";
        }
        rd_kafka_message_destroy(m);
      }
      const int64_t now = Now();
      if (membership && (heartbeat_soon || now >= next_heartbeat)) {
        Heartbeat(false);
        next_heartbeat = now + o.heartbeat.count();
      }
      if (members_producer != nullptr) rd_kafka_poll(members_producer, 0);
      if (now >= next_roles) {
        UpdateRoles(now);
        RetryFailed(now);
        next_roles = now + kRolesEveryMs;
      }
      PublishDue(now);
    }
    {
      std::lock_guard lock(commands_mu);
      closed = true;
    }
    RunCommands();  // answer what came in meanwhile
    Heartbeat(true);
    if (members_producer != nullptr) rd_kafka_flush(members_producer, 2000);
    rd_kafka_consumer_close(consumer);
    return fatal;
  }

  void RetryFailed(int64_t now) {
    for (auto& [p, r] : replicas) {
      if (r.mode == Replica::Mode::kFailed && now - r.since_ms >= kRetryFailedAfterMs) {
        StartCollecting(p, r.hot);
        assignment_changed = true;
      }
    }
  }
};

Replicator::Replicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Replicator::~Replicator() = default;

std::variant<std::unique_ptr<Replicator>, std::string> Replicator::Create(
    ReplicatorOptions options, shard::StateBoard& board) {
  if (options.bootstrap_servers.empty()) return std::string("no bootstrap servers");
  if (options.instance_id.empty()) return std::string("no instance id");
  if (options.standby_replicas > 0 && options.members_topic.empty()) {
    return std::string("standbys need a members topic");
  }
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
  return std::unique_ptr<Replicator>(new Replicator(std::move(impl)));
}

std::string Replicator::Run() {
  return impl_->Run(stop_);
}

std::map<int32_t, Handoff> Replicator::Take(const std::vector<int32_t>& partitions) {
  Impl::TakeCommand command;
  command.partitions = partitions;
  auto result = command.done.get_future();
  {
    std::lock_guard lock(impl_->commands_mu);
    if (impl_->closed) return {};  // no replicas any more: the shards restore cold
    impl_->commands.emplace_back(std::move(command));
  }
  return result.get();
}

void Replicator::Follow(const std::vector<int32_t>& partitions) {
  std::lock_guard lock(impl_->commands_mu);
  impl_->commands.emplace_back(Impl::FollowCommand{partitions});
}

}  // namespace oncecount::replica
