// LocalCheckpoint: a shard's state kept on the instance's own disk (state.dir), so
// that a restart reads only the changelog's tail instead of the whole partition.
//
// The shard's worker writes one after each transaction that carried a snapshot of
// the shard has committed: the snapshot's bytes (shard_state.h), the lineage
// position they stand for (epoch, claim, last batch), and the changelog offset of
// the transaction's first record in the shard's partition. When its owner knew that
// the partition held nothing but its own records from its claim to the snapshot
// (owned_run.h), it also carries the offset of the snapshot's last chunk, from which
// a restore reads: that chunk (it must be there: the checkpoint is of this changelog)
// and the tail after it (LineageFollower::Resuming). Otherwise ShardLoader uses it only when
// the checkpoint's claim and batch are on the changelog's committed lineage as it is
// now (LineageFollower::Seeking; ShardLoader): read from where the restore that wrote
// the claim had read to (every claim before it was older), the claim is the first of
// its epoch, nothing supersedes it before the batch, and nothing after the batch cuts
// it back. Anything
// else (no file, a corrupt one, one older than what the changelog keeps, a zombie's,
// one written against another changelog or another incarnation of the topic) falls
// back to a restore from the changelog, with the reason logged and counted. The
// changelog stays the truth: a checkpoint only saves reading what it already covers.
//
// File: <dir>/<changelog topic>-<partition>.checkpoint. Layout (little-endian):
// magic "OCCP", u16 version, u32 partition, u64 epoch, u64 claim, u64 seq, i64
// changelog offset, [version 2: i64 check-from offset, -1 when unknown], [version 3:
// i64 snapshot-end offset, -1 when the run was not known to be the owner's alone],
// u32-length snapshot, then XXH3-64 of everything before it. Version 1 files (no
// check-from offset) still decode, their lineage checked from the partition's log
// start; so do version 2 files (no snapshot end). Written to
// a temporary file, flushed to the disk, then renamed over the previous one, so a
// crash leaves the old checkpoint or the new one.
//
// Thread-safety: functions over the file system; one writer per file (the worker
// that owns the shard), readers at any time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "processor/base/ids.h"
#include "processor/base/result.h"

namespace oncecount::service {

struct LocalCheckpoint {
  base::Partition partition;
  base::Epoch epoch;  // of the claim that wrote the snapshot
  uint64_t claim = 0;
  base::Seq seq;                  // the batch the snapshot is the state after
  base::Offset changelog_offset;  // where the tail after it begins, at the latest
  std::string snapshot;           // ShardState::EncodeSnapshot
  // Where the lineage check reads from: the changelog offset up to which the restore
  // that wrote the claim (epoch, claim) had read, so that every claim before it is
  // older and a rival claim of the same epoch comes after it. nullopt: unknown (a
  // version 1 file): the check reads from the log start.
  std::optional<base::Offset> check_from;
  // The offset of the snapshot's last chunk, when every record from check_from up to
  // it was the owner's (OwnedRun): a restore reads from there. nullopt: the lineage
  // check reads from check_from.
  std::optional<base::Offset> snapshot_end;
  friend bool operator==(const LocalCheckpoint&, const LocalCheckpoint&) = default;
};

std::string EncodeCheckpoint(const LocalCheckpoint& checkpoint);
base::Result<LocalCheckpoint> DecodeCheckpoint(std::string_view bytes);

std::string CheckpointPath(const std::string& dir, const std::string& changelog_topic,
                           base::Partition partition);

// Ok once the checkpoint is on the disk; else why not (kIo).
base::Status WriteCheckpoint(const std::string& dir, const std::string& changelog_topic,
                             const LocalCheckpoint& checkpoint);

// nullopt when there is none; an error when it cannot be read (kIo) or is corrupt
// (kCorrupt).
base::Result<std::optional<LocalCheckpoint>> ReadCheckpoint(const std::string& dir,
                                                            const std::string& changelog_topic,
                                                            base::Partition partition);

}  // namespace oncecount::service
