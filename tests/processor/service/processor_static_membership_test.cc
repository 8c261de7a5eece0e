// Processor as a static member of its group (KIP-345, kafka.static_membership) on
// the StrictKafka double, which models what a broker does with group.instance.id
// (the embedded cluster ignores it): an instance back after SIGKILL gets its shards
// without waiting for its session to time out; its frozen previous life is fenced
// and counts nothing; an instance stopped without leaving gets its shards back, and
// one that never returns loses them at its session timeout; a rolling restart never
// stops the shards of the instances not being restarted.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "processor/service/processor.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::CountsInChangelog;
using testing::Expected;
using testing::ExpectExactlyOnce;
using testing::NewCluster;
using testing::RunFor;
using testing::RunUntil;
using testing::Send;
using testing::StrictKafka;
using Call = StrictKafka::Call;
using Instance = testing::StrictInstance;

constexpr int32_t kPartitions = testing::kServicePartitions;

testing::StrictInstanceOptions Static(std::string process, bool leave_group_on_stop = true) {
  testing::StrictInstanceOptions options;
  options.process = std::move(process);
  options.static_membership = true;
  options.leave_group_on_stop = leave_group_on_stop;
  options.commit_interval = 100ms;
  return options;
}

std::vector<int32_t> ShardsOf(const Instance& instance) {
  std::vector<int32_t> runs;
  for (int32_t p = 0; p < kPartitions; ++p) {
    if (instance.Runs(p)) runs.push_back(p);
  }
  return runs;
}

// a starts alone and runs every shard; then b joins, and each ends with one.
std::pair<std::unique_ptr<Instance>, std::unique_ptr<Instance>> WithAShardEach(
    StrictKafka& kafka, const testing::StrictInstanceOptions& a_options,
    const testing::StrictInstanceOptions& b_options) {
  auto a = std::make_unique<Instance>(kafka, a_options);
  EXPECT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  auto b = std::make_unique<Instance>(kafka, b_options);
  EXPECT_TRUE(RunUntil(kafka, {a.get(), b.get()},
                       [&] { return ShardsOf(*a).size() == 1 && ShardsOf(*b).size() == 1; }))
      << a->log() << b->log();
  return {std::move(a), std::move(b)};
}

// Sends events [from, n) (with from 0, the earlier ones again: retries of what may or
// may not have counted), runs `instances` until the changelog counts [0, n), commits.
void ExpectEveryEventCountedOnce(StrictKafka& kafka, int from, int n,
                                 const std::vector<Instance*>& instances) {
  Send(kafka, from, n);
  std::string logs;
  for (Instance* instance : instances) logs += instance->log();
  ASSERT_TRUE(RunUntil(kafka, instances, [&] { return CountsInChangelog(kafka) == Expected(n); }))
      << logs;
  for (Instance* instance : instances) instance->Commit();
  ExpectExactlyOnce(kafka, n);
}

// --- Back after SIGKILL ------------------------------------------------------------

class RestartAfterSigkill : public ::testing::TestWithParam<bool> {};

