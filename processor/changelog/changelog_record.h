// The records of a shard's changelog: the source of truth for a shard's state and
// its input position (DESIGN-NOTES §3).
//
// Changelog partition p belongs to shard p (input partition p). Its records are:
//
//   Batch     what one commit did to the shard: the input range it covers, when
//             the owner sealed it (its wall clock; replicas measure their lag
//             against it), every filter call it made (AdvanceTo times and the id
//             hashes tested, in order), the final value of every counter it
//             touched and its statistics. Replaying the batches in order rebuilds
//             bit-identical filters and the same counters. A batch also carries
//             the key its ids were hashed with, so that a state rebuilt from batches
//             whose claim retention deleted still knows it.
//   Claim     a new owner (or an owner recovering from an aborted transaction)
//             takes the shard at `epoch`, continuing from batch `base_seq`. Batches
//             of older epochs that follow it are a zombie's and are ignored. Each
//             claim has a random id that the owner's batches and snapshots carry:
//             if two claims of one epoch ever appeared (a restore that read less
//             than it should), readers keep the first and ignore the second with
//             everything written under it (lineage.h). A claim carries the key the
//             shard hashes its ids with (id_hash.h): drawn by the shard's first
//             claimer, repeated by every later one, so that a restore that finds no
//             snapshot hashes new ids as the batches it replayed were hashed.
//   Snapshot  one chunk of the shard's whole state after batch `seq`, written in the
//             same transaction as that batch, so that restoring does not need the
//             whole history; or in a transaction of its own after it, when the
//             owner found its changelog had lost the newest snapshot.
//
// Layout of every record (integers little-endian):
//
//   offset  size  field
//   0       4     magic "OCCL"
//   4       2     format version (6)
//   6       1     record type (1 batch, 2 claim, 3 snapshot chunk)
//   7       1     reserved, 0
//   8       4     partition
//   12      8     epoch
//   20      8     seq (batch: its own; claim: base_seq; snapshot: the batch it follows)
//   28      8     claim id (a claim: its own; others: the claim they are written under)
//   36      ...   body (per type; see changelog_record.cc)
//   end-8   8     XXH3-64 of every byte before it
//
// A claim's body is its u64 id hash key and its consumer group (u32 length and at most
// kMaxGroupIdBytes bytes); a batch's body opens with the key; a snapshot chunk's is
// its u32 index and count, its bytes (u32 length) and its claim's group. Format 5
// (read, never written) is the same without the groups, which decode empty. Format 4
// (read, never written) is the same without the keys (an empty claim body): its
// claims and batches decode with key 0, unkeyed, which is how their shards hashed.
// Format 3 (read, never written) is format 4 with seven dead-letter counts in a
// batch's statistics (no `late`; it decodes as 0). Format 2 (read, never written) is
// format 3 without the claim id: its body starts at 28 and its records decode with
// claim id 0, "unknown", which readers accept as belonging to whichever claim holds
// its epoch. Format 1 is not read.
//
// A record that fails any check decodes to an Error; readers skip it and count it.
// tests/processor/changelog/changelog_record_test.cc pins the bytes.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "processor/base/ids.h"
#include "processor/base/result.h"
#include "processor/event/increment_event.h"

namespace oncecount::changelog {

using base::Epoch;
using base::Seq;

inline constexpr uint16_t kChangelogFormatVersion = 6;
// The oldest format still read.
inline constexpr uint16_t kOldestReadableChangelogFormat = 2;
// The record format holds one count per dead-letter reason (formats 2 and 3: the
// first seven, without `late`).
inline constexpr size_t kDlqReasons = 8;
inline constexpr size_t kFormat3DlqReasons = 7;
// The format that added the reason `late`.
inline constexpr uint16_t kLateReasonFormat = 4;
// The format whose claims and batches carry the shard's id hash key.
inline constexpr uint16_t kKeyedFormat = 5;
// The format whose claims name the claimer's consumer group.
inline constexpr uint16_t kGroupFormat = 6;
inline constexpr size_t kMaxGroupIdBytes = 1024;
static_assert(kDlqReasons == event::kDlqReasonCount,
              "a new dead-letter reason changes the record format: bump its version");

// Per-shard event statistics; in a batch they are the increments of that batch.
struct ShardStats {
  uint64_t applied = 0;
  uint64_t duplicates = 0;
  uint64_t near_edge_duplicates = 0;
  std::array<uint64_t, kDlqReasons> dead_lettered{};  // by event::DlqReason

