// The command line of the oncecount binary (processor/cmd/main.cc), as a real process:
// numbers CLI11 would read wrongly are refused as usage errors (exit code 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/processor/cmd/child_process.h"

namespace {

using namespace std::chrono_literals;
using oncecount::testing::ChildProcess;
using oncecount::testing::ReadFile;

// The exit code and what the binary wrote to stderr.
std::pair<int, std::string> RunBinary(std::vector<std::string> args) {
  const std::string err_file =
      ::testing::TempDir() + "main-test-" + std::to_string(getpid()) + "-" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".err";
  std::remove(err_file.c_str());
  args.insert(args.begin(), ONCECOUNT_BINARY);
  ChildProcess child(args, {}, err_file);
  const int code = child.Wait(30s);
  return {code, ReadFile(err_file)};
}

// Regression: CLI11 reads integers in base 0, so `inject --events -1` wrapped to 2^64 - 1
// and ran without end, and "010" read as 8; a NaN rate passed every range check.
TEST(CommandLine, RefusesNumbersThatAreNotPlainDecimalOrNotFinite) {
  const std::vector<std::vector<std::string>> refused = {
      {"inject", "--bootstrap", "127.0.0.1:1", "--events", "-1"},
      {"inject", "--bootstrap", "127.0.0.1:1", "--events", "010"},
      {"inject", "--bootstrap", "127.0.0.1:1", "--events", "0x10"},
      {"inject", "--bootstrap", "127.0.0.1:1", "--events", "5", "--rate", "nan"},
      {"inject", "--bootstrap", "127.0.0.1:1", "--events", "5", "--first-seq", "-1"},
      {"filter-eval", "--cell-bits", "010", "--rate", "1000", "--window-ms", "1000"},
      {"demo", "--events", "-5"},
      {"demo", "--duplicate-rate", "inf"},
      {"filter-eval", "--queries", "-1", "--rate", "1000", "--window-ms", "1000"},
      {"dev-kafka", "--partitions", "-3"},
      {"verify", "--truth", "t.json", "--api", "http://127.0.0.1:1", "--timeout-s", "nan"},
  };
  for (const auto& args : refused) {
    const auto [code, err] = RunBinary(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(code, 2) << line << "\n" << err;
    EXPECT_TRUE(err.find("expected a whole number in decimal digits") != std::string::npos ||
                err.find("expected a finite number") != std::string::npos)
        << line << "\n"
        << err;
  }
}

// Regression: a duplicate rate of 7 was taken (and shown as 700%).
TEST(CommandLine, DemoRefusesADuplicateRateOutsideZeroToOne) {
  const auto [code, err] = RunBinary({"demo", "--duplicate-rate", "7", "--events", "10"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--duplicate-rate must be in [0, 1)"), std::string::npos) << err;
}

// Regression: with both, the schedule won and --rate was ignored without a word.
TEST(CommandLine, FilterEvalRefusesARateBesideARateSchedule) {
  const auto [code, err] = RunBinary(
      {"filter-eval", "--rate", "1000", "--rate-schedule", "schedule.csv", "--window-ms", "1000"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--rate excludes --rate-schedule"), std::string::npos) << err;
}

}  // namespace
