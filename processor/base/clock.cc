#include "processor/base/clock.h"

#include <thread>

namespace oncecount::base {

int64_t SystemClock::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SystemClock::SteadyMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SystemClock::Sleep(std::chrono::milliseconds duration) {
  std::this_thread::sleep_for(duration);
}

Clock& DefaultClock() {
  static SystemClock clock;
  return clock;
}

}  // namespace oncecount::base
