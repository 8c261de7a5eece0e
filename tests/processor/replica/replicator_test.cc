// Replicator under a real broker's transactional rules: instances with replicas on
// the StrictKafka double, on simulated time. A replica reads the changelog
// read_committed, so it never shows an aborted batch and stops where an open
// transaction holds the last stable offset; a standby handed over to the processor
// is brought up to the high watermark seen at the hand-over before it claims.
#include "processor/replica/replicator.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "processor/changelog/changelog_record.h"
#include "tests/testing/serialized_bytes.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::replica {
namespace {

using namespace std::chrono_literals;
using testing::CountsInChangelog;
using testing::Expected;
using testing::ExpectEveryClaimTookANewEpoch;
using testing::ExpectExactlyOnce;
using testing::NewCluster;
using testing::RunUntil;
using testing::Send;
using testing::StrictInstance;
using testing::StrictInstanceOptions;
using testing::StrictKafka;
using Call = StrictKafka::Call;

StrictInstanceOptions WithStandby(std::string process) {
  StrictInstanceOptions o;
  o.process = std::move(process);
  o.replicas = true;
  o.standby_replicas = 1;
  return o;
}

// The shard each instance runs, once the group gave one to each.
struct Split {
  int32_t a_runs = -1;
  int32_t b_runs = -1;
};

bool SplitBetween(const StrictInstance& a, const StrictInstance& b, Split& split) {
  for (int32_t p = 0; p < testing::kServicePartitions; ++p) {
    if (a.Runs(p)) split.a_runs = p;
    if (b.Runs(p)) split.b_runs = p;
  }
  return split.a_runs >= 0 && split.b_runs >= 0 && split.a_runs != split.b_runs;
}

// Instances a and b, each running one shard and standing by for the other's; a's
// shard in `p` (-1 if the group never split them).
struct Pair {
  std::unique_ptr<StrictInstance> a;
  std::unique_ptr<StrictInstance> b;
  int32_t p = -1;
};

Pair StartPair(StrictKafka& kafka) {
  Pair pair{std::make_unique<StrictInstance>(kafka, WithStandby("a")),
            std::make_unique<StrictInstance>(kafka, WithStandby("b")), -1};
  Split split;
  if (RunUntil(kafka, {pair.a.get(), pair.b.get()},
               [&] { return SplitBetween(*pair.a, *pair.b, split); })) {
    pair.p = split.a_runs;
  }
  return pair;
}

int64_t CounterIn(const StrictInstance& instance, int32_t p, const std::string& name) {
  auto view = instance.View(p);
  return view ? view->counters->Find(name).value_or(0) : -1;
}

// A replica's view of a shard caught up with what its active committed.
bool CaughtUp(const StrictInstance& replica, const StrictInstance& active, int32_t p) {
  auto mine = replica.View(p);
  auto theirs = active.View(p);
  return mine && theirs && mine->phase == shard::ShardPhase::kRunning &&
         mine->role == shard::ShardRole::kStandby && mine->replica_lag_ms == 0 &&
         mine->counters->counters() == theirs->counters->counters();
}

// A pair after 100 events, b's replica of a's shard p caught up (p -1 when not).
Pair StartCaughtUpPair(StrictKafka& kafka) {
  Pair pair = StartPair(kafka);
  if (pair.p < 0) {
    ADD_FAILURE() << "no split\n" << pair.a->log() << pair.b->log();
    return pair;
  }
  Send(kafka, 0, 100);
  pair.a->StepAndCommit();
  pair.b->StepAndCommit();
  if (!RunUntil(
          kafka, {pair.a.get(), pair.b.get()}, [&] { return CaughtUp(*pair.b, *pair.a, pair.p); },
          10s)) {
    ADD_FAILURE() << "b's replica never caught up\n" << pair.b->log();
    pair.p = -1;
  }
  return pair;
}

// Writes `record` to changelog partition p outside any owner's transaction (a tool,
// a newer release, a damaged copy).
void WriteToTheChangelog(StrictKafka& kafka, int32_t p, const std::string& record) {
  auto writer = kafka.ClientsFor("writer")->NewPlainProducer({});
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_FALSE(
      writer.value()->Produce({"events.changelog", base::Partition(p), std::nullopt, record, {}}));
  ASSERT_EQ(writer.value()->Flush(10s), 0u);
}

bool ReplicaFailed(const StrictInstance& instance, int32_t p) {
  auto view = instance.View(p);
  return view && view->phase == shard::ShardPhase::kFailed;
}

// How many times an instance logged `what`.
size_t Logged(const StrictInstance& instance, const std::string& what) {
  size_t logged = 0;
  for (size_t at = instance.log().find(what); at != std::string::npos;
       at = instance.log().find(what, at + 1)) {
    ++logged;
  }
  return logged;
}

// The number of rebuilds an instance logged.
size_t LoggedRebuilds(const StrictInstance& instance) {
  return Logged(instance, ": rebuilding (");
}

// Three instances, one standby per shard: when the third leaves, the counters-only
// replicas that now stand by for its shards' standbys are read again from the start
// (they need the filters): rebuilds, each counted for /metrics.
TEST(Replicator, CountsEveryRebuildOfAReplica) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  StrictInstance a(kafka, WithStandby("a"));
  StrictInstance b(kafka, WithStandby("b"));
  auto c = std::make_unique<StrictInstance>(kafka, WithStandby("c"));
  auto standbys_on = [](const StrictInstance& i) {
    int standbys = 0;
    for (int32_t p = 0; p < testing::kServicePartitions; ++p) {
      auto view = i.View(p);
      standbys += view && view->role == shard::ShardRole::kStandby &&
                  view->phase == shard::ShardPhase::kRunning;
    }
    return standbys;
  };
  ASSERT_TRUE(RunUntil(kafka, {&a, &b, c.get()},
                       [&] {
                         return standbys_on(a) + standbys_on(b) + standbys_on(*c) ==
                                    testing::kServicePartitions &&
                                standbys_on(*c) > 0;
                       }))
      << a.log() << b.log() << c->log();
  EXPECT_TRUE(c->Finish().ok());
  c.reset();
  ASSERT_TRUE(
      RunUntil(kafka, {&a, &b},
               [&] { return standbys_on(a) + standbys_on(b) == testing::kServicePartitions; }))
      << a.log() << b.log();
  EXPECT_GT(LoggedRebuilds(a) + LoggedRebuilds(b), 0u) << a.log() << b.log();
  for (const StrictInstance* instance : {&a, &b}) {
    const std::string m = instance->metrics().Render();
    EXPECT_NE(m.find("\noncecount_replica_rebuilds_total " +
                     std::to_string(LoggedRebuilds(*instance)) + "\n"),
              std::string::npos)
        << m;
  }
}

