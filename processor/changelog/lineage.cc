#include "processor/changelog/lineage.h"

#include <algorithm>
#include <iterator>

namespace oncecount::changelog {

std::string UnreadableRecordsWarning(uint64_t unreadable_records) {
  return std::to_string(unreadable_records) +
         " changelog record(s) could not be read (a bad checksum or truncated bytes) and were "
         "skipped: the state is the newest the readable records hold, and the input after it "
         "is counted again";
}

void LineageBuilder::Add(std::string_view encoded) {
  base::Result<Record> decoded = DecodeRecord(encoded);
  if (!decoded) {
    ++ignored_;
    ++unreadable_;
    if (!newer_format_) newer_format_ = NewerFormatOf(encoded);
    return;
  }
  Add(std::move(decoded.value()));
}

void LineageBuilder::Add(Record record) {
  std::visit(
      [this](auto&& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, BatchRecord>) {
          OnBatch(std::move(r));
        } else if constexpr (std::is_same_v<T, ClaimRecord>) {
          OnClaim(r);
        } else {
          OnChunk(std::move(r));
        }
      },
      std::move(record));
  if (keep_ == Keep::kFromNewestSnapshot && !needs_full_read_) LetGoBeforeNewestSnapshot();
}

// Keeps the newest complete, usable snapshot of a batch already in the lineage and
// what comes after it; drops older snapshots and the batches it covers.
void LineageBuilder::LetGoBeforeNewestSnapshot() {
  const Seq last = last_seq();
  auto newest = std::find_if(snapshots_.rbegin(), snapshots_.rend(), [last](const Snapshot& s) {
    return s.usable && s.complete() && s.seq <= last;
  });
  if (newest == snapshots_.rend()) return;
  kept_snapshot_seq_ = newest->seq;
  kept_snapshot_epoch_ = newest->epoch;
  snapshots_.erase(snapshots_.begin(), std::prev(newest.base()));
  chain_.erase(chain_.begin(), chain_.upper_bound(kept_snapshot_seq_));
}

// Drops batches with seq > `seq` and marks snapshots after `seq` unusable, where
// they belong to an epoch older than `older_than_epoch`.
void LineageBuilder::DropAfter(Seq seq, Epoch older_than_epoch) {
  // Cutting back before the kept snapshot needs what was let go of.
  if (CutsBackBeforeKeptSnapshot(seq, older_than_epoch)) needs_full_read_ = true;
  // Before a snapshot that stood for its deleted batch: what it stood for is gone
  // (Finish then names the first batch it lacks).
  if (seq < head_snapshot_seq_ && head_snapshot_epoch_ < older_than_epoch) {
    head_snapshot_seq_ = Seq();
  }
  for (auto it = chain_.upper_bound(seq); it != chain_.end();) {
    if (it->second.epoch < older_than_epoch) {
      it = chain_.erase(it);
      ++ignored_;
    } else {
      ++it;
    }
  }
  for (Snapshot& s : snapshots_) {
    if (s.seq > seq && s.epoch < older_than_epoch) s.usable = false;
  }
}

void LineageBuilder::OnBatch(BatchRecord batch) {
  const ClaimRule::Fit fit = claims_.Of(batch.epoch, batch.claim);
  if (fit == ClaimRule::Fit::kOlderEpoch || fit == ClaimRule::Fit::kOtherClaim ||
      batch.seq == Seq()) {
    ++ignored_;
    return;
  }
  if (fit == ClaimRule::Fit::kNewerEpoch) claims_.Adopt(batch.epoch, batch.claim);
  DropAfter(batch.seq.Previous(), batch.epoch);
  const Seq seq = batch.seq;
  chain_.insert_or_assign(seq, std::move(batch));
}

void LineageBuilder::OnClaim(const ClaimRecord& claim) {
  if (!claims_.Claim(claim)) {
    ++ignored_;
    return;
  }
  claimed_base_ = claim.base_seq;
  DropAfter(claim.base_seq, claim.epoch);
}

