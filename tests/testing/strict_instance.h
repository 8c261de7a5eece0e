// StrictInstance: one oncecount process for tests on the StrictKafka double — its
// processor, two shard workers on their own threads and, when asked, its replicator
// — with the processor and the replicator stepped by the test on its own thread, on
// the double's simulated time. Tests script several of them against one cluster:
// failovers, SIGKILL at a chosen call, frozen members, hand-offs to standbys.
//
// The cluster it expects (NewCluster): topics "events" and "events.changelog" with
// kServicePartitions partitions, "events.dlq", and "events.members" for standbys.
// Below the instance: the events scenarios send and the checks every scenario ends
// with — does the changelog (what any later owner restores) hold each event exactly
// once, did every claim take a new epoch, is every input record committed?
//
// Test code only. Thread-safety: every method on the test's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "processor/filter/filter_factory.h"
#include "processor/replica/replicator.h"
#include "processor/service/processor.h"
#include "processor/service/shard_worker.h"
#include "processor/shard/shard_view.h"
#include "tests/testing/strict_kafka.h"

namespace oncecount::testing {

inline constexpr int32_t kServicePartitions = 2;

// A cluster with the service's topics (see above) in `holder`, the input and the
// changelog with `partitions` each, broker 1 leading them all.
StrictKafka& NewCluster(std::unique_ptr<StrictKafka>& holder,
                        int32_t partitions = kServicePartitions);

// The dedup settings every instance of a test uses: a window far longer than any
// test, so that no id is forgotten while time is simulated, and the constituent
// filter under test (DedupFilterUnderTest).
filter::DedupSpec TestDedup();

// The environment's ONCECOUNT_TEST_DEDUP_FILTER (a dedup.filter name: bloom, gaussian,
// fingerprint), bloom when unset. CTest runs the scenarios on the double once per
// filter the service offers as a default candidate (tests/processor/service and
// tests/processor/replica, CMakeLists.txt); a name it does not know fails the test.
filter::Constituent DedupFilterUnderTest();

struct StrictInstanceOptions {
  std::string process;      // the process's name for the double (Crash, CrashAt, ...)
  std::string instance_id;  // names its transactional.id; empty: the process's name
  std::chrono::milliseconds transaction_timeout{10000};
  // With a replicator: follows the shards it does not own; standbys need "events.members".
  bool replicas = false;
  int64_t standby_replicas = 0;
  // The dedup window (on the shards' clocks, the record timestamps).
  std::chrono::milliseconds dedup_window = TestDedup().window;
  // dedup.late_records.
  shard::LatePolicy late_records = shard::LatePolicy::kApply;
  // ProcessorOptions::changelog_retention_bytes: what a changelog partition keeps when
  // the cluster does not say.
  size_t changelog_retention_bytes = 0;
  // Where its shards keep local checkpoints (empty: none).
  std::string checkpoint_dir{};
  // ProcessorOptions::commit_interval: a Step commits once this much simulated time
  // passed since the last commit. The default, never, leaves commits to the test.
  std::chrono::milliseconds commit_interval = std::chrono::hours(1);
  // KIP-345: a static member of the group, its group.instance.id the instance id
  // (kafka.static_membership), and whether its clean stop leaves the group
  // (kafka.leave_group_on_stop).
  bool static_membership = false;
  bool leave_group_on_stop = true;
  // ProcessorOptions::max_poll_interval: what the instance believes of its consumer's
  // max.poll.interval.ms (the double's own is StrictKafka::set_max_poll_interval).
  std::chrono::milliseconds max_poll_interval{300000};
  // kafka.group_id: another one is another deployment on the same topics.
  std::string group_id = "oncecount";
  // kafka.previous_group_id: the group it was renamed from.
  std::string previous_group_id{};
  // ProcessorOptions::previous_group_unverified: why the start could not tell.
  std::string previous_group_unverified{};
  // The processor is expected to refuse to start: its error is kept (refusal()), and
  // a start is a test failure.
  bool expect_refusal = false;
};

class StrictInstance {
 public:
  StrictInstance(StrictKafka& kafka, StrictInstanceOptions options);
  StrictInstance(StrictKafka& kafka, std::string process, std::string instance_id = "")
      : StrictInstance(kafka, StrictInstanceOptions{std::move(process), std::move(instance_id)}) {}
  // A live process shuts down cleanly (commits, leaves the group); a killed one just
  // goes away.
  ~StrictInstance();
  StrictInstance(const StrictInstance&) = delete;
  StrictInstance& operator=(const StrictInstance&) = delete;