// A shard added to the input (and its changelog) while the instances run: the
// instance that does not own it follows it, so that its merged answers are complete
// again and the shard has a standby, without a restart.
TEST(Replicator, AnInstanceFollowsAShardAddedWhileItRunsThatAnotherInstanceOwns) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartPair(kafka);
  ASSERT_GE(pair.p, 0) << pair.a->log() << pair.b->log();
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  ASSERT_TRUE(kafka.AddPartitions("events.changelog", 3).ok());
  ASSERT_TRUE(kafka.AddPartitions("events", 3).ok());
  const auto follows_2 = [](const StrictInstance& i) {
    auto view = i.View(2);
    return view && view->role != shard::ShardRole::kActive &&
           view->phase == shard::ShardPhase::kRunning;
  };
  ASSERT_TRUE(RunUntil(kafka, {&a, &b},
                       [&] { return (a.Runs(2) && follows_2(b)) || (b.Runs(2) && follows_2(a)); }))
      << a.log() << b.log();
  StrictInstance& owner = a.Runs(2) ? a : b;
  StrictInstance& follower = a.Runs(2) ? b : a;
  EXPECT_EQ(follower.View(2)->role, shard::ShardRole::kStandby) << follower.log();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", 2, "new/" + std::to_string(i),
                                    R"({"counter":"p2","delta":1})")
                    .ok());
  }
  owner.StepAndCommit();
  ASSERT_TRUE(RunUntil(kafka, {&a, &b}, [&] {
    return CounterIn(follower, 2, "p2") == 5 && follower.board().Read().complete();
  })) << follower.log();
  EXPECT_EQ(follower.board().Read().partitions, 3);
}

