// Topic checks that the processor and the replicator make before they start: the
// topics they need exist, and how many partitions each has.
//
// Thread-safety: a pure function of the cluster's answer; call it from the thread
// that owns the Clients call (any, per clients.h).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "processor/filter/result.h"
#include "processor/kafka/clients.h"

namespace oncecount::kafka {

// A topic a component cannot run without, and what to tell the user who lacks it.
struct RequiredTopic {
  std::string name;
  std::string hint;  // appended to "topic <name> does not exist"; may be empty
};

// The partition count of each required topic, or an error naming the first one
// missing (or why the cluster could not be asked).
filter::Result<std::map<std::string, int>> RequireTopics(Clients& clients,
                                                         const std::vector<RequiredTopic>& topics,
                                                         std::chrono::milliseconds timeout);

}  // namespace oncecount::kafka
