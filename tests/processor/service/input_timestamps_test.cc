#include "processor/service/input_timestamps.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace oncecount::service {
namespace {

using Guard = InputTimestampVerdict::Guard;
using std::chrono::milliseconds;

constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();  // Kafka's Long.MAX_VALUE

bool Says(const InputTimestampVerdict& v, const std::string& what) {
  return v.sentence.find(what) != std::string::npos;
}

TEST(InputTimestamps, LogAppendTimeIsGuarded) {
  kafka::TopicSettings told;
  told.timestamp_type = "LogAppendTime";
  told.timestamp_after_max_ms = kNoBound;
  const InputTimestampVerdict v = JudgeInputTimestamps("events", told, milliseconds(1000));
  EXPECT_EQ(v.guard, Guard::kGuarded);
  EXPECT_TRUE(Says(v, "LogAppendTime")) << v.sentence;
}

TEST(InputTimestamps, ABoundAheadWithinTheToleranceIsGuarded) {
  kafka::TopicSettings told;
  told.timestamp_type = "CreateTime";
  told.timestamp_after_max_ms = 1000;
  const InputTimestampVerdict v = JudgeInputTimestamps("events", told, milliseconds(1000));
  EXPECT_EQ(v.guard, Guard::kGuarded);
  EXPECT_TRUE(Says(v, "1000 ms ahead")) << v.sentence;
}

TEST(InputTimestamps, KafkasDefaultOfNoBoundIsUnguardedAndSaysWhatToSet) {
  kafka::TopicSettings told;
  told.timestamp_type = "CreateTime";
  told.timestamp_after_max_ms = kNoBound;
  told.timestamp_difference_max_ms = kNoBound;
  const InputTimestampVerdict v = JudgeInputTimestamps("clicks", told, milliseconds(2500));
  EXPECT_EQ(v.guard, Guard::kUnguarded);
  for (const char* named : {"clicks takes records stamped any time ahead",
                            "message.timestamp.after.max.ms", "message.timestamp.difference.max.ms",
                            "dedup.timestamp_tolerance_ms (2500)", "LogAppendTime", "late"}) {
    EXPECT_TRUE(Says(v, named)) << named << " in " << v.sentence;
  }
}

TEST(InputTimestamps, ABoundAheadWiderThanTheToleranceIsUnguarded) {
  kafka::TopicSettings told;
  told.timestamp_type = "CreateTime";
  told.timestamp_after_max_ms = 3'600'000;  // Kafka 4.0's default
  const InputTimestampVerdict v = JudgeInputTimestamps("events", told, milliseconds(1000));
  EXPECT_EQ(v.guard, Guard::kUnguarded);
  EXPECT_TRUE(Says(v, "up to 3600000 ms ahead")) << v.sentence;
}

// A broker before Kafka 3.6 has only message.timestamp.difference.max.ms, which bounds
// both sides; a newer one reads after.max.ms unless it is left at Long.MAX_VALUE, and
// only then the older setting.
TEST(InputTimestamps, ReadsTheOlderDifferenceBoundOnlyWhereTheBrokerDoes) {
  kafka::TopicSettings old_broker;
  old_broker.timestamp_type = "CreateTime";
  old_broker.timestamp_difference_max_ms = 500;
  const InputTimestampVerdict v = JudgeInputTimestamps("events", old_broker, milliseconds(1000));
  EXPECT_EQ(v.guard, Guard::kGuarded);
  EXPECT_TRUE(Says(v, "INVALID_TIMESTAMP")) << "the two-sided bound's cost is said: " << v.sentence;
  kafka::TopicSettings both = old_broker;
  both.timestamp_after_max_ms = kNoBound;
  EXPECT_EQ(JudgeInputTimestamps("events", both, milliseconds(1000)).guard, Guard::kGuarded);
  both.timestamp_after_max_ms = 3'600'000;  // set: the difference bound is not read
  EXPECT_EQ(JudgeInputTimestamps("events", both, milliseconds(1000)).guard, Guard::kUnguarded);
  both.timestamp_after_max_ms = 800;
  EXPECT_EQ(JudgeInputTimestamps("events", both, milliseconds(1000)).guard, Guard::kGuarded);
}

TEST(InputTimestamps, SettingsTheClusterDoesNotTellAreUnknownAndStillSayWhatToSet) {
  const InputTimestampVerdict v =
      JudgeInputTimestamps("events", kafka::TopicSettings{}, milliseconds(1000));
  EXPECT_EQ(v.guard, Guard::kUnknown);
  EXPECT_TRUE(Says(v, "does not tell")) << v.sentence;
  EXPECT_TRUE(Says(v, "message.timestamp.after.max.ms")) << v.sentence;
}

}  // namespace
}  // namespace oncecount::service
