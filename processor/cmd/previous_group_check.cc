#include "processor/cmd/previous_group_check.h"

#include <optional>
#include <string>

namespace oncecount::cmd {
namespace {

constexpr std::chrono::milliseconds kAskTimeout{10000};

std::string Named(const std::vector<kafka::GroupMember>& members) {
  std::string out;
  for (const kafka::GroupMember& m : members) {
    out += (out.empty() ? "" : ", ") + m.client_id + " at " + m.host;
  }
  return out;
}

}  // namespace

base::Result<PreviousGroup> AwaitPreviousGroupStopped(const config::KafkaConfig& k,
                                                      kafka::Clients& clients,
                                                      const base::StartWait& wait) {
  if (k.previous_group_id.empty()) return PreviousGroup::kNone;
  const std::string group =
      "consumer group \"" + k.previous_group_id + "\" (kafka.previous_group_id)";
  const std::string trusting =
      ": starting on the word that every instance of it stopped "
      "(oncecount_previous_group_unverified 1). Brokers describe a group to a principal "
      "allowed Describe on it";
  PreviousGroup verdict = PreviousGroup::kStopped;
  bool members_seen = false;
  int inconclusive = 0;  // answers in a row that proved nothing
  base::StartWait warned = wait;
  warned.level = base::LogLevel::kWarn;
  base::Status done = base::AwaitUntilDone(warned, [&]() -> std::optional<std::string> {
    auto described = clients.DescribeGroup(k.previous_group_id, kAskTimeout);
    std::string unsure;  // why this answer proves nothing
    if (!described) {
      if (described.code() == base::Errc::kKafka && !members_seen) {
        wait.log.Warn("cannot tell whether " + group + " still has members (" +
                      described.message() + ")" + trusting);
        verdict = PreviousGroup::kUnverified;
        return std::nullopt;
      }
      unsure = "cannot ask whether it still has members (" + described.message() + ")";
    } else if (!described.value().listed) {
      // librdkafka keeps one broker's error of a round, and drops the list of a broker
      // that answered with one: a group missing once may be listed at the next.
      unsure =
          "no broker lists it (it never existed, it has been gone long enough for its "
          "offsets to expire, this principal may not see it, or its coordinator did not "
          "answer)";
    } else if (described.value().members.empty()) {
      return std::nullopt;
    } else {
      members_seen = true;
      inconclusive = 0;
      const std::vector<kafka::GroupMember>& members = described.value().members;
      return "waiting for " + group + " to stop: it still has " + std::to_string(members.size()) +
             " member(s) (" + Named(members) +
             "), which would run the shards this instance takes, neither group fencing the "
             "other; stop every instance of it first (docs/operations.md, \"Renaming the "
             "group\"). A member whose process died without leaving goes when its session "
             "times out";
    }
    if (!members_seen && ++inconclusive >= kInconclusiveAnswers) {
      wait.log.Warn(group + ": " + unsure + ", at " + std::to_string(inconclusive) +
                    " questions in a row" + trusting);
      verdict = PreviousGroup::kUnverified;
      return std::nullopt;
    }
    return "waiting for " + group + " to stop: " + unsure +
           (members_seen ? "; it had members at the last answer that described it" : "");
  });
  if (!done) return std::move(done).error();
  return verdict;
}

}  // namespace oncecount::cmd