// Regression: membership ran on the wall clock. A step of the hosts' clocks (NTP)
// larger than member_timeout made every peer look dead until its next heartbeat came:
// an instance holding counters-only replicas stood by for those shards at once,
// rebuilding each from its changelog's start, and dropped their filters again when
// the heartbeats came.
TEST(Replicator, AWallClockStepChangesNoStandbysRole) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  StrictInstance a(kafka, WithStandby("a"));
  StrictInstance b(kafka, WithStandby("b"));
  StrictInstance c(kafka, WithStandby("c"));
  const auto standbys = [&] {
    int n = 0;
    for (const StrictInstance* i : {&a, &b, &c}) {
      for (int32_t p = 0; p < testing::kServicePartitions; ++p) {
        auto view = i->View(p);
        n += view && view->role == shard::ShardRole::kStandby &&
             view->phase == shard::ShardPhase::kRunning;
      }
    }
    return n;
  };
  ASSERT_TRUE(
      RunUntil(kafka, {&a, &b, &c}, [&] { return standbys() == testing::kServicePartitions; }))
      << a.log() << b.log() << c.log();
  RunFor(kafka, {&a, &b, &c}, 10s);
  const auto role_changes = [&] {
    size_t n = 0;
    for (const StrictInstance* i : {&a, &b, &c}) {
      n += Logged(*i, "stands by for the shard now") + Logged(*i, "keeps counters only");
    }
    return n;
  };
  const size_t before = role_changes();
  for (const auto step : {std::chrono::milliseconds(10min), std::chrono::milliseconds(-20min)}) {
    kafka.StepWallClock(step);
    RunFor(kafka, {&a, &b, &c}, 10s);
  }
  EXPECT_EQ(role_changes(), before) << a.log() << b.log() << c.log();
  EXPECT_EQ(standbys(), testing::kServicePartitions);
}

// Regression: a replica built from a changelog partition whose every record was
// deleted (time retention of an idle shard, DeleteRecords) read it as a new shard's
// and stood by at zero: served as complete, and on a failover taken over at zero,
// with no word. Only a cold restore asked where the partition begins. A replica now
// asks too, and fails as the cold restore does.
TEST(Replicator,
     AReplicaOfAChangelogPartitionWhoseRecordsWereAllDeletedFailsInsteadOfStandingByAtZero) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  const std::string changelog = "events.changelog";
  const int64_t end = kafka.HighWatermark(changelog, p);
  ASSERT_GT(end, 0);
  ASSERT_TRUE(kafka.DeleteRecordsBefore(changelog, p, end).ok());

  // A third instance joins: the group's two shards stay where they are
  // (cooperative-sticky), and it builds replicas of both from their changelogs.
  StrictInstance c(kafka, WithStandby("c"));
  ASSERT_TRUE(RunUntil(kafka, {&a, &b, &c}, [&] {
    auto view = c.View(p);
    return view && view->phase != shard::ShardPhase::kRestoring;
  })) << c.log();
  const auto view = c.View(p);
  EXPECT_NE(view->role, shard::ShardRole::kActive) << "the group moved the shard; nothing proven";
  EXPECT_EQ(view->phase, shard::ShardPhase::kFailed)
      << "a replica of a deleted state stands by with " << view->counters->size() << " counters";
  EXPECT_NE(view->failure.find("reset its counters to zero"), std::string::npos) << view->failure;
  // A failed replica is behind, and says so (it read 0 ms, as if caught up).
  EXPECT_TRUE(RunUntil(kafka, {&a, &b, &c}, [&] { return c.View(p)->replica_lag_ms > 0; }))
      << "lag " << c.View(p)->replica_lag_ms;
  EXPECT_EQ(kafka.HighWatermark(changelog, p), end);
  EXPECT_GT(CounterIn(a, p, "n0") + CounterIn(a, p, "n1") + CounterIn(a, p, "n2"), 0)
      << "the active shard keeps its state";
}

