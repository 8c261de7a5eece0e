#include "processor/changelog/changelog_record.h"

#include <xxhash.h>

#include <algorithm>
#include <numeric>

#include "processor/base/byte_io.h"

namespace oncecount::changelog {
namespace {

using base::ByteReader;
using base::ByteWriter;

constexpr char kMagic[4] = {'O', 'C', 'C', 'L'};
constexpr size_t kHeaderBytes = 36;         // formats 3 to 6
constexpr size_t kFormat2HeaderBytes = 28;  // no claim id
constexpr size_t kChecksumBytes = 8;

enum class RecordType : uint8_t { kBatch = 1, kClaim = 2, kSnapshotChunk = 3 };

void WriteHeader(ByteWriter& w, RecordType type, base::Partition partition, Epoch epoch, Seq seq,
                 uint64_t claim) {
  for (char c : kMagic) w.U8(static_cast<uint8_t>(c));
  w.U16(kChangelogFormatVersion);
  w.U8(static_cast<uint8_t>(type));
  w.U8(0);
  w.U32(static_cast<uint32_t>(partition.value()));
  w.U64(epoch.value());
  w.U64(seq.value());
  w.U64(claim);
}

void WriteStats(ByteWriter& w, const ShardStats& s) {
  w.U64(s.applied);
  w.U64(s.duplicates);
  w.U64(s.near_edge_duplicates);
  for (uint64_t n : s.dead_lettered) w.U64(n);
}

ShardStats ReadStats(ByteReader& r, uint16_t version) {
  ShardStats s;
  s.applied = r.U64();
  s.duplicates = r.U64();
  s.near_edge_duplicates = r.U64();
  const size_t reasons = version >= kLateReasonFormat ? kDlqReasons : kFormat3DlqReasons;
  for (size_t i = 0; i < reasons; ++i) s.dead_lettered[i] = r.U64();
  return s;
}

void EncodeBody(const BatchRecord& b, ByteWriter& w) {
  w.U64(b.hash_key);
  w.I64(b.input_from.value());
  w.I64(b.input_to.value());
  w.I64(b.sealed_at_ms);
  w.U32(static_cast<uint32_t>(b.segments.size()));
  for (const FilterSegment& s : b.segments) {
    w.I64(s.time_ms);
    w.U32(static_cast<uint32_t>(s.hashes.size()));
    for (uint64_t h : s.hashes) w.U64(h);
  }
  w.U32(static_cast<uint32_t>(b.counters.size()));
  for (const CounterUpdate& c : b.counters) {
    w.Bytes(c.name);
    w.I64(c.value);
  }
  WriteStats(w, b.stats);
}

void EncodeBody(const ClaimRecord& c, ByteWriter& w) {
  w.U64(c.hash_key);
  w.Bytes(std::string_view(c.group).substr(0, kMaxGroupIdBytes));
}

void EncodeBody(const SnapshotChunk& c, ByteWriter& w) {
  w.U32(c.index);
  w.U32(c.count);
  w.Bytes(c.bytes);
  w.Bytes(std::string_view(c.group).substr(0, kMaxGroupIdBytes));
}

base::Result<Record> DecodeBatch(ByteReader& r, uint16_t version, BatchRecord b) {
  // Batches before format 5 carry no key: their shards hashed ids unkeyed.
  b.hash_key = version >= kKeyedFormat ? r.U64() : 0;
  b.input_from = base::Offset(r.I64());
  b.input_to = base::Offset(r.I64());
  b.sealed_at_ms = r.I64();
  const uint32_t segments = r.U32();
  // Every segment takes at least 12 bytes: refuse counts the input cannot hold
  // before allocating for them.
  if (!r.ok() || segments > r.remaining() / 12) return base::Corrupt("batch: bad segment count");
  b.segments.resize(segments);
  for (FilterSegment& s : b.segments) {
    s.time_ms = r.I64();
    const uint32_t n = r.U32();
    if (!r.ok() || n > r.remaining() / 8) return base::Corrupt("batch: bad hash count");
    s.hashes.resize(n);
    for (uint64_t& h : s.hashes) h = r.U64();
  }
  const uint32_t counters = r.U32();
  if (!r.ok() || counters > r.remaining() / 12) return base::Corrupt("batch: bad counter count");
  b.counters.resize(counters);
  for (CounterUpdate& c : b.counters) {
    c.name = std::string(r.Bytes(kMaxCounterNameBytes));
    c.value = r.I64();
  }
  b.stats = ReadStats(r, version);
  if (!r.ok()) return base::Corrupt("batch: truncated");
  if (!r.done()) return base::Corrupt("batch: trailing bytes");
  if (b.input_to < b.input_from) return base::Corrupt("batch: input range ends before it starts");
  return Record{std::move(b)};
}

}  // namespace

size_t BatchRecordBytes(const BatchRecord& batch) {
  size_t bytes = kBatchRecordFixedBytes;
  for (const FilterSegment& s : batch.segments)
    bytes += kSegmentBytes + kHashBytes * s.hashes.size();
  for (const CounterUpdate& c : batch.counters) bytes += CounterUpdateBytes(c.name.size());
  return bytes;
}

void ShardStats::Add(const ShardStats& other) {
  applied += other.applied;
  duplicates += other.duplicates;
  near_edge_duplicates += other.near_edge_duplicates;
  for (size_t i = 0; i < kDlqReasons; ++i) dead_lettered[i] += other.dead_lettered[i];
}

uint64_t ShardStats::dead_lettered_total() const {
  return std::accumulate(dead_lettered.begin(), dead_lettered.end(), uint64_t{0});
}

void EncodeRecord(const Record& record, std::string& out) {
  const size_t start = out.size();
  ByteWriter w(out);
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        RecordType type = RecordType::kBatch;
        Seq seq;
        if constexpr (std::is_same_v<T, BatchRecord>) {
          seq = r.seq;
        } else if constexpr (std::is_same_v<T, ClaimRecord>) {
          type = RecordType::kClaim;
          seq = r.base_seq;
        } else {
          type = RecordType::kSnapshotChunk;
          seq = r.seq;
        }
        WriteHeader(w, type, r.partition, r.epoch, seq, r.claim);
        EncodeBody(r, w);
      },
      record);
  w.U64(XXH3_64bits(out.data() + start, out.size() - start));
}

