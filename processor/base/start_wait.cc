#include "processor/base/start_wait.h"

#include <algorithm>

namespace oncecount::base {

namespace {
constexpr std::chrono::milliseconds kStopCheckEvery{250};
}  // namespace

Status AwaitUntilDone(const StartWait& wait,
                      const std::function<std::optional<std::string>()>& ask) {
  Clock& clock = wait.clock != nullptr ? *wait.clock : DefaultClock();
  std::chrono::milliseconds backoff = wait.first_backoff;
  bool waited = false;
  for (;;) {
    const std::optional<std::string> why = ask();
    if (!why) {
      if (waited && wait.waiting_for) wait.waiting_for("");
      return {};
    }
    waited = true;
    if (wait.waiting_for) wait.waiting_for(*why);
    wait.log.Log(wait.level, *why + "; asking again in " + std::to_string(backoff.count()) + " ms");
    // In slices, so that a stop is seen within a quarter of a second.
    for (auto left = backoff; left.count() > 0; left -= kStopCheckEvery) {
      if (wait.stop_requested && wait.stop_requested()) {
        return Error(Errc::kStopped, "stopped while " + *why);
      }
      clock.Sleep(std::min(left, kStopCheckEvery));
    }
    backoff = std::min(backoff * 2, wait.max_backoff);
  }
}

}  // namespace oncecount::base
