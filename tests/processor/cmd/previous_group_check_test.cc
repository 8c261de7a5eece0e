// AwaitPreviousGroupStopped against the strict double's group coordinator, whose
// members stay until they leave or their session times out.
#include "processor/cmd/previous_group_check.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/testing/strict_kafka.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;
using testing::StrictKafka;

// A member of the old group, as an instance of the old deployment is.
struct OldMember {
  struct NoRebalances final : kafka::RebalanceListener {
    void OnAssigned(const std::vector<base::Partition>&) override {}
    void OnRevoked(const std::vector<base::Partition>&, bool) override {}
  };
  std::unique_ptr<kafka::Clients> clients;
  std::unique_ptr<kafka::GroupConsumer> consumer;
  NoRebalances listener;

  OldMember(StrictKafka& kafka, const std::string& instance) : clients(kafka.ClientsFor(instance)) {
    auto made = clients->NewGroupConsumer({.topic = "events", .group_id = "counts-old"});
    EXPECT_TRUE(made.ok()) << made.error();
    consumer = std::move(made).value();
    EXPECT_TRUE(consumer->Subscribe(&listener).ok());
  }
};

struct Awaited {
  base::Status status;
  std::optional<PreviousGroup> verdict;
  std::string why_unverified;
  std::vector<std::string> lines;
  int64_t waited_ms = 0;
};

config::KafkaConfig Renamed() {
  config::KafkaConfig k;
  k.group_id = "counts";
  k.previous_group_id = "counts-old";
  return k;
}

// `on_line` runs at each line the wait logs (the world moving on meanwhile).
Awaited Await(StrictKafka& kafka, const config::KafkaConfig& k,
              const std::function<void(size_t line)>& on_line = {},
              std::function<bool()> stop_requested = {}) {
  auto clients = kafka.ClientsFor("new");
  Awaited out;
  base::StartWait wait;
  wait.clock = &kafka.clock();
  wait.stop_requested = std::move(stop_requested);
  wait.log = [&](const std::string& line) {
    out.lines.push_back(line);
    if (on_line) on_line(out.lines.size());
  };
  const int64_t start_ms = kafka.clock().SteadyMs();
  auto state = AwaitPreviousGroupStopped(k, *clients, wait);
  if (state) {
    out.verdict = state.value().verdict;
    out.why_unverified = state.value().why_unverified;
  } else {
    out.status = std::move(state).error();
  }
  out.waited_ms = kafka.clock().SteadyMs() - start_ms;
  return out;
}

class PreviousGroupCheck : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kafka_.CreateTopic("events", 4).ok()); }
  StrictKafka kafka_;
};

// Regression: a rolled rename (a new instance started while the old group's ran) ran
// the old group's shards in both groups, neither fencing the other.
TEST_F(PreviousGroupCheck, WaitsUntilTheOldGroupsLastInstanceStops) {
  auto a = std::make_unique<OldMember>(kafka_, "old-a");
  auto b = std::make_unique<OldMember>(kafka_, "old-b");
  const Awaited awaited = Await(kafka_, Renamed(), [&](size_t line) {
    if (line == 1) a.reset();  // an operator stops the old instances, one by one
    if (line == 2) b.reset();
  });
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kStopped);
  ASSERT_EQ(awaited.lines.size(), 2u);
  EXPECT_NE(awaited.lines[0].find("waiting for consumer group \"counts-old\" "
                                  "(kafka.previous_group_id) to stop: it still has 2 member(s) "
                                  "(oncecount-old-a at /old-a, oncecount-old-b at /old-b)"),
            std::string::npos)
      << awaited.lines[0];
  EXPECT_NE(awaited.lines[0].find("asking again in 1000 ms"), std::string::npos);
  EXPECT_NE(awaited.lines[1].find("it still has 1 member(s) (oncecount-old-b at /old-b)"),
            std::string::npos)
      << awaited.lines[1];
  EXPECT_EQ(awaited.waited_ms, 1000 + 2000);
  EXPECT_TRUE(kafka_.Members("counts-old").empty());
}

