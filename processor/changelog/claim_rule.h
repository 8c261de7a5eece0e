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
// It also keeps what the claim that counts says of the shard: its id hash key
// (every claim of a shard carries the same, so a newer epoch adopted without its
// claim keeps it) and its consumer group (a newer epoch adopted without its claim
// has none until one of its complete snapshots names it, since retention may have
// removed the claim, the only other record that does).
//
// Thread-safety: a plain value, owned by one builder or follower.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "processor/base/ids.h"
#include "processor/changelog/changelog_record.h"

namespace oncecount::changelog {

using base::Epoch;

class ClaimRule {
 public:
  // Starts at the newest epoch seen, the id of the claim that holds it, and what
  // that claim said (a restore's RestorePlan).
  explicit ClaimRule(Epoch epoch = Epoch(), uint64_t claim = 0,
                     std::optional<uint64_t> hash_key = std::nullopt, std::string group = {})
      : epoch_(epoch), claim_(claim), hash_key_(hash_key), group_(std::move(group)) {}

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
  bool Claim(const ClaimRecord& record) {
    if (epoch_ != Epoch() && record.epoch <= epoch_) return false;
    epoch_ = record.epoch;
    claim_ = record.claim;
    hash_key_ = record.hash_key;
    group_ = record.group;
    return true;
  }

  // A batch or chunk of a newer epoch whose claim was not seen holds that epoch now.
  void Adopt(Epoch epoch, uint64_t claim) {
    epoch_ = epoch;
    claim_ = claim;
    group_.clear();
  }

  // A snapshot written under `claim` of `epoch` names its claim's group: taken when
  // that is the current claim.
  void NameGroup(Epoch epoch, uint64_t claim, const std::string& group) {
    if (!group.empty() && Of(epoch, claim) == Fit::kCurrent) group_ = group;
  }

  Epoch epoch() const { return epoch_; }
  uint64_t claim() const { return claim_; }
  // The id hash key of the newest claim that counted; nullopt: none seen.
  std::optional<uint64_t> hash_key() const { return hash_key_; }
  // The current epoch's consumer group; empty: none names it (records before format
  // 6, or only batches of the epoch).
  const std::string& group() const { return group_; }

 private:
  Epoch epoch_;
  uint64_t claim_;
  std::optional<uint64_t> hash_key_;
  std::string group_;
};

}  // namespace oncecount::changelog
