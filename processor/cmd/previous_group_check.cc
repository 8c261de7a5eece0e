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

base::Result<PreviousGroupState> AwaitPreviousGroupStopped(const config::KafkaConfig& k,
                                                           kafka::Clients& clients,
                                                           const base::StartWait& wait) {
  PreviousGroupState state;
  if (k.previous_group_id.empty()) return state;
  state.verdict = PreviousGroup::kStopped;
  base::Clock& clock = wait.clock != nullptr ? *wait.clock : base::DefaultClock();
  const std::string group =
      "consumer group \"" + k.previous_group_id + "\" (kafka.previous_group_id)";
  const auto unverified = [&](const std::string& why) {
    state.verdict = PreviousGroup::kUnverified;
    state.why_unverified = "the start could not tell whether " + group + " had stopped: " + why +
                           "; an instance of it still running would run the shards this one "
                           "takes (docs/operations.md, \"Renaming the group\")";
    wait.log.Warn(state.why_unverified +
                  ". Starting on the word that every instance of it "
                  "stopped (oncecount_previous_group_unverified 1). Brokers describe a group to "
                  "a principal allowed Describe on it");
    return std::nullopt;
  };
  bool members_seen = false;
  int64_t not_listed_since_ms = -1;  // the first of the answers in a row without the group
  base::StartWait warned = wait;
  warned.level = base::LogLevel::kWarn;
  base::Status done = base::AwaitUntilDone(warned, [&]() -> std::optional<std::string> {
    auto described = clients.DescribeGroup(k.previous_group_id, kAskTimeout);
    std::string unsure;  // why this answer proves nothing
    if (!described) {
      if (described.code() == base::Errc::kKafka && !members_seen) {
        return unverified("the brokers refuse to describe it (" + described.message() + ")");
      }
      unsure = "cannot ask whether it still has members (" + described.message() + ")";
      not_listed_since_ms = -1;  // the broker that errs may be the one that lists it
    } else if (!described.value().listed) {
      const int64_t now = clock.SteadyMs();
      if (not_listed_since_ms < 0) not_listed_since_ms = now;
      if (!members_seen && now - not_listed_since_ms >= kNotListedFor.count()) {
        return unverified("no broker listed it for " +
                          std::to_string((now - not_listed_since_ms) / 1000) +
                          " s (it never existed, it has been gone long enough for its offsets "
                          "to expire or was deleted, or this principal may not see it)");
      }
      unsure =
          "no broker lists it (it never existed, it has been gone long enough for its "
          "offsets to expire or was deleted, this principal may not see it, or its "
          "coordinator did not answer)";
    } else if (described.value().members.empty()) {
      return std::nullopt;
    } else {
      members_seen = true;
      not_listed_since_ms = -1;
      const std::vector<kafka::GroupMember>& members = described.value().members;
      return "waiting for " + group + " to stop: it still has " + std::to_string(members.size()) +
             " member(s) (" + Named(members) +
             "), which would run the shards this instance takes, neither group fencing the "
             "other; stop every instance of it first (docs/operations.md, \"Renaming the "
             "group\"). A member whose process died without leaving goes when its session "
             "times out";
    }
    return "waiting for " + group + " to stop: " + unsure +
           (members_seen ? "; it had members at the last answer that described it" : "");
  });
  if (!done) return std::move(done).error();
  return state;
}

}  // namespace oncecount::cmd