void LineageBuilder::OnChunk(SnapshotChunk chunk) {
  const ClaimRule::Fit fit = claims_.Of(chunk.epoch, chunk.claim);
  if (fit == ClaimRule::Fit::kOlderEpoch || fit == ClaimRule::Fit::kOtherClaim) {
    ++ignored_;
    return;
  }
  if (chunk.index == 0) {
    snapshots_.push_back(
        {chunk.epoch, chunk.seq, chunk.claim, chunk.count, std::move(chunk.group), {}, 0, true});
  }
  if (snapshots_.empty()) {
    ++ignored_;  // the head of this snapshot was lost
    return;
  }
  Snapshot& s = snapshots_.back();
  if (s.epoch != chunk.epoch || s.seq != chunk.seq || s.count != chunk.count) {
    // Another snapshot's, whose head was lost (damaged, say): it says nothing of the
    // snapshot before it, which stays as usable as it was.
    ++ignored_;
    return;
  }
  if (s.received != chunk.index) {  // a chunk of it is missing
    ++ignored_;
    s.usable = false;
    std::string().swap(s.bytes);
    return;
  }
  if (s.bytes.empty()) {
    s.bytes = std::move(chunk.bytes);
  } else {
    s.bytes += chunk.bytes;
  }
  ++s.received;
  if (fit == ClaimRule::Fit::kNewerEpoch && s.usable && s.complete()) {
    // Its batch, written before it (in the same transaction, or an earlier one), was deleted.
    claims_.Adopt(s.epoch, s.claim);
    DropAfter(s.seq, s.epoch);
    head_snapshot_seq_ = s.seq;
    head_snapshot_epoch_ = s.epoch;
  }
  if (s.usable && s.complete()) claims_.NameGroup(s.epoch, s.claim, s.group);
}

Seq LineageBuilder::last_seq() const {
  // The batches up to a kept snapshot were let go of, and were in the lineage.
  return std::max({claimed_base_, kept_snapshot_seq_, head_snapshot_seq_,
                   chain_.empty() ? Seq() : chain_.rbegin()->first});
}

base::Status LineageBuilder::CheckStart(base::Offset log_start) const {
  if (log_start <= base::Offset(0) || claims_.epoch() != Epoch()) return {};
  return base::Corrupt(
      "the changelog partition's records before offset " + std::to_string(log_start.value()) +
      " were deleted (time or size retention, DeleteRecords) and none of the records "
      "after them claims the shard or holds one of its batches: its committed state is "
      "gone, and restoring would reset its counters to zero (docs/operations.md, "
      "\"A shard's changelog lost its state\")");
}

base::Result<RestorePlan> LineageBuilder::Finish() && {
  // Its records may hold the lineage's newest claims and batches: skipped, a restore
  // would go on from an older state and claim an epoch the newer release used.
  if (newer_format_) return base::Corrupt(NewerFormatError(*newer_format_));
  if (needs_full_read_) {
    return base::Corrupt("the changelog's lineage was cut back to before snapshot " +
                         std::to_string(kept_snapshot_seq_.value()) +
                         " after the records before it were let go of: read it again, keeping "
                         "everything");
  }
  RestorePlan plan;
  plan.epoch = claims_.epoch();
  plan.claim = claims_.claim();
  plan.hash_key = claims_.hash_key();
  plan.group = claims_.group();
  plan.ignored_records = ignored_;
  plan.unreadable_records = unreadable_;
  plan.last_seq = last_seq();
  for (auto it = snapshots_.rbegin(); it != snapshots_.rend(); ++it) {
    if (!it->usable || !it->complete() || it->seq > plan.last_seq) continue;
    plan.snapshot = std::move(it->bytes);
    plan.snapshot_seq = it->seq;
    break;
  }
  for (Seq seq = plan.snapshot_seq.Next(); seq <= plan.last_seq; seq = seq.Next()) {
    auto it = chain_.find(seq);
    if (it == chain_.end()) {
      return base::Corrupt("the changelog lacks batch " + std::to_string(seq.value()) + " of " +
                           std::to_string(plan.last_seq.value()) + " after snapshot " +
                           std::to_string(plan.snapshot_seq.value()) +
                           " (records lost, e.g. to retention): the shard cannot be restored "
                           "exactly");
    }
    plan.batches.push_back(std::move(it->second));
  }
  return plan;
}

}  // namespace oncecount::changelog
