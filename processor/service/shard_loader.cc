#include "processor/service/shard_loader.h"

#include <algorithm>
#include <new>

#include "processor/kafka/partition_reader.h"
#include "processor/replica/replicator.h"

namespace oncecount::service {

LoadResult ShardLoader::Load(const std::vector<base::Partition>& partitions,
                             const std::map<base::Partition, OwnCommit>& own) {
  LoadResult out;
  out.restored = TakeOver(partitions, out);
  const auto left = [&out](const std::vector<base::Partition>& of) {
    std::vector<base::Partition> rest;
    for (base::Partition p : of) {
      if (!out.held_back.contains(p) && !out.failed.contains(p) &&
          std::none_of(out.restored.begin(), out.restored.end(),
                       [p](const RestoredShard& r) { return r.claim.partition == p; })) {
        rest.push_back(p);
      }
    }
    return rest;
  };
  // After its own abort, an owner continues from its last commit (restore.h), which
  // only a cold restore knows how to do on a cluster that shows aborted records.
  std::vector<base::Partition> fresh;
  for (base::Partition p : left(partitions)) {
    if (!own.contains(p)) fresh.push_back(p);
  }
  for (RestoredShard& r : FromCheckpoints(fresh, out)) out.restored.push_back(std::move(r));
  RestoreCold(left(partitions), own, out);
  return out;
}

void ShardLoader::PassOver(base::Partition p, CheckpointFallback why, const std::string& detail) {
  Log("shard " + std::to_string(p.value()) + ": its local checkpoint is passed over (" +
      CheckpointFallbackName(why) + ": " + detail + "); restoring from the changelog");
  if (o_.on_checkpoint_fallback) o_.on_checkpoint_fallback(why);
}

// The checkpoints of `partitions` worth checking against the changelog, each with its
// snapshot decoded and where the check reads from: where the restore that wrote its
// claim had read to, when the changelog still keeps it, else the log start.
std::map<base::Partition, ShardLoader::CheckpointRead> ShardLoader::UsableCheckpoints(
    const std::vector<base::Partition>& partitions) {
  std::map<base::Partition, CheckpointRead> usable;
  if (o_.checkpoint_dir.empty()) return usable;
  for (base::Partition p : partitions) {
    auto read = ReadCheckpoint(o_.checkpoint_dir, o_.changelog_topic, p);
    if (!read) {
      PassOver(p, CheckpointFallback::kUnreadable, read.message());
      continue;
    }
    if (!read.value()) continue;
    LocalCheckpoint& checkpoint = *read.value();
    auto start = o_.clients->LogStart(o_.changelog_topic, p, o_.wait);
    if (!start) {
      PassOver(p, CheckpointFallback::kReadFailed,
               "cannot read the changelog's start: " + start.message());
      continue;
    }
    // Its owner knew nothing but its own records came between its claim and its
    // snapshot (owned_run.h): the read starts at the snapshot's last chunk.
    const std::optional<base::Offset> resume_at = checkpoint.snapshot_end;
    const base::Offset needed = resume_at.value_or(checkpoint.changelog_offset);
    if (start.value() > needed) {
      PassOver(p, CheckpointFallback::kBeforeLogStart,
               "written at changelog offset " + std::to_string(needed.value()) +
                   ", and the changelog keeps records from offset " +
                   std::to_string(start.value().value()) + " on");
      continue;
    }
    const std::optional<SnapshotCycleKept> snapshot_kept =
        start.value() <= checkpoint.changelog_offset
            ? std::optional(SnapshotCycleKept{checkpoint.snapshot.size(), 0})
            : std::nullopt;
    auto state = shard::ShardState::FromSnapshot(std::move(checkpoint.snapshot),
                                                 filter::DecodeLimitsFor(o_.dedup));
    if (!state) {
      PassOver(p, CheckpointFallback::kUnreadable, "its snapshot: " + state.message());
      continue;
    }
    if (resume_at) {
      usable.emplace(p, CheckpointRead{std::move(state).value(),
                                       changelog::LineageFollower::Resuming(
                                           checkpoint.epoch, checkpoint.seq, checkpoint.claim),
                                       *resume_at, 0, std::nullopt, snapshot_kept, true});
      continue;
    }
    const base::Offset from = checkpoint.check_from && *checkpoint.check_from >= start.value()
                                  ? *checkpoint.check_from
                                  : start.value();
    usable.emplace(p, CheckpointRead{std::move(state).value(),
                                     changelog::LineageFollower::Seeking(
                                         checkpoint.epoch, checkpoint.seq, checkpoint.claim),
                                     from, 0, std::nullopt, snapshot_kept});
  }
  return usable;
}

// Shards from their local checkpoints: each checkpoint's batch looked for on the
// changelog's lineage from where its claimer's read ended (or, when its owner knew
// its records were alone there, only its snapshot's last chunk looked for), then the
// state brought up to the high watermark by the batches after it; streamed, so that
// nothing but the states is held.
std::vector<RestoredShard> ShardLoader::FromCheckpoints(
    const std::vector<base::Partition>& partitions, LoadResult& out_result) {
  std::vector<RestoredShard> out;
  std::map<base::Partition, CheckpointRead> checkpoints = UsableCheckpoints(partitions);
  if (checkpoints.empty()) return out;
  std::vector<base::Partition> taken;
  std::map<base::Partition, base::Offset> from;
  for (const auto& [p, c] : checkpoints) {
    taken.push_back(p);
    from[p] = c.from;
  }
  auto read = kafka::StreamPartitions(
      *o_.clients, *o_.clock, o_.changelog_topic, taken, o_.wait,
      [&checkpoints](base::Partition p, std::string_view value) {
        CheckpointRead& c = checkpoints.at(p);
        if (c.off_lineage) return;
        auto record = changelog::DecodeRecord(value);
        if (!record) {
          // A newer release's record may hold a claim this state would clash with:
          // the cold restore refuses it, naming both formats. A damaged one is skipped
          // and counted, as a cold restore does.
          if (changelog::NewerFormatOf(value)) {
            c.off_lineage = CheckpointFallback::kNewerFormat;
          } else {
            ++c.unreadable;
          }
          return;
        }
        const bool was_seeking = c.follower.seeking();
        switch (c.follower.Next(record.value())) {
          case changelog::LineageFollower::Step::kApply:
            try {
              c.state->Replay(std::get<changelog::BatchRecord>(record.value()));
            } catch (const std::bad_alloc&) {
              c.off_lineage = CheckpointFallback::kUnreadable;  // a cold restore says why
              return;
            }
            ++c.applied;
            if (c.kept) c.kept->batch_bytes += value.size();
            break;
          case changelog::LineageFollower::Step::kRebuild:
            c.off_lineage =
                was_seeking ? CheckpointFallback::kNotOnLineage : CheckpointFallback::kDiverged;
            break;
          case changelog::LineageFollower::Step::kSkip:
            break;
        }
      },
      from);
  if (!read && read.error().code() == base::Errc::kUnavailable) {
    // The checkpoints stay on disk for the next attempt.
    FileFailedRead(taken, read.error(), out_result);
    return out;
  }
  for (auto& [p, c] : checkpoints) {
    if (!read) {
      PassOver(p, CheckpointFallback::kReadFailed, "reading the changelog: " + read.message());
    } else if (c.off_lineage == CheckpointFallback::kNotOnLineage) {
      PassOver(p, *c.off_lineage,
               "its batch is in the changelog, but a newer or rival claim superseded it (a "
               "zombie's)");
    } else if (c.off_lineage == CheckpointFallback::kUnreadable) {
      PassOver(p, *c.off_lineage, "out of memory applying the changelog's tail to it");
    } else if (c.off_lineage == CheckpointFallback::kNewerFormat) {
      PassOver(p, *c.off_lineage, "a newer release wrote to the changelog after it");
    } else if (c.off_lineage) {
      PassOver(p, *c.off_lineage, "the changelog went another way after its batch");
    } else if (c.follower.seeking()) {
      PassOver(p, CheckpointFallback::kNotInChangelog,
               "the changelog does not hold its batch (written against another changelog, "
               "or another incarnation of the topic)");
    } else {
      auto claimed =
          ClaimFollowed(p, std::move(c.state), c.follower, c.applied, o_.new_claim(),
                        c.from_snapshot_end ? "its local checkpoint (read from its snapshot's end)"
                                            : "its local checkpoint");
      if (!claimed && RefusedForGood(claimed.error(), p, out_result)) continue;
      if (!claimed) {
        PassOver(p, CheckpointFallback::kDiverged, claimed.message());
        continue;
      }
      out.push_back(std::move(claimed).value());
      out.back().read_to = read.value().at(p);
      out.back().kept = c.kept;
      NoteUnreadableRecords(out.back(), c.unreadable);
    }
  }
  return out;
}

// Hot replicas brought up to the changelog's high watermark; the others restore cold.
std::vector<RestoredShard> ShardLoader::TakeOver(const std::vector<base::Partition>& partitions,
                                                 LoadResult& out_result) {
  std::vector<RestoredShard> out;
  if (o_.replicator == nullptr) return out;
  std::map<base::Partition, replica::Handoff> handoffs = o_.replicator->Take(partitions);
  if (handoffs.empty()) return out;
  std::vector<base::Partition> taken;
  std::map<base::Partition, base::Offset> from;
  for (const auto& [p, h] : handoffs) {
    taken.push_back(p);
    from[p] = h.next_offset;
  }
  // The tails are held whole (a replica far behind has a long one): a machine that
  // cannot hold them restores cold, which streams.
  std::optional<base::Result<kafka::ReadResult>> tails;
  try {
    tails = kafka::ReadPartitions(*o_.clients, *o_.clock, o_.changelog_topic, taken, o_.wait, from);
  } catch (const std::bad_alloc&) {
    Log("out of memory reading the changelog after the replicas; restoring from scratch");
    return out;
  }
  base::Result<kafka::ReadResult>& read = *tails;
  if (!read && read.error().code() == base::Errc::kUnavailable) {
    // The replicas' states are handed over already: the next attempt restores cold.
    FileFailedRead(taken, read.error(), out_result);
    return out;
  }
  if (!read) {
    Log("cannot read the changelog after the replicas (" + read.message() +
        "); restoring from scratch");
    return out;
  }
  for (auto& [p, h] : handoffs) {
    std::optional<base::Result<RestoredShard>> r;
    try {
      r = CatchUp(p, std::move(h), read.value()[p].records, o_.new_claim(), "its standby replica");
    } catch (const std::bad_alloc&) {
      Log("shard " + std::to_string(p.value()) +
          ": out of memory bringing its replica up to date; restoring from scratch");
      continue;
    }
    if (!*r && RefusedForGood(r->error(), p, out_result)) continue;
    if (!*r) {
      Log("shard " + std::to_string(p.value()) + ": its replica cannot follow the changelog (" +
          r->message() + "); restoring from scratch");
      continue;
    }
    r->value().read_to = read.value()[p].next_offset;
    out.push_back(std::move(*r).value());
  }
  return out;
}

namespace {

// A cold restore whose state the machine cannot hold fails that shard, not the instance.
base::Result<RestoredShard> RestoreColdWithinMemory(base::Partition p,
                                                    changelog::LineageBuilder lineage,
                                                    const filter::DedupSpec& dedup, ClaimDraw draw,
                                                    std::optional<OwnCommit> own_committed) {
  try {
    return service::RestoreCold(p, std::move(lineage), dedup, draw, own_committed);
  } catch (const std::bad_alloc&) {
    return base::Error(base::Errc::kResourceExhausted, "out of memory rebuilding its state");
  }
}

}  // namespace

// Streams each partition into its lineage, which keeps only its newest snapshot and
// the batches after it; a partition whose lineage turns out to need more is read
// once more, keeping everything.
void ShardLoader::RestoreCold(const std::vector<base::Partition>& partitions,
                              const std::map<base::Partition, OwnCommit>& own, LoadResult& out) {
  if (partitions.empty()) return;
  std::map<base::Partition, changelog::LineageBuilder> lineages;
  std::map<base::Partition, base::Offset> read_to;
  if (!Stream(partitions, changelog::LineageBuilder::Keep::kFromNewestSnapshot, lineages, read_to,
              out)) {
    return;
  }
  std::vector<base::Partition> again;
  for (const auto& [p, lineage] : lineages) {
    // After its own aborted attempt, a restorer's claim continues from its last
    // commit (service::RestoreCold) and cuts back a snapshot of the attempt that a
    // reader could see (the embedded cluster shows aborted records): had the stream let
    // go of what came before that snapshot, every retry would fail the same way.
    const auto mine = own.find(p);
    const bool own_claim_cuts_back = mine != own.end() && lineage.epoch() == mine->second.epoch &&
                                     lineage.ClaimWouldNeedFullRead(mine->second.seq);
    if (lineage.needs_full_read() || own_claim_cuts_back) again.push_back(p);
  }
  if (!again.empty()) {
    o_.log.Info("reading the changelog again, keeping every record, for " +
                std::to_string(again.size()) + " shard(s) whose lineage was cut back");
    if (!Stream(again, changelog::LineageBuilder::Keep::kEverything, lineages, read_to, out)) {
      // The shards read once already wait for the next attempt with the others.
      const bool held = out.held_back.contains(again.front());
      const std::string why = held ? out.held_back.at(again.front()) : out.failed.at(again.front());
      for (const auto& [p, lineage] : lineages) (held ? out.held_back : out.failed)[p] = why;
      return;
    }
  }
  for (auto& [p, lineage] : lineages) {
    // Asked after the read: records deleted while it ran are deleted all the same.
    auto start = o_.clients->LogStart(o_.changelog_topic, p, o_.wait);
    if (!start) {
      out.failed[p] = "cannot tell where the changelog partition begins: " + start.message();
      continue;
    }
    if (base::Status s = lineage.CheckStart(start.value()); !s) {
      out.failed[p] = s.message();
      continue;
    }
    const auto mine = own.find(p);
    auto r =
        RestoreColdWithinMemory(p, std::move(lineage), o_.dedup, o_.new_claim(),
                                mine != own.end() ? std::optional(mine->second) : std::nullopt);
    if (!r) {
      out.failed[p] = r.message();
      continue;
    }
    r.value().read_to = read_to.at(p);
    out.restored.push_back(std::move(r.value()));
  }
}

bool ShardLoader::Stream(const std::vector<base::Partition>& partitions,
                         changelog::LineageBuilder::Keep keep,
                         std::map<base::Partition, changelog::LineageBuilder>& lineages,
                         std::map<base::Partition, base::Offset>& read_to, LoadResult& out) {
  for (base::Partition p : partitions)
    lineages.insert_or_assign(p, changelog::LineageBuilder(keep));
  kafka::ProgressSink progress;
  if (o_.progress != nullptr) {
    progress = [this](base::Partition p, base::Offset reached, base::Offset target) {
      o_.progress->Report(p, reached, target);
    };
  }
  auto read = kafka::StreamPartitions(
      *o_.clients, *o_.clock, o_.changelog_topic, partitions, o_.wait,
      [&lineages](base::Partition p, std::string_view value) { lineages.at(p).Add(value); }, {},
      progress);
  if (o_.progress != nullptr) {
    for (base::Partition p : partitions) o_.progress->End(p);
  }
  if (read) {
    for (const auto& [p, next] : read.value()) read_to[p] = next;
    return true;
  }
  for (base::Partition p : partitions) lineages.erase(p);
  FileFailedRead(partitions, read.error(), out);
  return false;
}

bool ShardLoader::RefusedForGood(const base::Error& error, base::Partition p, LoadResult& out) {
  if (error.code() != base::Errc::kBadConfig) return false;
  out.failed[p] = error.message();
  return true;
}

void ShardLoader::FileFailedRead(const std::vector<base::Partition>& partitions,
                                 const base::Error& error, LoadResult& out) {
  auto& filed = error.code() == base::Errc::kUnavailable ? out.held_back : out.failed;
  for (base::Partition p : partitions) filed[p] = error.message();
}

}  // namespace oncecount::service