TEST_F(PreviousGroupCheck, WaitsForAnInstanceKilledWithoutLeavingUntilItsSessionTimesOut) {
  kafka_.set_session_timeout(10s);
  OldMember killed(kafka_, "old-a");
  kafka_.Crash("old-a");
  const Awaited awaited = Await(kafka_, Renamed());
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kStopped);
  EXPECT_GE(awaited.waited_ms, 10000) << "the member stays until its session times out";
  EXPECT_LE(awaited.waited_ms, 1000 + 2000 + 4000 + 8000);
  ASSERT_FALSE(awaited.lines.empty());
  EXPECT_NE(awaited.lines[0].find("goes when its session times out"), std::string::npos)
      << awaited.lines[0];
}

TEST_F(PreviousGroupCheck, StartsAtOnceWithoutAPreviousGroupOrWhenItHasNoMembers) {
  OldMember running(kafka_, "old-a");
  config::KafkaConfig not_renamed = Renamed();
  not_renamed.previous_group_id.clear();
  const Awaited first = Await(kafka_, not_renamed);
  EXPECT_EQ(first.verdict, PreviousGroup::kNone);
  EXPECT_TRUE(first.lines.empty());

  running.consumer->Close();
  const Awaited renamed = Await(kafka_, Renamed());
  EXPECT_TRUE(renamed.status.ok()) << renamed.status.error();
  EXPECT_EQ(renamed.verdict, PreviousGroup::kStopped);
  EXPECT_TRUE(renamed.lines.empty());
  EXPECT_EQ(renamed.waited_ms, 0);
}

// A group renamed from is listed (its offsets outlive its members by days); one that
// is not may be hidden from this principal, or missing from a round of answers: the
// start asks again for a minute, then goes on unverified, saying so.
TEST_F(PreviousGroupCheck, GoesOnUnverifiedWhenNoBrokerListsTheOldGroupForAMinute) {
  config::KafkaConfig misspelt = Renamed();
  misspelt.previous_group_id = "counts-olf";
  const Awaited awaited = Await(kafka_, misspelt);
  EXPECT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kUnverified);
  // Asked at 0, 1, 3, 7, 15, 31 and 61 s.
  EXPECT_EQ(awaited.waited_ms, 1000 + 2000 + 4000 + 8000 + 16000 + 30000);
  ASSERT_EQ(awaited.lines.size(), 7u);
  EXPECT_NE(awaited.lines[0].find("waiting for consumer group \"counts-olf\" "
                                  "(kafka.previous_group_id) to stop: no broker lists it"),
            std::string::npos)
      << awaited.lines[0];
  EXPECT_NE(awaited.lines.back().find("the start could not tell whether consumer group "
                                      "\"counts-olf\" (kafka.previous_group_id) had stopped: no "
                                      "broker listed it for 61 s"),
            std::string::npos)
      << awaited.lines.back();
  EXPECT_EQ(awaited.lines.back().rfind(awaited.why_unverified, 0), 0u)
      << "/readyz says what the log says";
}

// The minute is of answers in a row: an error between them (librdkafka drops the list
// of a broker that errs, which may be the group's coordinator) starts it again.
TEST_F(PreviousGroupCheck, AnErrorBetweenAnswersWithoutTheGroupStartsTheMinuteAgain) {
  config::KafkaConfig misspelt = Renamed();
  misspelt.previous_group_id = "counts-olf";
  const Awaited awaited = Await(kafka_, misspelt, [&](size_t line) {
    if (line == 3) {
      kafka_.InjectError(
          StrictKafka::Call::kDescribeGroup,
          {kafka::ErrorKind::kRetriable, "_TRANSPORT", "Local: Broker transport failure"});
    }
  });
  EXPECT_EQ(awaited.verdict, PreviousGroup::kUnverified);
  // Asked at 0, 1, 3, 7 (the error), 15, 31, 61 and 91 s: a minute from 15 s.
  EXPECT_EQ(awaited.waited_ms, 1000 + 2000 + 4000 + 8000 + 16000 + 30000 + 30000);
  ASSERT_EQ(awaited.lines.size(), 8u);
  EXPECT_NE(awaited.lines.back().find("no broker listed it for 76 s"), std::string::npos)
      << awaited.lines.back();
}