// Regression: a replica following its changelog skipped a record it could not read
// without a word (here a newer release's, as a rolling upgrade's new owner writes
// it), and stood by as caught up while its active moved on.
TEST(Replicator, AReplicaFailsOnAChangelogRecordANewerReleaseWroteInsteadOfSkippingIt) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  // The last record as the next format would carry it (its version field, resealed).
  const std::string record = testing::WithField(kafka.CommittedValues("events.changelog", p).back(),
                                                4, 2, changelog::kChangelogFormatVersion + 1);
  WriteToTheChangelog(kafka, p, record);
  ASSERT_TRUE(RunUntil(kafka, {&a, &b}, [&] { return ReplicaFailed(b, p); })) << b.log();
  EXPECT_NE(b.View(p)->failure.find("which a newer release wrote"), std::string::npos)
      << b.View(p)->failure;
  EXPECT_NE(b.log().find("which a newer release wrote"), std::string::npos) << b.log();
  // Failed, it is behind: the partition's end, which its reader reached after the
  // record it failed on, does not make it caught up (its lag read 0 for 15 s).
  RunFor(kafka, {&a, &b}, 2s);
  EXPECT_GT(b.View(p)->replica_lag_ms, 0) << b.log();
  // Its retries fail too: it stays behind since its first failure (the lag read 10 s
  // at most, each retry starting it again), and they come less and less often.
  RunFor(kafka, {&a, &b}, 70s);
  EXPECT_EQ(b.View(p)->phase, shard::ShardPhase::kFailed);
  EXPECT_GE(b.View(p)->replica_lag_ms, 60'000);  // published about once a second
  const size_t rebuilds = Logged(b, "replica " + std::to_string(p) + " failed");
  EXPECT_GE(rebuilds, 3u) << b.log();  // at 0 s, 10 s, 30 s: then 70 s
  EXPECT_LE(rebuilds, 4u) << b.log();
}

// A changelog record the replica's reader cannot read (a checksum mismatch under
// check.crcs) and goes past: the replica fails, as for a record that does not decode,
// instead of following without it (a claim missed leaves no gap in the batches).
TEST(Replicator, AReplicaFailsOnAChangelogRecordItsReaderCannotRead) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  WriteToTheChangelog(kafka, p, kafka.CommittedValues("events.changelog", p).back());
  ASSERT_FALSE(
      kafka.MakeUnreadable("events.changelog", p, kafka.HighWatermark("events.changelog", p) - 1));
  ASSERT_TRUE(RunUntil(kafka, {&a, &b}, [&] { return ReplicaFailed(b, p); })) << b.log();
  EXPECT_NE(b.View(p)->failure.find("could not be read (_BAD_MSG"), std::string::npos)
      << b.View(p)->failure;
}

// Regression: a standby's build skipped a damaged changelog record with a warning on
// its own instance, and the hand-over did not carry the count: after a failover the
// shard's changelog_unreadable_records read 0, as if every record had been read.
TEST(Replicator, AShardTakenOverFromItsStandbyCountsTheDamagedRecordsTheStandbySkipped) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.set_session_timeout(3s);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  WriteToTheChangelog(kafka, p, "not a changelog record");
  // b's standby fails on it, and its retry's build skips it, saying so.
  ASSERT_TRUE(RunUntil(
      kafka, {&a, &b}, [&] { return Logged(b, "could not be read") >= 2 && CaughtUp(b, a, p); },
      60s))
      << b.log();
  ASSERT_EQ(a.View(p)->changelog_unreadable_records, 0u) << "a never read its changelog";

  kafka.Crash("a");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(testing::kServicePartitions); }))
      << b.log();
  ASSERT_NE(b.log().find("taken over from its standby replica"), std::string::npos) << b.log();
  EXPECT_EQ(b.View(p)->changelog_unreadable_records, 1u) << b.log();
  Send(kafka, 100, 120);
  b.StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(120));
}

// Regression: a replica's reader reports the changelog's end once. When it then
// stopped being fed (a fetcher stuck on the partition), nothing cleared "caught up":
// the standby read 0 ms behind, and answered as fresh, while its active committed
// on. A caught-up replica now asks its partition's stable end every few seconds.
TEST(Replicator, AReplicaWhoseReaderStopsBeingFedReadsBehindInsteadOfCaughtUp) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  kafka.StallReading("b", "events.changelog");
  // Idle, the replica is where the changelog ends: the questions confirm it.
  RunFor(kafka, {&a, &b}, 20s);
  EXPECT_EQ(b.View(p)->replica_lag_ms, 0) << b.log();

  Send(kafka, 100, 200);
  a.StepAndCommit();
  const int64_t committed_ms = kafka.clock().WallMs();
  const int64_t before = CounterIn(b, p, "n0");
  ASSERT_GT(CounterIn(a, p, "n0"), before);
  RunFor(kafka, {&a, &b}, 20s);
  auto view = b.View(p);
  EXPECT_EQ(CounterIn(b, p, "n0"), before) << "the stalled reader was fed";
  EXPECT_GE(view->replica_lag_ms, 15'000) << b.log();
  EXPECT_LE(view->published_at_ms, committed_ms) << "a stale answer claims to be fresh";
  EXPECT_EQ(Logged(b, "replica " + std::to_string(p) + ": nothing read for 5 s"), 1u) << b.log();

  kafka.ResumeReading("b", "events.changelog");
  EXPECT_TRUE(RunUntil(
      kafka, {&a, &b}, [&] { return CaughtUp(b, a, p); }, 10s))
      << b.log();
  EXPECT_EQ(Logged(b, "replica " + std::to_string(p) + ": reading again"), 1u) << b.log();
}

