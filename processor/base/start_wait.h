// A wait at start-up for something outside the service: topics that another job
// creates, the instances of a renamed group stopping. The caller's `ask` says what it
// still waits for; the wait logs it, asks again after a doubling back-off, and ends
// when nothing is left to wait for or a stop is requested.
//
// Blocks the calling thread (ServiceRuntime::Start's); the clock, the log and the stop
// request are the caller's.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "processor/base/clock.h"
#include "processor/base/logger.h"
#include "processor/base/result.h"

namespace oncecount::base {

// How a start-up wait waits: on which clock, whom it tells, and what ends the wait.
struct StartWait {
  Clock* clock = nullptr;                // null: the system clock
  std::function<bool()> stop_requested;  // null: wait as long as it takes
  Logger log;                            // one line per wait
  LogLevel level = LogLevel::kInfo;      // of those lines
  // Told what the wait is for before each back-off, and "" when it ends (null: no
  // one): a probe says why the instance is not ready yet.
  std::function<void(const std::string&)> waiting_for;
  std::chrono::milliseconds first_backoff{1000};  // doubled after each wait
  std::chrono::milliseconds max_backoff{30000};
};

// Calls `ask` until it returns nullopt, then returns ok. Each other answer is what
// the wait is for ("waiting for topic t to be created"): logged with the back-off, and
// named in the kStopped error returned when a stop is requested (seen within a
// quarter of a second).
Status AwaitUntilDone(const StartWait& wait,
                      const std::function<std::optional<std::string>()>& ask);

}  // namespace oncecount::base
