#include "processor/changelog/lineage_follower.h"

namespace oncecount::changelog {

LineageFollower::Step LineageFollower::Next(const Record& record) {
  if (const auto* batch = std::get_if<BatchRecord>(&record)) return OnBatch(*batch);
  if (const auto* claim = std::get_if<ClaimRecord>(&record)) return OnClaim(*claim);
  return Step::kSkip;  // snapshots matter only to a rebuild
}

LineageFollower::Step LineageFollower::OnBatch(const BatchRecord& batch) {
  const ClaimRule::Fit fit = claims_.Of(batch.epoch, batch.claim);
  // A zombie's, or written under a refused second claim of the epoch.
  if (fit == ClaimRule::Fit::kOlderEpoch || fit == ClaimRule::Fit::kOtherClaim) return Step::kSkip;
  if (batch.seq == Seq()) return Step::kSkip;
  if (batch.seq <= applied_) {
    // The same epoch: history the state holds. A newer one rewrote that history.
    return fit == ClaimRule::Fit::kNewerEpoch ? Step::kRebuild : Step::kSkip;
  }
  if (batch.seq != applied_.Next()) return Step::kRebuild;  // batches are missing
  if (fit == ClaimRule::Fit::kNewerEpoch) claims_.Adopt(batch.epoch, batch.claim);
  applied_ = batch.seq;
  return Step::kApply;
}

LineageFollower::Step LineageFollower::OnClaim(const ClaimRecord& claim) {
  // An older claim, the one that started the current epoch, or a refused second
  // claim of it: nothing new.
  if (!claims_.Claim(claim.epoch, claim.claim)) return Step::kSkip;
  return claim.base_seq == applied_ ? Step::kSkip : Step::kRebuild;
}

}  // namespace oncecount::changelog
