#include "processor/changelog/lineage_follower.h"

#include <algorithm>

namespace oncecount::changelog {

LineageFollower::Step LineageFollower::Next(const Record& record) {
  if (const auto* batch = std::get_if<BatchRecord>(&record)) return OnBatch(*batch);
  if (const auto* claim = std::get_if<ClaimRecord>(&record)) return OnClaim(*claim);
  return Step::kSkip;  // snapshots matter only to a rebuild
}

LineageFollower::Step LineageFollower::OnBatch(const BatchRecord& batch) {
  if (batch.epoch < epoch_ || batch.seq == 0) return Step::kSkip;  // a zombie's
  if (batch.seq <= applied_) {
    // The same epoch: history the state holds. A newer one rewrote that history.
    return batch.epoch > epoch_ ? Step::kRebuild : Step::kSkip;
  }
  if (batch.seq != applied_ + 1) return Step::kRebuild;  // batches are missing
  epoch_ = std::max(epoch_, batch.epoch);
  applied_ = batch.seq;
  return Step::kApply;
}

LineageFollower::Step LineageFollower::OnClaim(const ClaimRecord& claim) {
  // An older claim, or the one that started the current epoch: nothing new.
  if (claim.epoch <= epoch_) return Step::kSkip;
  epoch_ = claim.epoch;
  return claim.base_seq == applied_ ? Step::kSkip : Step::kRebuild;
}

}  // namespace oncecount::changelog