// Whether the trailing XXH3-64 matches the bytes before it (at least kChecksumBytes).
static bool ChecksumHolds(std::string_view bytes) {
  const std::string_view covered = bytes.substr(0, bytes.size() - kChecksumBytes);
  ByteReader tail(bytes.substr(covered.size()));
  return tail.U64() == XXH3_64bits(covered.data(), covered.size());
}

std::optional<uint16_t> NewerFormatOf(std::string_view bytes) {
  // Any format begins with the magic and the version, and ends with the checksum.
  if (bytes.size() < 4 + 2 + kChecksumBytes || bytes.substr(0, 4) != std::string_view(kMagic, 4) ||
      !ChecksumHolds(bytes)) {
    return std::nullopt;
  }
  ByteReader r(bytes.substr(4));
  const uint16_t version = r.U16();
  if (!r.ok() || version <= kChangelogFormatVersion) return std::nullopt;
  return version;
}

std::string NewerFormatError(uint16_t format) {
  return "the changelog holds records of format " + std::to_string(format) +
         ", which a newer release wrote; this release reads formats up to " +
         std::to_string(kChangelogFormatVersion) +
         ": run the newer release (going back to an older one is not supported once a newer "
         "one has written)";
}

base::Result<Record> DecodeRecord(std::string_view bytes) {
  if (bytes.size() < kFormat2HeaderBytes + kChecksumBytes) {
    return base::Corrupt("changelog record: too short");
  }
  if (bytes.size() > kMaxRecordBytes + kHeaderBytes + kChecksumBytes) {
    return base::Corrupt("changelog record: too large");
  }
  if (bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return base::Corrupt("changelog record: bad magic");
  }
  if (!ChecksumHolds(bytes)) return base::Corrupt("changelog record: checksum mismatch");
  const std::string_view covered = bytes.substr(0, bytes.size() - kChecksumBytes);
  ByteReader r(covered.substr(4));
  const uint16_t version = r.U16();
  if (version < kOldestReadableChangelogFormat || version > kChangelogFormatVersion) {
    return base::Corrupt("changelog record: unsupported format version " + std::to_string(version));
  }
  const auto type = static_cast<RecordType>(r.U8());
  r.U8();
  const base::Partition partition{static_cast<int32_t>(r.U32())};
  const Epoch epoch{r.U64()};
  const Seq seq{r.U64()};
  const uint64_t claim = version >= 3 ? r.U64() : 0;
  if (!r.ok()) return base::Corrupt("changelog record: truncated header");
  switch (type) {
    case RecordType::kBatch:
      return DecodeBatch(r, version,
                         BatchRecord{partition, epoch, seq, {}, {}, 0, {}, {}, {}, claim, 0});
    case RecordType::kClaim: {
      // Claims before format 5 carry no key: their shards hashed ids unkeyed.
      const uint64_t hash_key = version >= kKeyedFormat ? r.U64() : 0;
      // Claims before format 6 do not name their group.
      std::string group = version >= kGroupFormat ? std::string(r.Bytes(kMaxGroupIdBytes)) : "";
      if (!r.done()) return base::Corrupt("claim: truncated or trailing bytes");
      return Record{ClaimRecord{partition, epoch, seq, claim, hash_key, std::move(group)}};
    }
    case RecordType::kSnapshotChunk: {
      SnapshotChunk c{partition, epoch, seq, 0, 0, {}, claim};
      c.index = r.U32();
      c.count = r.U32();
      c.bytes = std::string(r.Bytes(kMaxRecordBytes));
      // Chunks before format 6 do not name their claim's group.
      if (version >= kGroupFormat) c.group = std::string(r.Bytes(kMaxGroupIdBytes));
      if (!r.done() || c.count == 0 || c.index >= c.count)
        return base::Corrupt("snapshot chunk: malformed");
      return Record{std::move(c)};
    }
  }
  return base::Corrupt("changelog record: unknown type " + std::to_string(static_cast<int>(type)));
}

std::vector<std::string> EncodeSnapshotChunks(base::Partition partition, Epoch epoch,
                                              uint64_t claim, std::string_view group, Seq seq,
                                              std::string_view bytes, size_t max_record_bytes) {
  const size_t chunk = std::min(kSnapshotChunkBytes, SnapshotChunkPayload(max_record_bytes));
  const auto count = static_cast<uint32_t>((bytes.size() + chunk - 1) / chunk);
  std::vector<std::string> records(count);
  for (uint32_t i = 0; i < count; ++i) {
    EncodeRecord(
        SnapshotChunk{partition, epoch, seq, i, count, std::string(bytes.substr(i * chunk, chunk)),
                      claim, std::string(group)},
        records[i]);
  }
  return records;
}

}  // namespace oncecount::changelog