// b owns one shard, a the other; a dies with a transaction open and starts again at
// once. As a static member it is handed its shard back as soon as it joins (its new
// producer has already fenced the dead one's transaction): ready after its restore,
// which takes no simulated time here, plus the test's 100 ms steps. As a dynamic
// member it waits for the group to drop its previous life: the session timeout.
TEST_P(RestartAfterSigkill, IsReadyAfterItsRestoreAsAStaticMemberAndAfterTheSessionTimeoutElse) {
  const bool is_static = GetParam();
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.set_session_timeout(45s);  // librdkafka's default
  auto options = [&](std::string process) {
    testing::StrictInstanceOptions o = Static(std::move(process));
    o.static_membership = is_static;
    return o;
  };
  auto [a, b_owned] = WithAShardEach(kafka, options("a"), options("b"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  Instance& b = *b_owned;
  const int32_t a_shard = ShardsOf(*a)[0];
  Send(kafka, 0, 100);
  a->CommitAndDieAt(Call::kCommitTransaction);
  a.reset();
  const int64_t restarted_ms = kafka.clock().SteadyMs();

  Instance again(kafka, options("a"));
  ASSERT_TRUE(RunUntil(kafka, {&again, &b}, [&] { return again.Runs(a_shard) || b.Runs(a_shard); }))
      << again.log() << b.log();
  const int64_t dark_ms = kafka.clock().SteadyMs() - restarted_ms;
  RecordProperty("dark_ms", std::to_string(dark_ms));
  if (is_static) {
    EXPECT_TRUE(again.Runs(a_shard)) << "the same instance gets its shard back";
    EXPECT_LE(dark_ms, 2000) << again.log();
  } else {
    EXPECT_GE(dark_ms, 45000);
  }
  ExpectEveryEventCountedOnce(kafka, 0, 150, {&again, &b});
}

INSTANTIATE_TEST_SUITE_P(StaticOrDynamic, RestartAfterSigkill, ::testing::Bool(),
                         [](const auto& param_info) {
                           return param_info.param ? "Static" : "Dynamic";
                         });

// --- The previous life of a static member ---------------------------------------

// A frozen instance (SIGSTOP, a paused VM) is replaced by a new process with its
// instance id: the new producer fences the old one's, the new consumer takes the
// member's place. Thawed, the old process learns FENCED_INSTANCE_ID and stops with
// an error naming the instance id; what it had applied but not committed counts once,
// through its successor.
TEST(StaticMembership, AFrozenPreviousLifeIsFencedStopsWithAClearErrorAndCountsNothing) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  testing::StrictInstanceOptions old_options = Static("old");
  old_options.instance_id = "a";
  Instance old_life(kafka, old_options);
  ASSERT_TRUE(RunUntil(kafka, {&old_life}, [&] { return old_life.RunsAll(kPartitions); }))
      << old_life.log();
  Send(kafka, 0, 60);
  for (int i = 0; i < 3; ++i) old_life.Step();  // routed and applied, not committed
  kafka.Freeze("old");

  testing::StrictInstanceOptions new_options = Static("new");
  new_options.instance_id = "a";
  Instance new_life(kafka, new_options);
  ASSERT_TRUE(RunUntil(kafka, {&new_life}, [&] { return new_life.RunsAll(kPartitions); }))
      << new_life.log();
  EXPECT_LT(kafka.clock().SteadyMs(), 45000) << "no session timeout was waited for";
  kafka.Thaw("old");
  bool stopped = false;
  for (int i = 0; i < 20 && !stopped; ++i) stopped = !old_life.Step();
  EXPECT_TRUE(stopped) << old_life.log();
  const base::Status finished = old_life.Finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_NE(finished.message().find("FENCED_INSTANCE_ID"), std::string::npos) << finished.message();
  EXPECT_NE(finished.message().find("with this instance id, a,"), std::string::npos)
      << finished.message();

  ExpectEveryEventCountedOnce(kafka, 0, 100, {&new_life});
}

// --- Stopped without leaving (kafka.leave_group_on_stop: false) -----------------

TEST(StaticMembership, AnInstanceStoppedWithoutLeavingGetsItsShardsBackWithoutARebalance) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  auto [a, b_owned] =
      WithAShardEach(kafka, Static("a", /*leave_group_on_stop=*/false), Static("b"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  Instance& b = *b_owned;
  const int32_t a_shard = ShardsOf(*a)[0];
  const int32_t generation = kafka.Generation("oncecount");
  Send(kafka, 0, 40);
  ASSERT_TRUE(a->Finish().ok()) << a->log();
  EXPECT_NE(a->log().find("without leaving the group"), std::string::npos) << a->log();
  a.reset();

  RunFor(kafka, {&b}, 5s);  // the restart takes a while
  EXPECT_FALSE(b.Runs(a_shard)) << "the shard waits for its instance";
  Instance again(kafka, Static("a", false));
  ASSERT_TRUE(RunUntil(
      kafka, {&again, &b}, [&] { return again.Runs(a_shard); }, 2s))
      << again.log();
  EXPECT_EQ(kafka.Generation("oncecount"), generation) << "no rebalance";
  ExpectEveryEventCountedOnce(kafka, 40, 100, {&again, &b});
}

TEST(StaticMembership, AnInstanceStoppedWithoutLeavingThatNeverReturnsLosesItsShardsAtItsTimeout) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  auto [a, b_owned] =
      WithAShardEach(kafka, Static("a", /*leave_group_on_stop=*/false), Static("b"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  Instance& b = *b_owned;
  Send(kafka, 0, 40);
  ASSERT_TRUE(a->Finish().ok());
  a.reset();
  const int64_t stopped_ms = kafka.clock().SteadyMs();

  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  const int64_t dark_ms = kafka.clock().SteadyMs() - stopped_ms;
  EXPECT_GE(dark_ms, 10000) << "the double's session timeout";
  EXPECT_LE(dark_ms, 11000);
  ExpectEveryEventCountedOnce(kafka, 40, 100, {&b});
}

// --- A rolling restart ------------------------------------------------------------

class RollingRestart : public ::testing::TestWithParam<bool> {};

// Three static instances (two shards: one instance is idle at any time) take events
// without a break while each in turn is stopped (SIGTERM), stays down for 2 s and
// starts again; the next is stopped once every shard runs. Each 100 ms step sends one
// event per shard and commits, so a running shard's applied count moves at every
// step. Measured per shard: the longest time its applied count stood still, split by
// whether the shard's owner at the stop was the instance being restarted. The others'
// shards must never stop (cooperative-sticky moves nothing of theirs).
TEST_P(RollingRestart, NeverStopsTheShardsOfTheInstancesNotBeingRestarted) {
  const bool leave_group_on_stop = GetParam();
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  std::map<std::string, std::unique_ptr<Instance>> instances;
  for (const std::string name : {"a", "b", "c"}) {
    instances[name] = std::make_unique<Instance>(kafka, Static(name, leave_group_on_stop));
  }
  auto live = [&] {
    std::vector<Instance*> all;
    for (auto& [name, instance] : instances) {
      if (instance) all.push_back(instance.get());
    }
    return all;
  };
  auto owner_of = [&](int32_t p) -> std::string {
    for (auto& [name, instance] : instances) {
      if (instance && instance->Runs(p)) return name;
    }
    return "";
  };
  auto all_run = [&] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (owner_of(p).empty()) return false;
    }
    return true;
  };
  ASSERT_TRUE(RunUntil(kafka, live(), all_run));

  int sent = 0;
  // What each instance's view of each shard had applied at the last step, and when
  // each shard last moved.
  std::map<std::pair<std::string, int32_t>, uint64_t> applied;
  std::map<int32_t, int64_t> last_progress_ms;
  for (int32_t p = 0; p < kPartitions; ++p) last_progress_ms[p] = kafka.clock().SteadyMs();
  std::map<int32_t, int64_t> longest_gap_ms;
  auto step = [&] {
    Send(kafka, sent, sent + kPartitions);
    sent += kPartitions;
    for (Instance* instance : live()) instance->Step();
    for (auto& [name, instance] : instances) {
      if (!instance) continue;
      for (int32_t p = 0; p < kPartitions; ++p) {
        const auto view = instance->View(p);
        if (!view || !instance->Runs(p)) continue;
        uint64_t& before = applied[{name, p}];
        if (view->events_applied > before) last_progress_ms[p] = kafka.clock().SteadyMs();
        before = view->events_applied;
      }
    }
    for (int32_t p = 0; p < kPartitions; ++p) {
      longest_gap_ms[p] =
          std::max(longest_gap_ms[p], kafka.clock().SteadyMs() - last_progress_ms[p]);
    }
    kafka.Advance(100ms);
  };
  for (int i = 0; i < 10; ++i) step();

  int64_t bystanders_gap_ms = 0;
  int64_t restarted_gap_ms = 0;
  for (const std::string name : {"a", "b", "c"}) {
    std::vector<int32_t> restarted_shards = ShardsOf(*instances[name]);
    for (auto& [p, gap] : longest_gap_ms) gap = 0;
    ASSERT_TRUE(instances[name]->Finish().ok()) << instances[name]->log();
    instances[name].reset();
    for (int i = 0; i < 20; ++i) step();  // down for 2 s
    instances[name] = std::make_unique<Instance>(kafka, Static(name, leave_group_on_stop));
    int steps = 0;
    while (!all_run() && steps++ < 600) step();
    ASSERT_TRUE(all_run()) << name << " " << instances[name]->log();
    for (int i = 0; i < 10; ++i) step();
    for (auto& [p, gap] : longest_gap_ms) {
      const bool restarted = std::count(restarted_shards.begin(), restarted_shards.end(), p) > 0;
      (restarted ? restarted_gap_ms : bystanders_gap_ms) =
          std::max(restarted ? restarted_gap_ms : bystanders_gap_ms, gap);
    }
  }
  RecordProperty("bystanders_longest_gap_ms", std::to_string(bystanders_gap_ms));
  RecordProperty("restarted_longest_gap_ms", std::to_string(restarted_gap_ms));
  EXPECT_LE(bystanders_gap_ms, 200) << "a shard of an instance not being restarted stopped";
  if (!leave_group_on_stop) {
    EXPECT_GE(restarted_gap_ms, 2000) << "its shards wait for the instance";
  }
  EXPECT_LE(restarted_gap_ms, 4000);

  for (Instance* instance : live()) instance->Commit();
  ExpectExactlyOnce(kafka, sent);
}

INSTANTIATE_TEST_SUITE_P(LeaveOrStay, RollingRestart, ::testing::Bool(),
                         [](const auto& param_info) {
                           return param_info.param ? "LeavingOnStop" : "StayingThroughTheRestart";
                         });

}  // namespace
}  // namespace oncecount::service