// Regression: a replica at the end of a changelog that nobody writes any more (its
// owner killed, until the group's session timeout gives the shard to another) answered
// as fresh, while the shard's input piled up unread. It is as fresh as the owner was
// last heard.
TEST(Replicator, AReplicaOfAShardWhoseOwnerWentQuietIsNoFresherThanTheOwnersLastHeartbeat) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.set_session_timeout(60s);  // the group keeps a's shard while b watches
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  RunFor(kafka, {&a, &b}, 2s);
  EXPECT_LE(kafka.clock().WallMs() - b.View(p)->published_at_ms, 1'500) << "owned: fresh";
  kafka.Freeze("a");
  const int64_t frozen_ms = kafka.clock().WallMs();
  Send(kafka, 100, 200);  // a's shard gets input that nobody reads
  RunFor(kafka, {&b}, 20s);
  auto view = b.View(p);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->role, shard::ShardRole::kStandby) << "the group has not moved the shard yet";
  EXPECT_EQ(view->replica_lag_ms, 0) << "at the changelog's end";
  EXPECT_LE(view->published_at_ms, frozen_ms) << "a stale answer claims to be fresh\n" << b.log();
  EXPECT_GE(view->published_at_ms, frozen_ms - 1'500) << "as fresh as a's last heartbeat";
}

// A replica that cannot ask where its changelog ends cannot say it is caught up: it
// reads as behind from its last confirmation once 15 s have passed.
TEST(Replicator, AReplicaThatCannotConfirmItsEndReadsBehindFromItsLastConfirmation) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  kafka.InjectError(Call::kReaderStableEnd,
                    {kafka::ErrorKind::kRetriable, "REQUEST_TIMED_OUT", "injected"}, 1000, "b");
  RunFor(kafka, {&a, &b}, 10s);
  EXPECT_EQ(b.View(p)->replica_lag_ms, 0) << "one unanswered question proves nothing\n" << b.log();
  RunFor(kafka, {&a, &b}, 20s);
  EXPECT_GE(b.View(p)->replica_lag_ms, 15'000) << b.log();
  EXPECT_EQ(Logged(b, "replica " + std::to_string(p) + ": cannot confirm it is caught up"), 1u)
      << b.log();
}

// Regression: an assignment the reader refused was not tried again until the
// assignment changed for another reason: a third instance, given no shard, never
// read the changelog, and its replicas stayed restoring.
TEST(Replicator, AnAssignmentTheReaderRefusedIsTriedAgainInsteadOfLeavingTheReplicasUnread) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  kafka.InjectError(Call::kReaderAssign, {kafka::ErrorKind::kRetriable, "X", "injected"}, 1, "c");
  StrictInstance c(kafka, WithStandby("c"));
  EXPECT_TRUE(RunUntil(kafka, {pair.a.get(), pair.b.get(), &c}, [&] {
    for (int32_t p = 0; p < testing::kServicePartitions; ++p) {
      auto view = c.View(p);
      if (!view || view->phase != shard::ShardPhase::kRunning) return false;
    }
    return true;
  })) << c.log();
  EXPECT_EQ(Logged(c, "cannot assign the changelog (trying again)"), 1u) << c.log();
}

// Regression: a fatal error of the changelog reader ended the replicator's loop
// with a log line; its replicas stood by, caught up as last published, and never
// moved again. A fatal error ends one client: a new reader goes on from where each
// replica was.
TEST(Replicator, AReplicaFollowsOnWithANewReaderAfterItsReaderHadAFatalError) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  kafka.InjectError(Call::kReaderPoll, {kafka::ErrorKind::kFatal, "FATAL", "injected"}, 1, "b");
  Send(kafka, 100, 200);
  a.StepAndCommit();
  EXPECT_TRUE(RunUntil(
      kafka, {&a, &b}, [&] { return CaughtUp(b, a, p); }, 10s))
      << b.log();
  EXPECT_EQ(Logged(b, "following on with a new one"), 1u) << b.log();
  EXPECT_FALSE(b.replicator_ended().has_value());
  EXPECT_EQ(LoggedRebuilds(b), 0u) << "the replicas went on from where they were\n" << b.log();
}

