#include "processor/cmd/rate_schedule.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace oncecount::cmd {
namespace {

// A schedule file that is removed when the test ends.
class ScheduleFile {
 public:
  explicit ScheduleFile(const std::string& text)
      : path_(::testing::TempDir() + "rate-schedule-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv") {
    std::ofstream(path_) << text;
  }
  ~ScheduleFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(RateSchedule, HoldsEachRateUntilTheNextRow) {
  const ScheduleFile file("second,rate\n# warm-up\n0,100\n10,2000\n25.5,0\n");
  auto s = RateSchedule::Load(file.path());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->First(), 100);
  EXPECT_EQ(s->At(0), 100);
  EXPECT_EQ(s->At(9.999), 100);
  EXPECT_EQ(s->At(10), 2000);
  EXPECT_EQ(s->At(25.4), 2000);
  EXPECT_EQ(s->At(25.5), 0);
  EXPECT_EQ(s->At(1e6), 0);
}

TEST(RateSchedule, IsZeroBeforeAFirstRowThatStartsLate) {
  const ScheduleFile file("5,300\n");
  auto s = RateSchedule::Load(file.path());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->At(4.9), 0);
  EXPECT_EQ(s->At(5), 300);
  EXPECT_EQ(s->First(), 300);
}

TEST(RateSchedule, RefusesRowsThatAreNotIncreasingOrNotNumbersAsUsageErrors) {
  for (const char* text : {"0,10\n0,20\n", "0,10\n5,-1\n", "0,10\nfive,20\n", "0;10\n1;20\n"}) {
    const ScheduleFile file(text);
    auto s = RateSchedule::Load(file.path());
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.code(), base::Errc::kUsage);
    EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  }
}

TEST(RateSchedule, RefusesAMissingOrEmptyFile) {
  auto missing = RateSchedule::Load("/nonexistent/schedule.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("cannot open"), std::string::npos) << missing.message();
  const ScheduleFile empty("second,rate\n# nothing yet\n");
  auto none = RateSchedule::Load(empty.path());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("has no rows"), std::string::npos) << none.message();
}

TEST(RateSchedule, AConstantScheduleHasOneRateForEverySecond) {
  const RateSchedule s = RateSchedule::Constant(42);
  EXPECT_EQ(s.First(), 42);
  EXPECT_EQ(s.At(0), 42);
  EXPECT_EQ(s.At(3600), 42);
}

}  // namespace
}  // namespace oncecount::cmd
