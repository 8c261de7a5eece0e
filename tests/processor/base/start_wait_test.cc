#include "processor/base/start_wait.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oncecount::base {
namespace {

using namespace std::chrono_literals;

// Time moves only when the wait sleeps.
class SleepingClock final : public Clock {
 public:
  int64_t WallMs() const override { return now_ms; }
  int64_t SteadyMs() const override { return now_ms; }
  void Sleep(std::chrono::milliseconds duration) override { now_ms += duration.count(); }
  int64_t now_ms = 0;
};

TEST(StartWait, AsksAgainAfterADoublingCappedBackOffAndSaysWhatItWaitsFor) {
  SleepingClock clock;
  std::vector<std::string> lines;
  std::vector<int64_t> asked_at_ms;
  StartWait wait;
  wait.clock = &clock;
  wait.first_backoff = 1000ms;
  wait.max_backoff = 3000ms;
  wait.log = [&](const std::string& line) { lines.push_back(line); };
  std::vector<std::string> told;
  wait.waiting_for = [&](const std::string& why) { told.push_back(why); };
  const Status done = AwaitUntilDone(wait, [&]() -> std::optional<std::string> {
    asked_at_ms.push_back(clock.now_ms);
    if (asked_at_ms.size() == 5) return std::nullopt;
    return "waiting for thing " + std::to_string(asked_at_ms.size());
  });
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(asked_at_ms, (std::vector<int64_t>{0, 1000, 3000, 6000, 9000}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "waiting for thing 1; asking again in 1000 ms");
  EXPECT_EQ(lines[3], "waiting for thing 4; asking again in 3000 ms");
  EXPECT_EQ(told, (std::vector<std::string>{"waiting for thing 1", "waiting for thing 2",
                                            "waiting for thing 3", "waiting for thing 4", ""}));
}

TEST(StartWait, ReturnsAtOnceWhenNothingIsLeftToWaitFor) {
  SleepingClock clock;
  std::vector<std::string> lines;
  StartWait wait;
  wait.clock = &clock;
  wait.log = [&](const std::string& line) { lines.push_back(line); };
  bool told = false;
  wait.waiting_for = [&](const std::string&) { told = true; };
  EXPECT_TRUE(AwaitUntilDone(wait, [] { return std::optional<std::string>(); }).ok());
  EXPECT_TRUE(lines.empty());
  EXPECT_FALSE(told);
  EXPECT_EQ(clock.now_ms, 0);
}

TEST(StartWait, StopsWithinAQuarterSecondOfAStopRequestNamingWhatItWaitedFor) {
  SleepingClock clock;
  StartWait wait;
  wait.clock = &clock;
  wait.first_backoff = 30000ms;
  wait.stop_requested = [&] { return clock.now_ms >= 1100; };
  const Status done =
      AwaitUntilDone(wait, [] { return std::optional<std::string>("waiting for the moon"); });
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().code(), Errc::kStopped);
  EXPECT_EQ(done.error().message(), "stopped while waiting for the moon");
  EXPECT_LE(clock.now_ms, 1100 + 250);
}

}  // namespace
}  // namespace oncecount::base
