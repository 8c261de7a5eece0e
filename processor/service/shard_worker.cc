#include "processor/service/shard_worker.h"

#include <new>
#include <utility>

#include "processor/changelog/changelog_record.h"

namespace oncecount::service {
namespace {

// How often a shard's view recomputes the filter's summary and digest (a pass over
// every filter bit) while the shard is busy.
constexpr int64_t kFilterDetailEveryMs = 1000;

}  // namespace

ShardWorker::ShardWorker(WorkerOptions options)
    : o_(std::move(options)), mailbox_(o_.mailbox_capacity) {}

void ShardWorker::Run() {
  Command command;
  while (mailbox_.Pop(command)) {
    std::visit([this](auto& c) { Execute(c); }, command);
    command = CommittedCommand{};  // free what it held (input messages) now, not at the next Pop
  }
}

void ShardWorker::Close() {
  mailbox_.Close();
}

void ShardWorker::Post(Command command) {
  // A closed mailbox drops the command; its messages are destroyed with it.
  mailbox_.Push(std::move(command));
}

void ShardWorker::Apply(std::vector<InputRun> runs) {
  if (!runs.empty()) Post(ApplyCommand{std::move(runs)});
}

void ShardWorker::Adopt(std::unique_ptr<shard::ShardState> state,
                        std::optional<base::Offset> check_from,
                        std::optional<SnapshotCycleKept> kept, std::optional<OwnedRun> run) {
  Post(AdoptCommand{std::move(state), check_from, kept, run});
}

void ShardWorker::SetChangelogLimits(shard::ChangelogLimits limits) {
  Post(LimitsCommand{limits});
}

void ShardWorker::SnapshotAtNextSeal(base::Partition partition) {
  Post(SnapshotDueCommand{partition});
}

void ShardWorker::Drop(std::vector<base::Partition> partitions) {
  Post(DropCommand{std::move(partitions), false});
}

void ShardWorker::DropAll() {
  Post(DropCommand{{}, true});
}

std::future<std::vector<SealedShard>> ShardWorker::Seal(bool backlog) {
  SealCommand command;
  command.backlog = backlog;
  auto result = command.done.get_future();
  Post(std::move(command));
  return result;
}

void ShardWorker::Committed(ChangelogWritten written) {
  Post(CommittedCommand{std::move(written)});
}

std::future<std::vector<std::shared_ptr<const shard::ShardView>>> ShardWorker::RefreshIdleViews() {
  RefreshCommand command;
  auto result = command.done.get_future();
  Post(std::move(command));
  return result;
}

void ShardWorker::Sync() {
  SyncCommand command;
  auto result = command.done.get_future();
  Post(std::move(command));
  result.get();
}

// --- On the worker thread ----------------------------------------------------------

void ShardWorker::Execute(ApplyCommand& c) {
  // One wall-clock reading bounds the record timestamps of the whole hand-over.
  const filter::Millis wall{o_.now_ms()};
  for (const InputRun& run : c.runs) {
    auto it = shards_.find(run.partition);
    if (it == shards_.end() || it->second.failure) continue;
    try {
      ApplyRun(it->second, run.messages, wall);
    } catch (const std::exception& e) {
      Fail(run.partition, it->second, "applying its input", e);
    }
  }
}

void ShardWorker::Fail(base::Partition p, Shard& shard, const std::string& doing,
                       const std::exception& e) {
  shard.failure = doing + " failed: " +
                  (dynamic_cast<const std::bad_alloc*>(&e) != nullptr ? std::string("out of memory")
                                                                      : std::string(e.what()));
  shard.dead_letters.clear();
  if (o_.log) {
    o_.log.Error("shard " + std::to_string(p.value()) + ": " + *shard.failure +
                 "; its state is lost, and it is restored from its changelog");
  }
}

void ShardWorker::ApplyRun(Shard& shard, const std::vector<kafka::Message>& messages,
                           filter::Millis wall) {
  shard::ShardState& state = *shard.state;
  inputs_.clear();
  size_t first = 0;
  // Messages before the shard's position were applied already (a re-delivery).
  while (first < messages.size() && !base::IsLogical(state.position()) &&
         messages[first].offset < state.position()) {
    ++first;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const kafka::Message& m = messages[i];
    inputs_.push_back(
        shard::InputMessage{m.offset, m.key, m.value.value_or(std::string_view()), m.timestamp_ms});
  }
  if (inputs_.empty()) return;
  decisions_.resize(inputs_.size());
  state.ApplyAll(inputs_, wall, decisions_);
  for (size_t i = 0; i < decisions_.size(); ++i) {
    if (decisions_[i].outcome == shard::Outcome::kDeadLetter) {
      shard.dead_letters.push_back(MakeDeadLetter(
          messages[first + i], event::DlqReasonName(decisions_[i].reason), o_.input_topic));
    }
  }
}

// Says once (and once more after it fits again) that a shard's snapshots are too
// large for its changelog partition's retention: restores would then fail.
void ShardWorker::ReportRetention(base::Partition p, Shard& shard, const SnapshotCadence& cadence) {
  const bool outgrows = SnapshotOutgrowsRetention(cadence, shard.last_snapshot_bytes);
  if (outgrows == shard.outgrowing_retention) return;
  shard.outgrowing_retention = outgrows;
  if (!o_.log) return;
  if (outgrows) {
    o_.log.Warn("shard " + std::to_string(p.value()) + ": its snapshot takes " +
                std::to_string(shard.last_snapshot_bytes) + " bytes; a changelog partition keeps " +
                std::to_string(cadence.retention_bytes) +
                ", too few for two snapshots and the batches between them, so a restore can find "
                "none complete and fail: raise the changelog's retention.bytes, or lower "
                "dedup.expected_rate or dedup.window_ms (docs/operations.md)");
  } else {
    o_.log("shard " + std::to_string(p.value()) + ": its snapshot (" +
           std::to_string(shard.last_snapshot_bytes) +
           " bytes) fits in the changelog's retention again");
  }
}

void ShardWorker::ReportEarlyForgetting(base::Partition p, Shard& shard,
                                        const shard::ShardView& view) {
  const filter::FilterSummary& f = view.filter;
  const bool forgetting = f.HoldsLessThanItsWindow();
  if (forgetting == shard.forgetting_early) return;
  shard.forgetting_early = forgetting;
  if (!o_.log) return;
  if (forgetting) {
    o_.log.Warn("shard " + std::to_string(p.value()) + ": its filter reached its memory bound (" +
                std::to_string(f.memory_limit_bytes) + " bytes, dedup.max_filter_mib) and forgot " +
                std::to_string(f.forgotten_early) +
                " ids before their window: it holds every id of the last " +
                std::to_string(f.window_ms_guaranteed) + " ms of its " +
                std::to_string(f.window_ms_configured) +
                " ms window, and a retry older than that may count twice (docs/operations.md, "
                "\"The filter forgot early\")");
  } else {
    o_.log("shard " + std::to_string(p.value()) + ": its filter holds its whole " +
           std::to_string(f.window_ms_configured) + " ms window again");
  }
}

void ShardWorker::Execute(AdoptCommand& c) {
  const base::Partition p = c.state->partition();
  Shard& shard = shards_[p];
  shard = Shard{};
  shard.state = std::move(c.state);
  shard.check_from = c.check_from;
  shard.run = c.run;
  // In the cycle its changelog holds, and part of the way through it (SnapshotPhase),
  // so that shards adopted together snapshot at different commits.
  SnapshotCadence cadence = o_.snapshots;
  cadence.retention_bytes = shard.state->rules().changelog_retention_bytes;
  const AdoptedCycle cycle = AdoptedSnapshotCycle(cadence, p, c.kept);
  shard.last_snapshot_bytes = cycle.last_snapshot_bytes;
  shard.bytes_since_snapshot = cycle.bytes_since_snapshot;
  shard.last_snapshot_ms = o_.now_ms() - cycle.ms_since_snapshot;
}

void ShardWorker::Execute(SnapshotDueCommand& c) {
  const auto it = shards_.find(c.partition);
  if (it == shards_.end()) return;
  it->second.snapshot_forced = true;
}

void ShardWorker::Execute(LimitsCommand& c) {
  for (auto& [p, shard] : shards_) {
    if (shard.state != nullptr) shard.state->set_changelog_limits(c.limits);
  }
}

void ShardWorker::Execute(DropCommand& c) {
  if (c.all) {
    shards_.clear();
    return;
  }
  for (base::Partition p : c.partitions) shards_.erase(p);
}

void ShardWorker::Execute(SealCommand& c) {
  std::vector<SealedShard> sealed;
  const int64_t now = o_.now_ms();
  for (auto& [p, shard] : shards_) {
    SealedShard s;
    if (!shard.failure) {
      try {
        s = SealShard(p, shard, now, c.backlog);
      } catch (const std::exception& e) {
        Fail(p, shard, "sealing its batch", e);
      }
    }
    if (shard.failure) {
      s = SealedShard{};
      s.partition = p;
      s.failure = shard.failure;
    }
    if (!s.batches.empty() || !s.snapshot.empty() || s.failure) sealed.push_back(std::move(s));
  }
  c.done.set_value(std::move(sealed));
}

// Seals the shard's pending batches (no batches: nothing was applied), and a snapshot
// when one is due. A forced snapshot (SnapshotAtNextSeal) goes without a batch: an
// idle shard whose changelog lost its snapshot must not wait for input to write one.
SealedShard ShardWorker::SealShard(base::Partition p, Shard& shard, int64_t now, bool backlog) {
  SealedShard s;
  s.partition = p;
  // The last seal's snapshot was committed (MarkCommitted took its checkpoint), or its
  // transaction aborted and the shard ran on (a snapshot alone): none to write.
  shard.unwritten_checkpoint.reset();
  shard::ShardState& state = *shard.state;
  const base::Epoch epoch = state.epoch();
  const std::vector<changelog::BatchRecord> batches = state.Seal(epoch, now);
  if (batches.empty()) {
    // A snapshot stands for a committed batch, and its transaction carries the
    // input position on: a shard that has neither has nothing to snapshot.
    const bool can_snapshot =
        state.committed_seq() != base::Seq() && !base::IsLogical(state.position());
    if (!shard.snapshot_forced || !can_snapshot) return s;
    s.seq = state.committed_seq();
    s.next_offset = state.position();
  } else {
    s.seq = batches.back().seq;
    s.next_offset = batches.back().input_to;
  }
  s.batches.resize(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    changelog::EncodeRecord(batches[i], s.batches[i]);
    shard.bytes_since_snapshot += s.batches[i].size();
  }
  SnapshotCadence cadence = o_.snapshots;
  cadence.retention_bytes = state.rules().changelog_retention_bytes;
  if (shard.snapshot_forced ||
      shard.bytes_since_snapshot >= SnapshotDueAfterBytes(cadence, shard.last_snapshot_bytes) ||
      now - shard.last_snapshot_ms >= cadence.max_interval.count()) {
    shard.snapshot_forced = false;
    std::string bytes = state.EncodeSnapshot(epoch);
    s.snapshot = changelog::EncodeSnapshotChunks(p, epoch, state.claim(), o_.group_id, s.seq, bytes,
                                                 state.rules().max_record_bytes);
    shard.bytes_since_snapshot = 0;
    shard.last_snapshot_bytes = bytes.size();
    shard.last_snapshot_ms = now;
    ReportRetention(p, shard, cadence);
    if (!o_.checkpoint_dir.empty()) {
      shard.unwritten_checkpoint = LocalCheckpoint{
          p, epoch, state.claim(), s.seq, base::Offset(0), bytes, shard.check_from, std::nullopt};
    }
  }
  s.dead_letters = std::move(shard.dead_letters);
  shard.dead_letters.clear();
  s.view = MakeView(shard, false, backlog);
  return s;
}

void ShardWorker::Execute(CommittedCommand& c) {
  for (auto& [p, shard] : shards_) {
    if (shard.failure) continue;
    try {
      MarkCommitted(p, shard, c.written);
    } catch (const std::exception& e) {
      Fail(p, shard, "marking its commit", e);
    }
  }
}

void ShardWorker::MarkCommitted(base::Partition p, Shard& shard, const ChangelogWritten& c) {
  if (shard.state->has_batch_in_flight()) shard.state->MarkCommitted(shard.state->epoch());
  std::optional<LocalCheckpoint> checkpoint = std::exchange(shard.unwritten_checkpoint, {});
  const auto written = c.records.find(p);
  if (written == c.records.end()) return;
  if (shard.run) shard.run->Committed(written->second, c.markers);
  if (!checkpoint) return;
  checkpoint->changelog_offset = written->second.first;
  // The transaction's records in the partition end with the snapshot's chunks.
  if (shard.run && checkpoint->check_from) checkpoint->snapshot_end = shard.run->last();
  if (const base::Status stored =
          WriteCheckpoint(o_.checkpoint_dir, o_.changelog_topic, *checkpoint);
      !stored && o_.log) {
    o_.log.Warn("shard " + std::to_string(p.value()) +
                ": no local checkpoint: " + stored.message());
  }
}

void ShardWorker::Execute(RefreshCommand& c) {
  std::vector<std::shared_ptr<const shard::ShardView>> views;
  for (auto& [p, shard] : shards_) {
    const shard::ShardState& state = *shard.state;
    if (shard.failure || state.has_pending() || state.has_batch_in_flight()) continue;
    // A view that kept older counters (sealed under a backlog) is behind its state even
    // when its filter detail is not: the shard may see no batch again for a long time.
    if (shard.last_view && shard.last_view->digest_seq == state.committed_seq() &&
        !shard.counters_kept) {
      continue;
    }
    try {
      views.push_back(MakeView(shard, true));
    } catch (const std::exception& e) {
      Fail(p, shard, "publishing its view", e);  // its next seal reports it
    }
  }
  c.done.set_value(std::move(views));
}

void ShardWorker::Execute(SyncCommand& c) {
  c.done.set_value();
}

std::shared_ptr<const shard::ShardView> ShardWorker::MakeView(Shard& shard, bool force_detail,
                                                              bool backlog) {
  shard::ShardView base;
  base.role = shard::ShardRole::kActive;
  base.phase = shard::ShardPhase::kRunning;
  base.target_fpp = o_.target_fpp;
  const int64_t now = o_.now_ms();
  auto detail = shard::ShardState::FilterDetail::kRefresh;
  // The wall clock: a step back (now before the last time) makes both due.
  const int64_t since_detail = now - shard.last_filter_detail_ms;
  if (!force_detail && shard.last_view && since_detail >= 0 &&
      since_detail < kFilterDetailEveryMs) {
    detail = shard::ShardState::FilterDetail::kReuse;
    base.filter = shard.last_view->filter;
    base.digest = shard.last_view->digest;
    base.digest_seq = shard.last_view->digest_seq;
  } else {
    shard.last_filter_detail_ms = now;
  }
  auto counters = shard::ShardState::CounterDetail::kRefresh;
  const int64_t since_counters = now - shard.last_counters_ms;
  if (backlog && shard.last_view && since_counters >= 0 &&
      since_counters < kBacklogCountersEveryMs) {
    counters = shard::ShardState::CounterDetail::kReuse;
    base.counters = shard.last_view->counters;
    base.recent_counters = shard.last_view->recent_counters;
    base.counters_behind_ms = since_counters;
    shard.counters_kept = true;
  } else {
    shard.last_counters_ms = now;
    shard.counters_kept = false;
  }
  shard.last_view = shard.state->MakeView(std::move(base), now, detail, counters);
  if (detail == shard::ShardState::FilterDetail::kRefresh) {
    ReportEarlyForgetting(shard.state->partition(), shard, *shard.last_view);
  }
  return shard.last_view;
}

}  // namespace oncecount::service
