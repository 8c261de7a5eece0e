#include "processor/replica/member_record.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

#include "tests/testing/serialized_bytes.h"

namespace oncecount::replica {
namespace {

using oncecount::testing::Hex;
using oncecount::testing::Le;
using oncecount::testing::Reseal;
using oncecount::testing::WithField;

MemberRecord Sample() {
  MemberRecord m;
  m.instance_id = "a";
  m.api_url = "http://h:1";
  m.actives = {base::Partition(0), base::Partition(3)};
  m.standby_replicas = 1;
  m.sent_at_ms = 1000;
  return m;
}

TEST(MemberRecord, RoundTrips) {
  MemberRecord m = Sample();
  m.leaving = true;
  m.instance_id = std::string(256, 'i');
  auto decoded = DecodeMemberRecord(EncodeMemberRecord(m));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value(), m);
}

// The bytes every instance of a cluster reads: a change needs a new version.
TEST(MemberRecord, PinsItsBytes) {
  const std::string bytes = EncodeMemberRecord(Sample());
  EXPECT_EQ(Hex(bytes),
            "4f434d42"                      // 0: magic "OCMB"
            "0100"                          // 4: format version 1
            "00"                            // 6: flags: not leaving
            "00"                            // 7: reserved
            "e803000000000000"              // 8: sent_at_ms 1000
            "01000000"                      // 16: standby_replicas 1
            "0100000061"                    // 20: instance id "a"
            "0a000000687474703a2f2f683a31"  // 25: API URL "http://h:1"
            "02000000"                      // 39: two active shards
            "0000000003000000"              // 43: 0, 3
            "9e7b94de4ad498ed"              // 51: XXH3-64 of bytes 0..50
  );
  ASSERT_EQ(bytes.size(), 59u);
  EXPECT_EQ(Le(bytes, 51, 8), XXH3_64bits(bytes.data(), 51));
}

TEST(MemberRecord, RejectsEverySingleByteCorruption) {
  const std::string good = EncodeMemberRecord(Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    EXPECT_FALSE(DecodeMemberRecord(bad).ok()) << "byte " << i;
  }
}

TEST(MemberRecord, RejectsEveryTruncation) {
  const std::string good = EncodeMemberRecord(Sample());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeMemberRecord(good.substr(0, n)).ok()) << n << " bytes";
  }
}

TEST(MemberRecord, RejectsBadFieldsBehindAValidChecksum) {
  const std::string good = EncodeMemberRecord(Sample());
  const struct {
    const char* what;
    size_t offset;
    size_t size;
    uint64_t value;
  } bad[] = {
      {"another version", 4, 2, 2},
      {"unknown flags", 6, 1, 2},
      {"an instance id longer than it is", 20, 4, 500},
      {"a shard count beyond the record", 39, 4, 1000},
      {"shards out of order", 43, 4, 7},
  };
  for (const auto& b : bad) {
    const auto decoded = DecodeMemberRecord(WithField(good, b.offset, b.size, b.value));
    EXPECT_FALSE(decoded.ok()) << "accepted " << b.what;
  }
  MemberRecord anonymous = Sample();
  anonymous.instance_id.clear();
  EXPECT_FALSE(DecodeMemberRecord(EncodeMemberRecord(anonymous)).ok());
}

}  // namespace
}  // namespace oncecount::replica