// When no new reader can be made, the replicator stops with the error, and every
// replica says it failed instead of standing by as last published (the service then
// stops, to be restarted: ServiceRuntime::finished).
TEST(Replicator, AReplicatorThatCannotMakeANewReaderStopsAndEveryReplicaSaysSo) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  kafka.InjectError(Call::kReaderPoll, {kafka::ErrorKind::kFatal, "FATAL", "injected"}, 1, "b");
  kafka.InjectError(Call::kNewPartitionReader, {kafka::ErrorKind::kFailed, "X", "no reader"}, 1,
                    "b");
  ASSERT_TRUE(RunUntil(
      kafka, {&a, &b}, [&] { return b.replicator_ended().has_value(); }, 5s))
      << b.log();
  EXPECT_FALSE(b.replicator_ended()->ok());
  EXPECT_NE(b.replicator_ended()->message().find("could not be made again"), std::string::npos)
      << b.replicator_ended()->message();
  auto view = b.View(p);
  EXPECT_EQ(view->phase, shard::ShardPhase::kFailed);
  EXPECT_NE(view->failure.find("the replicator stopped"), std::string::npos) << view->failure;
}

// Regression: a fatal error of the heartbeat producer was logged at every heartbeat,
// and no heartbeat went out again: the other instances took this one for dead and
// moved its standbys. A new producer sends on.
TEST(Replicator, HeartbeatsGoOnWithANewProducerAfterAFatalError) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  kafka.InjectError(Call::kPlainProduce, {kafka::ErrorKind::kFatal, "FATAL", "injected"}, 1, "b");
  const size_t before = kafka.Entries("events.members", 0).size();
  RunFor(kafka, {&a, &b}, 5s);
  size_t from_b = 0;
  const auto entries = kafka.Entries("events.members", 0);
  for (size_t i = before; i < entries.size(); ++i) from_b += entries[i].key == "b";
  EXPECT_GE(from_b, 3u) << "b's heartbeats stopped\n" << b.log();
  EXPECT_EQ(Logged(b, "sending on with a new one"), 1u) << b.log();
}

// Regression: the heartbeat went out only after the step's read, which may build
// replicas from their whole tails (or wait on a slow fetch): a read of seconds left
// this instance unheard past member_timeout, and the others rebuilt its standbys.
TEST(Replicator, HeartbeatsGoOutWhileALongReadGoesOn) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  for (int round = 0; round < 5; ++round) {  // batches b's replica reads in turn
    Send(kafka, 100 + 20 * round, 120 + 20 * round);
    a.StepAndCommit();
  }
  // Each of b's next five reads takes 1.5 s (a slow fetch, a build).
  std::function<void(int)> slow_read = [&](int left) {
    kafka.Advance(1500ms);
    if (left > 1) kafka.ObserveAt(Call::kReaderPoll, "b", [&, left] { slow_read(left - 1); });
  };
  kafka.ObserveAt(Call::kReaderPoll, "b", [&] { slow_read(5); });
  const size_t before = kafka.Entries("events.members", 0).size();
  const int64_t start = kafka.clock().SteadyMs();
  while (kafka.clock().SteadyMs() - start < 7500) b.Step();
  std::vector<int64_t> sent;
  const auto entries = kafka.Entries("events.members", 0);
  for (size_t i = before; i < entries.size(); ++i) {
    if (entries[i].key == "b") sent.push_back(entries[i].timestamp_ms);
  }
  ASSERT_GE(sent.size(), 4u) << b.log();
  for (size_t i = 1; i < sent.size(); ++i) {
    EXPECT_LE(sent[i] - sent[i - 1], 2000) << "heartbeat " << i;
  }
}

// Regression: a heartbeat no instance could read (a newer release's, a tool's) was
// dropped without a word, and its sender was absent to every instance.
TEST(Replicator, AHeartbeatItCannotReadIsLoggedOncePerSender) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  auto writer = kafka.ClientsFor("c")->NewPlainProducer({});
  ASSERT_TRUE(writer.ok()) << writer.error();
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(writer.value()->Produce({"events.members",
                                          base::Partition(0),
                                          std::string("c"),
                                          std::string("not a heartbeat"),
                                          {}}));
  }
  ASSERT_EQ(writer.value()->Flush(10s), 0u);
  RunFor(kafka, {&a, &b}, 3s);
  EXPECT_EQ(Logged(a, "members: cannot read a heartbeat of c at offset "), 1u) << a.log();
  EXPECT_EQ(Logged(b, "members: cannot read a heartbeat of c at offset "), 1u) << b.log();
  EXPECT_EQ(Logged(a, "members: cannot read a heartbeat of a"), 0u) << a.log();
  EXPECT_EQ(Logged(a, "members: cannot read a heartbeat of b"), 0u) << a.log();
}