// An error that may pass (a coordinator loading, a broker that did not answer) proves
// nothing either way: asked again.
TEST_F(PreviousGroupCheck, AsksAgainAfterAnErrorThatMayPass) {
  auto old = std::make_unique<OldMember>(kafka_, "old-a");
  kafka_.InjectError(StrictKafka::Call::kDescribeGroup,
                     {kafka::ErrorKind::kRetriable, "COORDINATOR_LOAD_IN_PROGRESS",
                      "Broker: Coordinator load in progress"});
  const Awaited awaited = Await(kafka_, Renamed(), [&](size_t line) {
    if (line == 2) old.reset();
  });
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kStopped);
  ASSERT_EQ(awaited.lines.size(), 2u);
  EXPECT_NE(awaited.lines[0].find("cannot ask whether it still has members "
                                  "(Broker: Coordinator load in progress"),
            std::string::npos)
      << awaited.lines[0];
  EXPECT_NE(awaited.lines[1].find("it still has 1 member(s)"), std::string::npos)
      << awaited.lines[1];
}

// Once members were seen, no failed question ends the wait, not even a refusal that
// would have ended it before: only an answer that describes the group without them.
TEST_F(PreviousGroupCheck, OnceItSawMembersWaitsForAnAnswerWithoutThemWhateverFails) {
  auto old = std::make_unique<OldMember>(kafka_, "old-a");
  const size_t last_line = 8;  // members, six that may pass, one refusal
  const Awaited awaited = Await(kafka_, Renamed(), [&](size_t line) {
    if (line == 1) {
      kafka_.InjectError(
          StrictKafka::Call::kDescribeGroup,
          {kafka::ErrorKind::kRetriable, "_TRANSPORT", "Local: Broker transport failure"}, 6);
    }
    if (line == last_line - 1) {
      kafka_.InjectError(StrictKafka::Call::kDescribeGroup,
                         {kafka::ErrorKind::kFailed, "GROUP_AUTHORIZATION_FAILED",
                          "Broker: Group authorization failed"});
    }
    if (line == last_line) old.reset();
  });
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kStopped);
  ASSERT_EQ(awaited.lines.size(), last_line);
  for (size_t i = 1; i < awaited.lines.size(); ++i) {
    EXPECT_NE(awaited.lines[i].find("it had members at the last answer that described it"),
              std::string::npos)
        << awaited.lines[i];
  }
}

TEST_F(PreviousGroupCheck, GivesUpWhenAStopIsRequestedSayingWhatItWaitedFor) {
  OldMember running(kafka_, "old-a");
  const int64_t start_ms = kafka_.clock().SteadyMs();
  const Awaited awaited =
      Await(kafka_, Renamed(), {}, [&] { return kafka_.clock().SteadyMs() - start_ms >= 2500; });
  ASSERT_FALSE(awaited.status.ok());
  EXPECT_EQ(awaited.status.error().code(), base::Errc::kStopped);
  EXPECT_NE(awaited.status.error().message().find(
                "stopped while waiting for consumer group \"counts-old\""),
            std::string::npos)
      << awaited.status.error();
  EXPECT_LE(awaited.waited_ms, 2500 + 250);
}

TEST_F(PreviousGroupCheck, GoesOnWithAWarningWhenTheClusterCannotDescribeTheGroup) {
  OldMember running(kafka_, "old-a");
  kafka_.InjectError(StrictKafka::Call::kDescribeGroup,
                     {kafka::ErrorKind::kFailed, "GROUP_AUTHORIZATION_FAILED",
                      "Broker: Group authorization failed"});
  const Awaited awaited = Await(kafka_, Renamed());
  EXPECT_TRUE(awaited.status.ok()) << awaited.status.error();
  EXPECT_EQ(awaited.verdict, PreviousGroup::kUnverified);
  ASSERT_EQ(awaited.lines.size(), 1u);
  EXPECT_NE(awaited.lines[0].find("the start could not tell whether consumer group \"counts-old\" "
                                  "(kafka.previous_group_id) had stopped: the brokers refuse to "
                                  "describe it (Broker: Group authorization failed "
                                  "(GROUP_AUTHORIZATION_FAILED))"),
            std::string::npos)
      << awaited.lines[0];
  EXPECT_EQ(awaited.waited_ms, 0);
}

}  // namespace
}  // namespace oncecount::cmd
