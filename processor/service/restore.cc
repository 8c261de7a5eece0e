#include "processor/service/restore.h"

#include <algorithm>

#include "processor/changelog/lineage_follower.h"

namespace oncecount::service {
namespace {

// Refuses a shard that another consumer group claimed last: two deployments would
// take each other's shards, neither fencing the other.
base::Status RefuseAnotherGroupsShard(base::Partition p, const std::string& claims_group,
                                      const ClaimDraw& draw) {
  if (draw.group.empty() || claims_group.empty() || claims_group == draw.group ||
      claims_group == draw.previous_group) {
    return {};
  }
  return base::Error(
      base::Errc::kBadConfig,
      "shard " + std::to_string(p.value()) +
          ": the changelog's newest claim is by consumer group \"" + claims_group +
          "\", not this instance's \"" + draw.group +
          "\": two deployments read one input topic and share its changelog; give each its "
          "own input topic, or name it in kafka.previous_group_id after renaming the group "
          "(docs/operations.md, \"One deployment per input topic\")",
      "kafka.group_id");
}

// Sets `claim` on the state with the key it carries: the shard's (from the state's
// snapshot or batches, or the claims read), else the claimer's fresh one. Refuses a
// state whose changelog disagrees on the key: which hashes its filter holds is not
// known, and claiming it under either key could count retries twice. The caller
// refused another group's shard first (RefuseAnotherGroupsShard).
base::Status ClaimWithShardKey(shard::ShardState& state, changelog::ClaimRecord& claim,
                               std::optional<uint64_t> claims_key, const ClaimDraw& draw) {
  claim.group = draw.group;
  if (claims_key) state.AdoptHashKey(filter::IdHashKey{*claims_key});
  if (const std::optional<filter::IdHashKey> other = state.hash_key_conflict()) {
    return base::Corrupt("shard " + std::to_string(claim.partition.value()) +
                         ": the changelog disagrees on the shard's id hash key (" +
                         std::to_string(state.hash_key()->value) + " and " +
                         std::to_string(other->value) + ")");
  }
  claim.hash_key = state.SetClaim(claim.epoch, claim.claim, draw.fresh_hash_key).value;
  return {};
}

}  // namespace

base::Result<RestoredShard> RestoreCold(base::Partition p, const std::vector<std::string>& records,
                                        const filter::DedupSpec& dedup, ClaimDraw draw,
                                        std::optional<OwnCommit> own_committed) {
  changelog::LineageBuilder lineage;
  for (const std::string& r : records) lineage.Add(std::string_view(r));
  return RestoreCold(p, std::move(lineage), dedup, draw, own_committed);
}

base::Result<RestoredShard> RestoreCold(base::Partition p, changelog::LineageBuilder lineage,
                                        const filter::DedupSpec& dedup, ClaimDraw draw,
                                        std::optional<OwnCommit> own_committed) {
  base::Seq base = lineage.last_seq();
  if (own_committed && lineage.epoch() == own_committed->epoch) base = own_committed->seq;
  // Asked before this claim joins the lineage, whose key it would then report.
  const std::optional<uint64_t> shard_key_seen = lineage.hash_key();
  // Before the state is built: a deployment refused every shard would otherwise
  // rebuild each one at every retry.
  if (base::Status s = RefuseAnotherGroupsShard(p, lineage.group(), draw); !s) return s.error();
  changelog::ClaimRecord claim{p, lineage.epoch().Next(), base, draw.id};
  lineage.Add(changelog::Record{claim});
  auto plan = std::move(lineage).Finish();
  if (!plan) return plan.error();
  SnapshotCycleKept kept;
  kept.snapshot_bytes = plan->snapshot ? plan->snapshot->size() : 0;
  auto state = plan->snapshot ? shard::ShardState::FromSnapshot(std::move(*plan->snapshot),
                                                                filter::DecodeLimitsFor(dedup))
                              : shard::ShardState::Create(p, dedup, filter::Millis{0});
  if (!state) return state.error();
  for (const changelog::BatchRecord& b : plan->batches) {
    state.value()->Replay(b);
    kept.batch_bytes += changelog::BatchRecordBytes(b);
  }
  if (base::Status s = ClaimWithShardKey(*state.value(), claim, shard_key_seen, draw); !s) {
    return s.error();
  }
  std::string summary =
      "restored " + std::to_string(plan->batches.size()) + " batches" +
      (plan->snapshot ? " after snapshot " + std::to_string(plan->snapshot_seq.value()) : "") +
      ", epoch " + std::to_string(claim.epoch.value()) + ", input offset " +
      std::to_string(state.value()->position().value());
  if (plan->unreadable_records > 0) {
    summary += "; " + changelog::UnreadableRecordsWarning(plan->unreadable_records);
  }
  return RestoredShard{std::move(state).value(), claim, std::move(summary), std::nullopt, kept,
                       plan->unreadable_records};
}

base::Result<RestoredShard> CatchUp(base::Partition p, replica::Handoff h,
                                    const std::vector<std::string>& tail, ClaimDraw draw,
                                    std::string_view source) {
  size_t applied = 0;
  uint64_t unreadable = h.unreadable_records;  // the replica's build skipped these
  for (const std::string& bytes : tail) {
    auto record = changelog::DecodeRecord(bytes);
    if (!record) {
      // Skipping a newer release's record would claim an epoch it may have used.
      if (changelog::NewerFormatOf(bytes)) {
        return base::Corrupt("a newer release wrote to the changelog after the state");
      }
      ++unreadable;
      continue;
    }
    const auto step = h.follower.Next(record.value());
    if (step == changelog::LineageFollower::Step::kApply) {
      h.state->Replay(std::get<changelog::BatchRecord>(record.value()));
      h.cycle.OnBatch(std::get<changelog::BatchRecord>(record.value()));
      ++applied;
    } else if (const auto* chunk = std::get_if<changelog::SnapshotChunk>(&record.value());
               step == changelog::LineageFollower::Step::kSkip && chunk != nullptr &&
               h.follower.IsCurrentClaim(chunk->epoch, chunk->claim)) {
      h.cycle.OnChunk(*chunk);
    } else if (step == changelog::LineageFollower::Step::kRebuild) {
      return base::Corrupt(
          "the changelog's tail went another way (a newer claim cut back batches the state "
          "holds, or batches are missing)");
    }
  }
  auto claimed = ClaimFollowed(p, std::move(h.state), h.follower, applied, draw, source);
  if (!claimed) return claimed;
  NoteUnreadableRecords(claimed.value(), unreadable);
  // The cycle its changelog holds goes on (a failover's shards would otherwise all
  // snapshot in their first transaction).
  claimed.value().kept = SnapshotCycleKept{h.cycle.snapshot_bytes(), h.cycle.batch_bytes()};
  return claimed;
}

void NoteUnreadableRecords(RestoredShard& restored, uint64_t unreadable) {
  if (unreadable == 0) return;
  restored.unreadable_records += unreadable;
  restored.summary += "; " + changelog::UnreadableRecordsWarning(unreadable);
}

base::Result<RestoredShard> ClaimFollowed(base::Partition p,
                                          std::unique_ptr<shard::ShardState> state,
                                          const changelog::LineageFollower& follower,
                                          size_t applied, ClaimDraw draw, std::string_view source) {
  if (base::Status s = RefuseAnotherGroupsShard(p, follower.group(), draw); !s) return s.error();
  changelog::ClaimRecord claim{p, follower.epoch().Next(), follower.applied_seq(), draw.id};
  if (base::Status s = ClaimWithShardKey(*state, claim, follower.hash_key(), draw); !s) {
    return s.error();
  }
  std::string summary = "taken over from " + std::string(source) + " at batch " +
                        std::to_string(claim.base_seq.value()) + " (" + std::to_string(applied) +
                        " batches from the changelog's tail), epoch " +
                        std::to_string(claim.epoch.value()) + ", input offset " +
                        std::to_string(state->position().value());
  return RestoredShard{std::move(state), claim, std::move(summary)};
}

}  // namespace oncecount::service
