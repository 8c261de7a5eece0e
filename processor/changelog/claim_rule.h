// ClaimRule: which claim of a changelog partition the records that follow belong to
// — the part of the lineage rule (lineage.h) that LineageBuilder and
// LineageFollower share, so that a restore and a replica never disagree on it.
//
// Epochs only grow: a record of an older epoch than the newest seen is a zombie's.
// Within one epoch only the first claim counts: a second claim of the same epoch
// (which a claimer that read the changelog to its high watermark cannot write, but
// which a reader must still handle the same way everywhere) is refused, and so is
// every batch and snapshot written under its id. Records of format 2 carry no claim
// id (0) and belong to whichever claim holds their epoch.
//
// Thread-safety: a plain value, owned by one builder or follower.
#pragma once

#include <cstdint>

#include "processor/base/ids.h"

namespace oncecount::changelog {

using base::Epoch;

class ClaimRule {
 public:
  // Starts at the newest epoch seen and the id of the claim that holds it.
  explicit ClaimRule(Epoch epoch = Epoch(), uint64_t claim = 0) : epoch_(epoch), claim_(claim) {}

  enum class Fit : uint8_t {
    kOlderEpoch,  // a zombie's record
    kOtherClaim,  // the current epoch, under a claim the lineage refused
    kCurrent,     // the current epoch and claim
    kNewerEpoch,  // a newer epoch (its claim was not seen): Adopt it to go on
  };
  // Where a batch or snapshot chunk of `epoch` written under `claim` stands.
  Fit Of(Epoch epoch, uint64_t claim) const {
    if (epoch < epoch_) return Fit::kOlderEpoch;
    if (epoch > epoch_) return Fit::kNewerEpoch;
    const bool both_known = claim != 0 && claim_ != 0;
    return both_known && claim != claim_ ? Fit::kOtherClaim : Fit::kCurrent;
  }

  // A claim record: true when it opens a newer epoch, which it now holds; false for
  // a claim of an older epoch or a second claim of the current one (refused).
  bool Claim(Epoch epoch, uint64_t claim) {
    if (epoch_ != Epoch() && epoch <= epoch_) return false;
    epoch_ = epoch;
    claim_ = claim;
    return true;
  }

  // A batch or chunk of a newer epoch whose claim was not seen holds that epoch now.
  void Adopt(Epoch epoch, uint64_t claim) {
    epoch_ = epoch;
    claim_ = claim;
  }

  Epoch epoch() const { return epoch_; }
  uint64_t claim() const { return claim_; }

 private:
  Epoch epoch_;
  uint64_t claim_;
};

}  // namespace oncecount::changelog
