// Clock: where the service reads time, so that tests can run it on simulated time.
//
// Two readings: the wall clock (ms since the Unix epoch; the filters' time, the
// views' timestamps, what batches record) and a steady clock (ms from an arbitrary
// start; intervals, deadlines, back-off). Sleep waits on the steady clock; a
// simulated clock advances instead of waiting.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace oncecount::base {

// The one duration type of the code: filters, windows, intervals, timeouts.
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t WallMs() const = 0;
  virtual int64_t SteadyMs() const = 0;
  virtual void Sleep(std::chrono::milliseconds duration) = 0;
};

// The machine's clocks.
class SystemClock final : public Clock {
 public:
  int64_t WallMs() const override;
  int64_t SteadyMs() const override;
  void Sleep(std::chrono::milliseconds duration) override;
};

// The process-wide system clock (stateless; never destroyed).
Clock& DefaultClock();

}  // namespace oncecount::base
