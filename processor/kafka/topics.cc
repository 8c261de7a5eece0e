#include "processor/kafka/topics.h"

#include <algorithm>

namespace oncecount::kafka {
namespace {

constexpr std::chrono::milliseconds kStopCheckEvery{250};

// The first of `topics` the cluster does not have, or null.
const RequiredTopic* FirstMissing(const std::map<std::string, int>& counts,
                                  const std::vector<RequiredTopic>& topics) {
  const auto it = std::find_if(topics.begin(), topics.end(),
                               [&](const RequiredTopic& t) { return !counts.contains(t.name); });
  return it == topics.end() ? nullptr : &*it;
}

// Kafka lists only the topics a principal may describe, so a topic missing from the
// list may exist behind an ACL. (Asked for by name, a broker would tell the two
// apart, but the embedded cluster creates a topic asked for by name.)
base::Error MissingTopic(const RequiredTopic& t) {
  return base::Error(base::Errc::kMissingTopic,
                     "topic " + t.name + " does not exist" + (t.hint.empty() ? "" : "; " + t.hint) +
                         " (or this instance's principal may not Describe it: the cluster "
                         "lists only the topics a principal may describe; docs/operations.md, "
                         "\"ACLs\")");
}

std::map<std::string, int> CountsOf(const std::map<std::string, int>& counts,
                                    const std::vector<RequiredTopic>& topics) {
  std::map<std::string, int> out;
  for (const RequiredTopic& t : topics) out[t.name] = counts.at(t.name);
  return out;
}

}  // namespace

base::Result<std::map<std::string, int>> RequireTopics(Clients& clients,
                                                       const std::vector<RequiredTopic>& topics,
                                                       std::chrono::milliseconds timeout) {
  auto counts = clients.PartitionCounts(timeout);
  if (!counts) return counts.error();
  if (const RequiredTopic* missing = FirstMissing(counts.value(), topics)) {
    return MissingTopic(*missing);
  }
  return CountsOf(counts.value(), topics);
}

base::Result<std::map<std::string, int>> AwaitTopics(Clients& clients,
                                                     const std::vector<RequiredTopic>& topics,
                                                     std::chrono::milliseconds timeout,
                                                     const TopicWait& wait) {
  base::Clock& clock = wait.clock != nullptr ? *wait.clock : base::DefaultClock();
  std::chrono::milliseconds backoff = wait.first_backoff;
  for (;;) {
    auto counts = clients.PartitionCounts(timeout);
    std::string why;  // what the wait is for
    if (!counts) {
      why = "cannot ask the cluster which topics exist: " + counts.message();
    } else if (const RequiredTopic* missing = FirstMissing(counts.value(), topics)) {
      why = "waiting for topic " + missing->name + " to be created (" +
            MissingTopic(*missing).message() + ")";
    } else {
      return CountsOf(counts.value(), topics);
    }
    if (wait.log) wait.log(why + "; asking again in " + std::to_string(backoff.count()) + " ms");
    // In slices, so that a stop is seen within a quarter of a second.
    for (auto left = backoff; left.count() > 0; left -= kStopCheckEvery) {
      if (wait.stop_requested && wait.stop_requested()) {
        return base::Error(base::Errc::kStopped, "stopped while " + why);
      }
      clock.Sleep(std::min(left, kStopCheckEvery));
    }
    backoff = std::min(backoff * 2, wait.max_backoff);
  }
}

}  // namespace oncecount::kafka
