// Logger: levels and contexts handed to a sink, and loggers made from functions.
#include "processor/base/logger.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace oncecount::base {
namespace {

struct Line {
  LogLevel level;
  std::string context;
  std::string message;
  bool operator==(const Line&) const = default;
};

class RecordingSink final : public LogSink {
 public:
  void Write(LogLevel level, std::string_view context, std::string_view message) override {
    lines.push_back({level, std::string(context), std::string(message)});
  }
  std::vector<Line> lines;
};

TEST(Logger, HandsEachLineToItsSinkWithItsLevelAndContext) {
  auto sink = std::make_shared<RecordingSink>();
  const Logger root(sink, "a");
  const Logger processor = root.Child("processor");
  processor.Warn("transaction aborted");
  processor.Child("shard 3").Debug("restored");
  root("plain");  // a function call is info
  EXPECT_EQ(sink->lines, (std::vector<Line>{{LogLevel::kWarn, "a processor", "transaction aborted"},
                                            {LogLevel::kDebug, "a processor shard 3", "restored"},
                                            {LogLevel::kInfo, "a", "plain"}}));
}

TEST(Logger, MadeFromAFunctionPassesTheMessagesAloneAtEveryLevel) {
  std::vector<std::string> got;
  const Logger log = [&](const std::string& line) { got.push_back(line); };
  log.Child("replicas").Error("seek failed");
  log.Info("assigned");
  EXPECT_EQ(got, (std::vector<std::string>{"seek failed", "assigned"}));
}

TEST(Logger, ADefaultLoggerDropsEverythingAndSaysSo) {
  const Logger none;
  EXPECT_FALSE(none);
  none.Error("nobody hears this");
  EXPECT_TRUE(Logger([](const std::string&) {}));
}

TEST(LogLevel, ParsesTheNamesItPrints) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    EXPECT_EQ(ParseName(kLogLevelNames, LogLevelName(level)), level);
  }
  EXPECT_EQ(ParseName(kLogLevelNames, "warning"), std::nullopt);
  EXPECT_EQ(ParseName(kLogLevelNames, ""), std::nullopt);
}

}  // namespace
}  // namespace oncecount::base
