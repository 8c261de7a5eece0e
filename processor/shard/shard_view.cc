#include "processor/shard/shard_view.h"

#include <algorithm>

namespace oncecount::shard {

void StateBoard::SetPartitionCount(int32_t partitions) {
  std::lock_guard lock(mu_);
  partitions_ = partitions;
}

void StateBoard::Publish(std::shared_ptr<const ShardView> view) {
  std::lock_guard lock(mu_);
  const auto at = std::lower_bound(shards_.begin(), shards_.end(), view->partition,
                                   [](const std::shared_ptr<const ShardView>& v,
                                      base::Partition p) { return v->partition < p; });
  if (at != shards_.end() && (*at)->partition == view->partition) {
    const bool owners = (*at)->role == ShardRole::kActive;
    if (owners && view->role != ShardRole::kActive) return;  // a follower's, late
    *at = std::move(view);
  } else {
    shards_.insert(at, std::move(view));
  }
}

void StateBoard::Remove(base::Partition partition) {
  std::lock_guard lock(mu_);
  std::erase_if(shards_, [partition](const auto& v) { return v->partition == partition; });
}

void StateBoard::RemoveFollowerView(base::Partition partition) {
  std::lock_guard lock(mu_);
  std::erase_if(shards_, [partition](const auto& v) {
    return v->partition == partition && v->role != ShardRole::kActive;
  });
}

void StateBoard::SetAssignmentKnown(bool known) {
  std::lock_guard lock(mu_);
  assignment_known_ = known;
}

void StateBoard::SetTopicsUnavailable(std::string why) {
  std::lock_guard lock(mu_);
  topics_unavailable_ = std::move(why);
}

void StateBoard::SetStartWaitingFor(std::string why) {
  std::lock_guard lock(mu_);
  start_waiting_for_ = std::move(why);
}

void StateBoard::SetInstanceDegraded(std::vector<std::string> reasons) {
  std::lock_guard lock(mu_);
  instance_degraded_ = std::move(reasons);
}

void StateBoard::SetTransactionOpenSince(int64_t steady_ms) {
  std::lock_guard lock(mu_);
  transaction_open_since_ms_ = steady_ms;
}

void StateBoard::SetTransactionTimeout(int64_t ms) {
  std::lock_guard lock(mu_);
  transaction_timeout_ms_ = ms;
}

StateBoard::Snapshot StateBoard::Read() const {
  std::lock_guard lock(mu_);
  return Snapshot{shards_,
                  partitions_,
                  assignment_known_,
                  start_waiting_for_,
                  topics_unavailable_,
                  instance_degraded_,
                  transaction_open_since_ms_,
                  transaction_timeout_ms_};
}

std::string StateBoard::Snapshot::StuckTransaction(int64_t now_ms) const {
  if (transaction_open_since_ms < 0 || transaction_timeout_ms <= 0) return {};
  const int64_t open_ms = now_ms - transaction_open_since_ms;
  if (open_ms <= transaction_timeout_ms) return {};
  return "the instance's transaction has been open for " + std::to_string(open_ms / 1000) +
         " s, past kafka.transaction_timeout_ms (" + std::to_string(transaction_timeout_ms) +
         " ms): its commit is stuck (the transaction coordinator or a partition's leader "
         "cannot be reached?), and nothing the instance counts is committed meanwhile";
}

bool StateBoard::Snapshot::complete() const {
  if (partitions <= 0) return false;
  // Views are unique per partition, but one outside 0..partitions-1 (published
  // before the partition count was known or lowered) must not stand in for a
  // missing shard.
  int32_t running = 0;
  for (const auto& v : shards) {
    const bool counted = v->partition.value() >= 0 && v->partition.value() < partitions;
    running += counted && v->phase == ShardPhase::kRunning ? 1 : 0;
  }
  return running >= partitions;
}

bool StateBoard::Snapshot::ready() const {
  if (!assignment_known || !start_waiting_for.empty() || !topics_unavailable.empty()) {
    return false;
  }
  return std::all_of(shards.begin(), shards.end(), [](const auto& v) {
    return v->role != ShardRole::kActive || v->phase == ShardPhase::kRunning;
  });
}

}  // namespace oncecount::shard
