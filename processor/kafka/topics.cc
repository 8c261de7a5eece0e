#include "processor/kafka/topics.h"

#include <algorithm>

namespace oncecount::kafka {
namespace {

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
                                                     const base::StartWait& wait) {
  std::map<std::string, int> found;
  base::Status done = base::AwaitUntilDone(wait, [&]() -> std::optional<std::string> {
    auto counts = clients.PartitionCounts(timeout);
    if (!counts) return "cannot ask the cluster which topics exist: " + counts.message();
    if (const RequiredTopic* missing = FirstMissing(counts.value(), topics)) {
      return "waiting for topic " + missing->name + " to be created (" +
             MissingTopic(*missing).message() + ")";
    }
    found = CountsOf(counts.value(), topics);
    return std::nullopt;
  });
  if (!done) return std::move(done).error();
  return found;
}

}  // namespace oncecount::kafka
