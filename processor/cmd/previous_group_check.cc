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

base::Status AwaitPreviousGroupStopped(const config::KafkaConfig& k, kafka::Clients& clients,
                                       const base::StartWait& wait) {
  if (k.previous_group_id.empty()) return {};
  const std::string group = "consumer group \"" + k.previous_group_id + "\"";
  base::StartWait warned = wait;
  warned.level = base::LogLevel::kWarn;
  return base::AwaitUntilDone(warned, [&]() -> std::optional<std::string> {
    auto described = clients.DescribeGroup(k.previous_group_id, kAskTimeout);
    const std::string trusting =
        ": starting on the word that every instance of it stopped. Brokers tell it to a "
        "principal allowed Describe on the group";
    if (!described) {
      wait.log.Warn("cannot tell whether " + group +
                    " (kafka.previous_group_id) still has members (" + described.message() + ")" +
                    trusting);
      return std::nullopt;
    }
    if (!described.value().listed) {
      // Its offsets expire only a while after its last member left, so a group
      // renamed from is listed; one that is not may be hidden.
      wait.log.Warn("no broker lists " + group +
                    " (kafka.previous_group_id): it never existed, it has been gone long "
                    "enough for its offsets to expire, or this principal may not see it" +
                    trusting);
      return std::nullopt;
    }
    const std::vector<kafka::GroupMember>& members = described.value().members;
    if (members.empty()) return std::nullopt;
    return "waiting for " + group + " (kafka.previous_group_id) to stop: it still has " +
           std::to_string(members.size()) + " member(s) (" + Named(members) +
           "), which would run the shards this instance takes, neither group fencing the "
           "other; stop every instance of it first (docs/operations.md, \"Renaming the "
           "group\"). A member whose process died without leaving goes when its session "
           "times out";
  });
}

}  // namespace oncecount::cmd
