// Membership: the instances of one oncecount cluster as the members topic shows
// them, and the rule that decides which of them stand by for which shard.
//
// The consumer group decides who is active for a shard; librdkafka offers no way
// to add a custom assignor, so standbys cannot ride on the group's assignment.
// Instead every instance publishes a MemberRecord (its id, its API URL, the shards
// it owns) once a second and reads everyone's. From that, each instance computes
// the same answer on its own:
//
//   standbys(p) = the R live instances, other than p's active, with the highest
//                 rendezvous weight XXH3-64(instance id, seed p)
//
// where R is processing.standby_replicas, "live" means heard from within the
// timeout and not leaving, and p's active is the live instance whose newest
// record lists p (none while the group moves p). Rendezvous hashing keeps the
// choice stable: an instance joining or leaving changes the standbys of only the
// shards it wins or held. An instance always counts itself as live.
//
// Thread-safety: owned by one thread (the replicator); time comes in as arguments.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "processor/base/ids.h"
#include "processor/replica/member_record.h"

namespace oncecount::replica {

class Membership {
 public:
  Membership(std::string self, std::chrono::milliseconds timeout)
      : self_(std::move(self)), timeout_(timeout) {}

  // A record read from the members topic at local time `now_ms`.
  void Observe(const MemberRecord& record, int64_t now_ms);

  // The live instances' ids, sorted; always includes this instance.
  std::vector<std::string> Live(int64_t now_ms) const;
  // The live instance that owns shard p; empty when none does.
  std::string ActiveOf(base::Partition partition, int64_t now_ms) const;
  // When a record listing shard p as owned last arrived (local time), from any instance,
  // live or not; -1 when none did.
  int64_t LastHeardOwning(base::Partition partition) const;
  // The rule above: at most `replicas` instance ids, highest weight first.
  std::vector<std::string> StandbysOf(base::Partition partition, int64_t replicas,
                                      int64_t now_ms) const;
  bool IsStandby(const std::string& instance, base::Partition partition, int64_t replicas,
                 int64_t now_ms) const;

  // The newest record of every live instance other than this one.
  std::vector<MemberRecord> Others(int64_t now_ms) const;

  const std::string& self() const { return self_; }

 private:
  struct Heard {
    MemberRecord record;
    int64_t at_ms = 0;  // local time the newest record arrived
  };
  bool IsLive(const Heard& h, int64_t now_ms) const;

  std::string self_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, Heard> members_;
  // Shard → when a record listing it as owned last arrived (local time).
  std::map<base::Partition, int64_t> last_owned_ms_;
};

// The rendezvous weight of `instance` for shard `partition`.
uint64_t StandbyWeight(const std::string& instance, base::Partition partition);

}  // namespace oncecount::replica
