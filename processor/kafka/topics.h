// Topic checks that the processor and the replicator make before they start: the
// topics they need exist, and how many partitions each has. AwaitTopics, called by
// `serve` first, waits for topics that do not exist yet (the job that creates them
// may still be running) instead of failing.
//
// Thread-safety: a pure function of the cluster's answer; call it from the thread
// that owns the Clients call (any, per clients.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/logger.h"
#include "processor/base/result.h"
#include "processor/base/start_wait.h"
#include "processor/kafka/clients.h"

namespace oncecount::kafka {

// A topic a component cannot run without, and what to tell the user who lacks it.
struct RequiredTopic {
  std::string name;
  std::string hint;  // appended to "topic <name> does not exist"; may be empty
};

// The partition count of each required topic, or an error: kMissingTopic naming the
// first one missing (or hidden from this instance by an ACL), or why the cluster
// could not be asked (kKafka).
base::Result<std::map<std::string, int>> RequireTopics(Clients& clients,
                                                       const std::vector<RequiredTopic>& topics,
                                                       std::chrono::milliseconds timeout);

// RequireTopics, except that while a topic is missing, or the cluster cannot be
// asked (brokers still starting), it logs why and asks again after a back-off, until
// every topic exists (their partition counts) or a stop is requested (kStopped,
// saying what it was waiting for).
base::Result<std::map<std::string, int>> AwaitTopics(Clients& clients,
                                                     const std::vector<RequiredTopic>& topics,
                                                     std::chrono::milliseconds timeout,
                                                     const base::StartWait& wait);

}  // namespace oncecount::kafka
