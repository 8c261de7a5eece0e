#include "processor/kafka/topics.h"

namespace oncecount::kafka {

filter::Result<std::map<std::string, int>> RequireTopics(Clients& clients,
                                                         const std::vector<RequiredTopic>& topics,
                                                         std::chrono::milliseconds timeout) {
  auto counts = clients.PartitionCounts(timeout);
  if (!counts) return filter::Error{counts.error()};
  std::map<std::string, int> out;
  for (const RequiredTopic& t : topics) {
    const auto it = counts.value().find(t.name);
    if (it == counts.value().end()) {
      return filter::Error{"topic " + t.name + " does not exist" +
                           (t.hint.empty() ? "" : "; " + t.hint)};
    }
    out[t.name] = it->second;
  }
  return out;
}

}  // namespace oncecount::kafka
