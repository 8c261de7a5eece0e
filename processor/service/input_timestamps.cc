#include "processor/service/input_timestamps.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace oncecount::service {
namespace {

// Kafka's "no bound" is Long.MAX_VALUE; a negative value is not one either.
std::optional<int64_t> Bound(const std::optional<int64_t>& ms) {
  if (!ms || *ms < 0 || *ms == std::numeric_limits<int64_t>::max()) return std::nullopt;
  return ms;
}

}  // namespace

InputTimestampVerdict JudgeInputTimestamps(const std::string& topic,
                                           const kafka::TopicSettings& told,
                                           std::chrono::milliseconds tolerance) {
  using Guard = InputTimestampVerdict::Guard;
  const std::string fix =
      "set message.timestamp.type=LogAppendTime on " + topic +
      ", or (Kafka 3.6 and later) message.timestamp.after.max.ms to at most "
      "dedup.timestamp_tolerance_ms (" +
      std::to_string(tolerance.count()) +
      "); before 3.6, message.timestamp.difference.max.ms bounds both sides and would also "
      "refuse records appended later than that after their producer stamped them, such as "
      "retries through a leader election (docs/operations.md, \"Time is the records' time\")";
  const std::string risk =
      "a producer whose clock runs ahead moves a shard's clock as far when its records are "
      "processed behind the wall clock (a backlog, a restore), the filter forgets early, and "
      "the records after it are counted late; ";
  if (told.timestamp_type == "LogAppendTime") {
    return {Guard::kGuarded, topic +
                                 " has message.timestamp.type=LogAppendTime: the broker "
                                 "stamps records at append, and producer clocks cannot "
                                 "move the shards' clocks"};
  }
  const bool told_anything =
      told.timestamp_type || told.timestamp_after_max_ms || told.timestamp_difference_max_ms;
  if (!told_anything) {
    return {Guard::kUnknown, "the cluster does not tell the timestamp settings of " + topic +
                                 ": unless its broker bounds them, " + risk + fix};
  }
  // As the broker reads them: after.max.ms unless it is left at Long.MAX_VALUE, then
  // the older two-sided difference.max.ms.
  const std::optional<int64_t> after = Bound(told.timestamp_after_max_ms);
  const std::optional<int64_t> difference = Bound(told.timestamp_difference_max_ms);
  const std::optional<int64_t> bound = after ? after : difference;
  if (bound && *bound <= tolerance.count()) {
    std::string sentence = topic + " refuses records stamped more than " + std::to_string(*bound) +
                           " ms ahead of the broker's clock at append, within "
                           "dedup.timestamp_tolerance_ms: producer clocks cannot move the "
                           "shards' clocks further, even in a backlog";
    if (!after) {
      sentence +=
          " (message.timestamp.difference.max.ms also refuses records appended more "
          "than that after their producer stamped them: producers see "
          "INVALID_TIMESTAMP)";
    }
    return {Guard::kGuarded, std::move(sentence)};
  }
  const std::string allowed =
      bound ? "takes records stamped up to " + std::to_string(*bound) + " ms ahead of the broker"
            : "takes records stamped any time ahead of the broker";
  return {Guard::kUnguarded, topic + " " + allowed + ": " + risk + fix};
}

}  // namespace oncecount::service
