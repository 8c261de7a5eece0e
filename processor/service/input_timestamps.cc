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
      "set message.timestamp.after.max.ms (Kafka 3.6 and later; before, "
      "message.timestamp.difference.max.ms) on " +
      topic + " to at most dedup.timestamp_tolerance_ms (" + std::to_string(tolerance.count()) +
      "), or message.timestamp.type=LogAppendTime (docs/operations.md, "
      "\"Time is the records' time\")";
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
  std::optional<int64_t> after = Bound(told.timestamp_after_max_ms);
  if (const std::optional<int64_t> difference = Bound(told.timestamp_difference_max_ms)) {
    after = after ? std::min(*after, *difference) : *difference;
  }
  if (after && *after <= tolerance.count()) {
    return {Guard::kGuarded, topic + " refuses records stamped more than " +
                                 std::to_string(*after) +
                                 " ms ahead of the broker's clock at append, within "
                                 "dedup.timestamp_tolerance_ms: producer clocks cannot move "
                                 "the shards' clocks further, even in a backlog"};
  }
  const std::string allowed =
      after ? "takes records stamped up to " + std::to_string(*after) + " ms ahead of the broker"
            : "takes records stamped any time ahead of the broker";
  return {Guard::kUnguarded, topic + " " + allowed + ": " + risk + fix};
}

}  // namespace oncecount::service