  // One turn of the processor's loop (and the replicator's); false once the
  // processor hit a fatal error, or the process is dead. A replicator whose step
  // says it cannot go on is finished there, as its thread's loop ends.
  bool Step();
  // Steps a few times, so that the instance routes what the double holds for it,
  // then commits.
  void StepAndCommit();
  void Commit();
  // Steps like StepAndCommit, but the double kills the process at `call` of that
  // commit (before the call has any effect): SIGKILL in the middle of a commit.
  void CommitAndDieAt(StrictKafka::Call call);
  // SIGKILL: what the process had not committed is gone with it; it never leaves the
  // group or ends its transactions (the broker times them out).
  void Kill();
  // The double crashed the process (CrashAt): the test stops driving it.
  void MarkKilled() { dead_ = true; }
  // The processor's clean shutdown; returns its error (ok on a clean stop).
  base::Status Finish();

  // Hands `state` to the worker that owns its shard, in place of the state it runs
  // (what a restore would hand it): for tests that make a running shard's state fail.
  void ReplaceShardState(std::unique_ptr<shard::ShardState> state);

  // The view this instance publishes for shard p (active, standby or replica).
  std::shared_ptr<const shard::ShardView> View(int32_t p) const;
  bool Runs(int32_t p) const;  // an active, running shard
  bool RunsAll(int32_t partitions) const;
  // What GET /readyz says: every shard assigned to the instance runs.
  bool Ready() const { return board_.Read().ready(); }
  const shard::StateBoard& board() const { return board_; }
  const std::string& log() const { return log_; }
  // What the replicator's loop ended with, once it ended by itself.
  const std::optional<base::Status>& replicator_ended() const { return replicator_ended_; }
  // Why the processor refused to start (StrictInstanceOptions::expect_refusal).
  const std::string& refusal() const { return refusal_; }
  // What the processor and the replicator count about themselves (GET /metrics).
  const base::MetricRegistry& metrics() const { return metrics_; }

 private:
  StrictKafka& kafka_;
  const StrictInstanceOptions options_;
  std::unique_ptr<kafka::Clients> clients_;
  shard::StateBoard board_;
  base::MetricRegistry metrics_;
  std::vector<std::unique_ptr<service::ShardWorker>> workers_;
  std::vector<std::thread> threads_;
  std::unique_ptr<replica::Replicator> replicator_;
  std::optional<base::Status> replicator_ended_;
  std::unique_ptr<service::Processor> processor_;
  std::string log_;
  std::string refusal_;
  bool dead_ = false;
};

// Steps every instance and moves simulated time by `tick` until `done` holds;
// false after `limit` of simulated time.
template <class Done>
bool RunUntil(StrictKafka& kafka, const std::vector<StrictInstance*>& instances, Done done,
              std::chrono::milliseconds limit = std::chrono::seconds(120),
              std::chrono::milliseconds tick = std::chrono::milliseconds(100)) {
  const int64_t deadline = kafka.clock().SteadyMs() + limit.count();
  while (kafka.clock().SteadyMs() < deadline) {
    for (StrictInstance* instance : instances) instance->Step();
    if (done()) return true;
    kafka.Advance(tick);
  }
  return done();
}

// Steps every instance for `duration` of simulated time.
inline void RunFor(StrictKafka& kafka, const std::vector<StrictInstance*>& instances,
                   std::chrono::milliseconds duration) {
  RunUntil(
      kafka, instances, [] { return false; }, duration);
}

// --- Events and checks ----------------------------------------------------------

// Sends events [from, to): event i has the idempotency id "client/<i>", goes to
// partition i % kServicePartitions and adds 1 to counter "n<i % 3>". Sending an
// event again is a client's retry.
void Send(StrictKafka& kafka, int from, int to);
// Sends malformed events [from, to): key "bad/<i>" on partition i % kServicePartitions,
// a value that is not JSON. Each must be dead-lettered once.
void SendMalformed(StrictKafka& kafka, int from, int to);
// Every committed dead letter's key, in the order of the dead-letter topic.
std::vector<std::string> DeadLetteredKeys(StrictKafka& kafka);
// The dead-letter topic holds malformed events [from, to) once each, and nothing else.
void ExpectDeadLetteredOnce(StrictKafka& kafka, int from, int to);
// What `instance`'s published views (active, standby or replica) read, shards summed.
std::map<std::string, int64_t> CountsInViews(const StrictInstance& instance);
// What the counters must read once events [0, n) were each sent at least once.
std::map<std::string, int64_t> Expected(int n);
// The counters a new owner restores from the committed changelog, shards summed.
std::map<std::string, int64_t> CountsInChangelog(StrictKafka& kafka);
// The epochs of the committed claims of shard p, in log order.
std::vector<uint64_t> ClaimEpochs(StrictKafka& kafka, int32_t p);
void ExpectEveryClaimTookANewEpoch(StrictKafka& kafka);
// The group committed every input record: nothing is left to count twice or lose.
void ExpectAllInputCommitted(StrictKafka& kafka);
// All three: the changelog counts events [0, n) once each, every claim took a new
// epoch, and every input record is committed.
void ExpectExactlyOnce(StrictKafka& kafka, int n);

}  // namespace oncecount::testing