// oncecount_heartbeat_failures_total as `instance` renders it (-1: not rendered).
int64_t HeartbeatFailures(const StrictInstance& instance) {
  const std::string metrics = instance.metrics().Render();
  const std::string sample = "\noncecount_heartbeat_failures_total ";
  const size_t at = metrics.find(sample);
  return at == std::string::npos ? -1 : std::stoll(metrics.substr(at + sample.size()));
}

// Heartbeats that cannot be sent (the members topic deleted) are counted, and said
// once per run of failures rather than every second; a heartbeat delivered again ends
// the run.
TEST(Replicator, HeartbeatsThatCannotBeSentAreCountedAndSaidOnceUntilTheyGoThroughAgain) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  ASSERT_EQ(HeartbeatFailures(a), 0);
  ASSERT_TRUE(kafka.DeleteTopic("events.members").ok());
  RunFor(kafka, {&a, &b}, 30s);
  EXPECT_EQ(Logged(a, "members: cannot send a heartbeat"), 1u) << a.log();
  EXPECT_GE(HeartbeatFailures(a), 20) << "one a second";
  ASSERT_TRUE(kafka.CreateTopic("events.members", 1).ok());
  RunFor(kafka, {&a, &b}, 5s);
  EXPECT_EQ(Logged(a, "members: heartbeats are delivered again"), 1u) << a.log();
}

// Heartbeats sent but never delivered (the members partition without a leader) are
// counted and said once, naming the delivery's error.
TEST(Replicator, HeartbeatsSentButNotDeliveredAreCountedAndSaidOnce) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Pair pair = StartCaughtUpPair(kafka);
  ASSERT_GE(pair.p, 0);
  StrictInstance& a = *pair.a;
  StrictInstance& b = *pair.b;
  kafka.MakeLeaderless("events.members", 0);
  RunFor(kafka, {&a, &b}, 20s);
  EXPECT_EQ(Logged(a, "members: heartbeats were not delivered: Local: Message timed out"), 1u)
      << a.log();
  EXPECT_GE(HeartbeatFailures(a), 10)
      << "one a second, each failed once its delivery timeout (member_timeout, 5 s) passed";
  kafka.MakeLeaderless("events.members", 0, false);
  RunFor(kafka, {&a, &b}, 10s);  // the heartbeats stranded meanwhile fail first
  EXPECT_EQ(Logged(a, "members: heartbeats are delivered again"), 1u) << a.log();
}

// The processor publishes a shard it is given as restoring, then takes it from the
// replicator, which drops its replica: the instance must not look ready (GET /readyz)
// while it claims the shard. It did, with no view of the shard at all, when the
// replicator's removal took the processor's view with it.
TEST(Replicator, AnInstanceTakingAShardFromItsReplicaIsNotReadyWhileItClaimsIt) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  StrictInstance a(kafka, WithStandby("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(testing::kServicePartitions); }))
      << a.log();
  Send(kafka, 0, 40);
  a.StepAndCommit();
  // b follows both shards as it starts, and the group gives it one of them: its
  // first transaction claims it.
  StrictInstance b(kafka, WithStandby("b"));
  int claims_observed = 0;
  bool ready_while_claiming = false;
  std::string views_while_claiming;
  kafka.ObserveAt(Call::kCommitTransaction, "b", [&] {
    ++claims_observed;
    ready_while_claiming = b.Ready();
    for (int32_t p = 0; p < testing::kServicePartitions; ++p) {
      auto view = b.View(p);
      views_while_claiming += std::to_string(p) + ": " +
                              (view ? std::string(shard::ShardRoleName(view->role)) + "/" +
                                          shard::ShardPhaseName(view->phase)
                                    : "none") +
                              "; ";
    }
  });
  Split split;
  ASSERT_TRUE(RunUntil(kafka, {&a, &b}, [&] { return SplitBetween(a, b, split); }))
      << a.log() << b.log();
  ASSERT_EQ(claims_observed, 1) << b.log();
  ASSERT_NE(b.log().find("taken over from its standby replica"), std::string::npos) << b.log();
  EXPECT_FALSE(ready_while_claiming) << views_while_claiming << "\n" << b.log();
  EXPECT_NE(views_while_claiming.find(std::to_string(split.b_runs) + ": active/restoring"),
            std::string::npos)
      << views_while_claiming;
  EXPECT_TRUE(b.Ready());
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, 40);
}

