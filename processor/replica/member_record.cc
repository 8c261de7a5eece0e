#include "processor/replica/member_record.h"

#include <xxhash.h>

#include <algorithm>

#include "processor/base/byte_io.h"

namespace oncecount::replica {
namespace {

constexpr char kMagic[4] = {'O', 'C', 'M', 'B'};
constexpr size_t kChecksumBytes = 8;
constexpr uint8_t kLeaving = 1;
// More partitions than any topic has: a count beyond it is corrupt.
constexpr uint32_t kMaxActives = 1 << 20;

}  // namespace

std::string EncodeMemberRecord(const MemberRecord& record) {
  std::string out;
  base::ByteWriter w(out);
  for (char c : kMagic) w.U8(static_cast<uint8_t>(c));
  w.U16(kMemberFormatVersion);
  w.U8(record.leaving ? kLeaving : 0);
  w.U8(0);
  w.I64(record.sent_at_ms);
  w.U32(static_cast<uint32_t>(record.standby_replicas));
  w.Bytes(record.instance_id);
  w.Bytes(record.api_url);
  w.U32(static_cast<uint32_t>(record.actives.size()));
  for (base::Partition p : record.actives) w.U32(static_cast<uint32_t>(p.value()));
  w.U64(XXH3_64bits(out.data(), out.size()));
  return out;
}

base::Result<MemberRecord> DecodeMemberRecord(std::string_view bytes) {
  if (bytes.size() < 4 + kChecksumBytes || bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return base::Corrupt("member record: bad magic");
  }
  const std::string_view covered = bytes.substr(0, bytes.size() - kChecksumBytes);
  base::ByteReader tail(bytes.substr(covered.size()));
  if (tail.U64() != XXH3_64bits(covered.data(), covered.size())) {
    return base::Corrupt("member record: checksum mismatch");
  }
  base::ByteReader r(covered.substr(4));
  if (const uint16_t version = r.U16(); version != kMemberFormatVersion) {
    return base::Corrupt("member record: unsupported version " + std::to_string(version));
  }
  MemberRecord m;
  const uint8_t flags = r.U8();
  r.U8();
  m.leaving = (flags & kLeaving) != 0;
  m.sent_at_ms = r.I64();
  m.standby_replicas = r.U32();
  m.instance_id = std::string(r.Bytes(kMaxInstanceIdBytes));
  m.api_url = std::string(r.Bytes(kMaxUrlBytes));
  const uint32_t count = r.U32();
  if (!r.ok() || count > kMaxActives || count > r.remaining() / 4) {
    return base::Corrupt("member record: bad shard count");
  }
  m.actives.resize(count);
  for (base::Partition& p : m.actives) p = base::Partition(static_cast<int32_t>(r.U32()));
  if (!r.done()) return base::Corrupt("member record: truncated or trailing bytes");
  if (m.instance_id.empty()) return base::Corrupt("member record: no instance id");
  if ((flags & ~kLeaving) != 0) return base::Corrupt("member record: unknown flags");
  if (!std::is_sorted(m.actives.begin(), m.actives.end())) {
    return base::Corrupt("member record: shards out of order");
  }
  return m;
}

}  // namespace oncecount::replica