  void Add(const ShardStats& other);
  uint64_t dead_lettered_total() const;
  friend bool operator==(const ShardStats&, const ShardStats&) = default;
};

// One AdvanceTo(time_ms) call followed by TestAndInsert of each hash in order.
struct FilterSegment {
  int64_t time_ms = 0;
  std::vector<uint64_t> hashes;
  friend bool operator==(const FilterSegment&, const FilterSegment&) = default;
};

struct CounterUpdate {
  std::string name;
  int64_t value = 0;  // the counter's value after the batch
  friend bool operator==(const CounterUpdate&, const CounterUpdate&) = default;
};

struct BatchRecord {
  base::Partition partition;
  Epoch epoch;
  Seq seq;
  base::Offset input_from;   // first input offset the batch covers
  base::Offset input_to;     // the next offset to read after it
  int64_t sealed_at_ms = 0;  // the owner's wall clock when it sealed the batch
  std::vector<FilterSegment> segments;
  std::vector<CounterUpdate> counters;
  ShardStats stats;
  uint64_t claim = 0;  // the id of the claim it was written under (0: unknown, format 2)
  // The key its hashes were made with (filter::IdHashKey; 0: unkeyed, and every batch
  // before format 5).
  uint64_t hash_key = 0;
  friend bool operator==(const BatchRecord&, const BatchRecord&) = default;
};

struct ClaimRecord {
  base::Partition partition;
  Epoch epoch;
  Seq base_seq;        // the last batch of the lineage the claimer continues
  uint64_t claim = 0;  // its random id (0: unknown, format 2)
  // The key the shard hashes ids with (filter::IdHashKey; 0: unkeyed, and every
  // claim before format 5).
  uint64_t hash_key = 0;
  // The consumer group (kafka.group_id) of the deployment that claimed: a deployment
  // refuses a shard another one claimed (two groups on one input topic share its
  // changelog). Empty: not known, and every claim before format 6.
  std::string group{};
  friend bool operator==(const ClaimRecord&, const ClaimRecord&) = default;
};

struct SnapshotChunk {
  base::Partition partition;
  Epoch epoch;
  Seq seq;  // the state after this batch
  uint32_t index = 0;
  uint32_t count = 1;
  std::string bytes;
  uint64_t claim = 0;  // the id of the claim it was written under (0: unknown, format 2)
  // The consumer group of that claim (empty: unknown, before format 6): the newest
  // snapshot outlives the claim that retention removes, and still says whose it is.
  std::string group{};
  friend bool operator==(const SnapshotChunk&, const SnapshotChunk&) = default;
};

using Record = std::variant<BatchRecord, ClaimRecord, SnapshotChunk>;

// Largest record we write or accept: below the 1 MB default of message.max.bytes.
inline constexpr size_t kMaxRecordBytes = 900 * 1024;
inline constexpr size_t kSnapshotChunkBytes = 512 * 1024;
// The smallest record limit a writer may be given: room for a batch of one event
// with the longest counter name, and for a useful snapshot chunk.
inline constexpr size_t kMinRecordBytes = 4096;
inline constexpr size_t kMaxCounterNameBytes = 256;

// Encoded sizes of the parts of a batch record, so that writers can cut batches
// under a byte limit without encoding them (tests pin them against EncodeRecord).
inline constexpr size_t kBatchRecordFixedBytes = 36 + 8 + 3 * 8 + 4 + 4 + (3 + kDlqReasons) * 8 +
                                                 8;  // header, key, ranges, counts, stats, checksum
inline constexpr size_t kSegmentBytes = 8 + 4;       // time, hash count
inline constexpr size_t kHashBytes = 8;
constexpr size_t CounterUpdateBytes(size_t name_bytes) {
  return 4 + name_bytes + 8;
}
// What one applied event can add to a batch at most: a new segment, its hash and a
// new counter with the longest name.
inline constexpr size_t kMaxEventBatchBytes =
    kSegmentBytes + kHashBytes + CounterUpdateBytes(kMaxCounterNameBytes);
// The encoded size of a batch record, without encoding it.
size_t BatchRecordBytes(const BatchRecord& batch);
// The payload a snapshot chunk record of at most `record_bytes` can carry.
constexpr size_t SnapshotChunkPayload(size_t record_bytes) {
  return record_bytes - (36 + 4 + 4 + 4 + 4 + kMaxGroupIdBytes + 8);  // the group at its longest
}

void EncodeRecord(const Record& record, std::string& out);
base::Result<Record> DecodeRecord(std::string_view bytes);
// The format version of a record that is whole (its magic and checksum hold) but
// newer than this release reads: a newer release wrote it. nullopt otherwise.
std::optional<uint16_t> NewerFormatOf(std::string_view bytes);
// Why a shard cannot be restored or followed past a record of `format`.
std::string NewerFormatError(uint16_t format);

// A shard's snapshot `bytes` (its state after batch `seq`) as snapshot chunk records of
// at most `max_record_bytes` each, in order.
// `group`: the consumer group of claim `claim`.
std::vector<std::string> EncodeSnapshotChunks(base::Partition partition, Epoch epoch,
                                              uint64_t claim, std::string_view group, Seq seq,
                                              std::string_view bytes, size_t max_record_bytes);

}  // namespace oncecount::changelog