TEST(Replicator, AStandbyFollowsOnlyCommittedBatchesAndTakesOverAfterTheDeadOwnersTransactionEnds) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // The group gives b the dead owner's shard while its transaction is still open.
  kafka.set_session_timeout(3s);
  Pair pair = StartPair(kafka);
  auto& a = pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  ASSERT_GE(p, 0) << a->log() << b.log();
  Send(kafka, 0, 100);
  a->StepAndCommit();
  b.StepAndCommit();
  ASSERT_TRUE(RunUntil(
      kafka, {a.get(), &b}, [&] { return CaughtUp(b, *a, p); }, 10s))
      << b.log();
  EXPECT_TRUE(b.View(p)->hash_keyed) << "the standby learnt its shard's key from the changelog";
  const int64_t committed_n0 = CounterIn(*a, p, "n0");

  // An aborted batch of a's never reaches b's standby.
  Send(kafka, 100, 160);
  for (int i = 0; i < 3; ++i) a->Step();
  kafka.InjectError(Call::kCommitTransaction, {kafka::ErrorKind::kAbortable, "X", "injected"}, 1,
                    "a");
  a->Commit();
  for (int i = 0; i < 5; ++i) b.Step();
  EXPECT_EQ(CounterIn(b, p, "n0"), committed_n0);

  // a restores, counts the events again, and dies with its next batch open.
  ASSERT_TRUE(RunUntil(
      kafka, {a.get(), &b}, [&] { return a->Runs(p); }, 10s))
      << a->log();
  a->StepAndCommit();
  ASSERT_TRUE(RunUntil(
      kafka, {a.get(), &b}, [&] { return CaughtUp(b, *a, p); }, 10s))
      << b.log();
  Send(kafka, 160, 220);
  a->CommitAndDieAt(Call::kCommitTransaction);
  const int64_t died_ms = kafka.clock().SteadyMs();

  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(testing::kServicePartitions); }))
      << b.log();
  EXPECT_NE(b.log().find("taken over from its standby replica"), std::string::npos) << b.log();
  EXPECT_GE(kafka.clock().SteadyMs() - died_ms, 10'000)
      << "b claimed before a's open transaction was decided";
  Send(kafka, 0, 240);  // the clients retry everything
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, 240);
}

TEST(Replicator, AReplicaStopsWhereAnOpenTransactionHoldsTheChangelogAndGoesOnWhenItEnds) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // Sessions outlive the transaction: the dead owner keeps its shard while its
  // transaction times out, and the replica's view is all there is to read.
  kafka.set_session_timeout(30s);
  Pair pair = StartPair(kafka);
  auto& a = pair.a;
  StrictInstance& b = *pair.b;
  const int32_t p = pair.p;
  ASSERT_GE(p, 0) << a->log() << b.log();
  Send(kafka, 0, 100);
  a->StepAndCommit();
  ASSERT_TRUE(RunUntil(
      kafka, {a.get(), &b}, [&] { return CaughtUp(b, *a, p); }, 10s))
      << b.log();
  const int64_t before = CounterIn(b, p, "n0");

  Send(kafka, 100, 200);
  a->CommitAndDieAt(Call::kCommitTransaction);
  Send(kafka, 200, 202);  // keeps the shard's input moving: b still sees nothing new
  ASSERT_GT(kafka.HighWatermark("events.changelog", p),
            kafka.LastStableOffset("events.changelog", p));
  testing::RunFor(kafka, {&b}, 9s);
  EXPECT_EQ(CounterIn(b, p, "n0"), before) << "an open batch is not committed state";

  // The coordinator aborts the transaction: the batch never counts, and the shard's
  // next owner (b, once a's session ends) counts those events itself.
  ASSERT_TRUE(RunUntil(
      kafka, {&b}, [&] { return b.RunsAll(testing::kServicePartitions); }, 60s))
      << b.log();
  EXPECT_EQ(CounterIn(b, p, "n0"), before) << "the aborted batch never counts";
  b.StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(202));
  ExpectEveryClaimTookANewEpoch(kafka);
}

}  // namespace
}  // namespace oncecount::replica
