// The stream log sink of serve: text and JSON lines, and the level below which lines
// are dropped.
#include "processor/cmd/log_sink.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <sstream>
#include <string>

namespace oncecount::cmd {
namespace {

// A clock stopped at one instant.
class StoppedClock final : public base::Clock {
 public:
  int64_t WallMs() const override { return 1'700'000'000'123; }
  int64_t SteadyMs() const override { return 0; }
  void Sleep(std::chrono::milliseconds) override {}
};

TEST(StreamLogSink, WritesTextLinesWithLevelAndContextAndDropsThoseBelowItsLevel) {
  std::ostringstream out;
  const base::Logger log(MakeStreamLogSink(out, base::LogLevel::kInfo, LogFormat::kText), "a");
  log.Child("processor").Warn("transaction aborted");
  log.Debug("not shown at info");
  log.Info("ready");
  EXPECT_EQ(out.str(),
            "oncecount: warn [a processor] transaction aborted\n"
            "oncecount: info [a] ready\n");
}

TEST(StreamLogSink, WritesOneValidJsonObjectPerLineWhateverTheMessageHolds) {
  std::ostringstream out;
  StoppedClock clock;
  const base::Logger log(MakeStreamLogSink(out, base::LogLevel::kDebug, LogFormat::kJson, &clock),
                         "a");
  log.Child("replicas").Error("a \"quoted\"\nline\\ and \xff");
  std::string line = out.str();
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
  simdjson::dom::parser parser;
  const simdjson::dom::element e = parser.parse(line);
  EXPECT_EQ(e["time_ms"].get_int64().value(), 1'700'000'000'123);
  EXPECT_EQ(e["level"].get_string().value(), "error");
  EXPECT_EQ(e["context"].get_string().value(), "a replicas");
  EXPECT_EQ(e["message"].get_string().value(), "a \"quoted\"\nline\\ and \xef\xbf\xbd");
}

TEST(LogFormat, ParsesTextAndJsonOnly) {
  EXPECT_EQ(base::ParseName(kLogFormatNames, "text"), LogFormat::kText);
  EXPECT_EQ(base::ParseName(kLogFormatNames, "json"), LogFormat::kJson);
  EXPECT_EQ(base::ParseName(kLogFormatNames, "JSON"), std::nullopt);
}

}  // namespace
}  // namespace oncecount::cmd
