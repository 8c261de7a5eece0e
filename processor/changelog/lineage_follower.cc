#include "processor/changelog/lineage_follower.h"

namespace oncecount::changelog {

LineageFollower LineageFollower::Seeking(Epoch epoch, Seq seq, uint64_t claim) {
  LineageFollower f(Epoch(), Seq(), 0);
  f.seeking_ = true;
  f.sought_epoch_ = epoch;
  f.sought_seq_ = seq;
  f.sought_claim_ = claim;
  return f;
}

LineageFollower LineageFollower::Resuming(Epoch epoch, Seq seq, uint64_t claim) {
  LineageFollower f = Seeking(epoch, seq, claim);
  f.resuming_ = true;
  return f;
}

LineageFollower::Step LineageFollower::Resume(const Record& record) {
  resuming_ = false;
  const auto* chunk = std::get_if<SnapshotChunk>(&record);
  if (chunk == nullptr || chunk->epoch != sought_epoch_ || chunk->seq != sought_seq_ ||
      chunk->claim != sought_claim_ || chunk->index + 1 != chunk->count) {
    lost_ = true;
    return Step::kSkip;
  }
  claims_ = ClaimRule(sought_epoch_, sought_claim_, std::nullopt, chunk->group);
  applied_ = sought_seq_;
  seeking_ = false;
  return Step::kSkip;
}

// Before the sought batch: the claims and epochs as LineageBuilder tracks them.
LineageFollower::Step LineageFollower::Seek(const Record& record) {
  if (const auto* claim = std::get_if<ClaimRecord>(&record)) {
    claims_.Claim(*claim);
    return Step::kSkip;
  }
  if (const auto* chunk = std::get_if<SnapshotChunk>(&record)) return SeekChunk(*chunk);
  const auto* batch = std::get_if<BatchRecord>(&record);
  if (batch == nullptr || batch->seq == Seq()) return Step::kSkip;
  const ClaimRule::Fit fit = claims_.Of(batch->epoch, batch->claim);
  const bool sought =
      batch->epoch == sought_epoch_ && batch->seq == sought_seq_ && batch->claim == sought_claim_;
  if (sought && (fit == ClaimRule::Fit::kOlderEpoch || fit == ClaimRule::Fit::kOtherClaim)) {
    return Step::kRebuild;  // a zombie's batch, or one under a refused claim
  }
  if (fit == ClaimRule::Fit::kNewerEpoch) claims_.Adopt(batch->epoch, batch->claim);
  if (sought) {
    seeking_ = false;
    applied_ = sought_seq_;
  }
  return Step::kSkip;
}

// A complete snapshot of a newer epoch than any record seen stands for its own batch,
// deleted before it (lineage.h): its epoch holds from there on. A complete snapshot
// of the sought batch is the sought state itself: a snapshot its owner wrote without
// a batch (its changelog had lost the newest one), whose batch is in an earlier
// transaction, perhaps deleted.
LineageFollower::Step LineageFollower::SeekChunk(const SnapshotChunk& chunk) {
  if (chunk.index == 0) {
    seek_snapshot_ = {chunk.epoch, chunk.seq, chunk.claim, chunk.count, 0, chunk.group};
  }
  SeekSnapshot& s = seek_snapshot_;
  if (s.count == 0 || chunk.epoch != s.epoch || chunk.seq != s.seq || chunk.claim != s.claim ||
      chunk.count != s.count || chunk.index != s.next) {
    s.count = 0;  // its head was lost, or a chunk is missing: not usable
    return Step::kSkip;
  }
  if (++s.next < s.count) return Step::kSkip;
  s.count = 0;
  const ClaimRule::Fit fit = claims_.Of(s.epoch, s.claim);
  const bool sought = s.epoch == sought_epoch_ && s.seq == sought_seq_ && s.claim == sought_claim_;
  if (sought && (fit == ClaimRule::Fit::kOlderEpoch || fit == ClaimRule::Fit::kOtherClaim)) {
    return Step::kRebuild;  // a zombie's, or one under a refused claim
  }
  if (fit == ClaimRule::Fit::kNewerEpoch) claims_.Adopt(s.epoch, s.claim);
  claims_.NameGroup(s.epoch, s.claim, s.group);
  if (sought) {
    seeking_ = false;
    applied_ = sought_seq_;
  }
  return Step::kSkip;
}

LineageFollower::Step LineageFollower::Next(const Record& record) {
  if (lost_) return Step::kSkip;
  if (resuming_) return Resume(record);
  if (seeking_) return Seek(record);
  if (const auto* batch = std::get_if<BatchRecord>(&record)) return OnBatch(*batch);
  if (const auto* claim = std::get_if<ClaimRecord>(&record)) return OnClaim(*claim);
  // Snapshots matter only to a rebuild, and say whose the current claim is. One of a
  // newer epoch than any claim or batch seen means the records before it are gone (a
  // snapshot stands for its own batch, written before it): its claim, and the
  // batches the state lacks. Taking it as nothing new would claim that epoch again,
  // and every later reader would drop the new claim's work as a rival's.
  if (const auto* chunk = std::get_if<SnapshotChunk>(&record)) {
    if (claims_.Of(chunk->epoch, chunk->claim) == ClaimRule::Fit::kNewerEpoch) {
      return Step::kRebuild;
    }
    claims_.NameGroup(chunk->epoch, chunk->claim, chunk->group);
  }
  return Step::kSkip;
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
  if (!claims_.Claim(claim)) return Step::kSkip;
  return claim.base_seq == applied_ ? Step::kSkip : Step::kRebuild;
}

}  // namespace oncecount::changelog
