// MemberRecord: one instance's heartbeat on the members topic (<input>.members, one
// partition). Every instance writes its own about once a second — who it is, where
// its HTTP API listens, which shards it owns, and whether it is leaving — and reads
// everyone's, which is how instances agree on who stands by for which shard without
// a coordination service of their own (membership.h).
//
// Layout (integers little-endian):
//
//   offset  size  field
//   0       4     magic "OCMB"
//   4       2     format version (1)
//   6       1     flags (bit 0: leaving)
//   7       1     reserved, 0
//   8       8     sent_at_ms: the writer's wall clock
//   16      4     standby_replicas the writer is configured with
//   20      ...   instance id (u32 length + bytes, at most 256)
//           ...   API URL (u32 length + bytes, at most 1024)
//           ...   active shards (u32 count, then i32 partitions, ascending)
//   end-8   8     XXH3-64 of every byte before it
//
// The record's key on the topic is the instance id. tests/processor/replica/
// member_record_test.cc pins the bytes.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/ids.h"
#include "processor/base/result.h"

namespace oncecount::replica {

inline constexpr uint16_t kMemberFormatVersion = 1;
inline constexpr size_t kMaxInstanceIdBytes = 256;
inline constexpr size_t kMaxUrlBytes = 1024;

struct MemberRecord {
  std::string instance_id;
  std::string api_url;
  std::vector<base::Partition> actives;  // ascending
  int64_t standby_replicas = 0;
  int64_t sent_at_ms = 0;
  bool leaving = false;
  friend bool operator==(const MemberRecord&, const MemberRecord&) = default;
};

std::string EncodeMemberRecord(const MemberRecord& record);
base::Result<MemberRecord> DecodeMemberRecord(std::string_view bytes);

}  // namespace oncecount::replica
