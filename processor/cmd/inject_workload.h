// InjectWorkload: the deterministic stream of messages that `oncecount inject`
// produces, and the truth it implies (SPEC §3).
//
// N unique increment events over C counters and K client ids, each keyed
// "<client>/<seq>" with a JSON value {"counter", "delta"} (deltas in -2..5, mostly
// 1); a fraction R of them is sent again as a retry, byte for byte, after a random
// delay in [0, D] ms; a fraction of extra malformed messages cycles through every
// dead-letter reason that does not depend on state. The truth counts each unique
// event once. The same options and seed give the same stream.
//
// Thread-safety: a plain value; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace oncecount::cmd {

struct WorkloadOptions {
  uint64_t events = 1000;
  double duplicate_rate = 0.1;
  uint32_t counters = 100;
  uint32_t clients = 10;
  int64_t max_retry_delay_ms = 2000;
  double malformed_rate = 0;
  uint64_t seed = 1;
  // Events' sequence numbers (the <seq> of <client-id>/<seq>) start here, so that
  // two runs can send events that are new to each other.
  uint64_t first_seq = 0;
};

struct WorkloadMessage {
  std::optional<std::string> key;  // nullopt: a message without a key
  std::string value;
  enum class Kind : uint8_t { kEvent, kRetry, kMalformed } kind = Kind::kEvent;
};

struct Truth {
  std::map<std::string, int64_t> counters;
  uint64_t events = 0;
  uint64_t duplicates = 0;
  uint64_t malformed = 0;
  std::string ToJson() const;
};

class InjectWorkload {
 public:
  explicit InjectWorkload(const WorkloadOptions& options);

  // The next message due at `now_ms` (time since the start), or nullopt when none is
  // due yet; new events are released by the caller's pacing (`new_allowed`).
  std::optional<WorkloadMessage> Next(int64_t now_ms, bool new_allowed);
  // True when every event and every retry has been handed out.
  bool Done() const;
  // ms until the earliest pending retry (for a caller that has no new events left).
  std::optional<int64_t> NextRetryDue() const;

  const Truth& truth() const { return truth_; }

 private:
  WorkloadMessage MakeEvent();
  WorkloadMessage MakeMalformed();

  WorkloadOptions options_;
  std::mt19937_64 rng_;
  Truth truth_;
  uint64_t produced_ = 0;
  uint64_t malformed_made_ = 0;
  struct Pending {
    int64_t due_ms;
    uint64_t order;
    WorkloadMessage message;
    bool operator>(const Pending& o) const {
      return due_ms != o.due_ms ? due_ms > o.due_ms : order > o.order;
    }
  };
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> retries_;
  uint64_t retry_order_ = 0;
  int64_t last_now_ = 0;
};

}  // namespace oncecount::cmd
