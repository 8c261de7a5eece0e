#include "processor/changelog/changelog_record.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

#include "tests/testing/serialized_bytes.h"

namespace oncecount::changelog {
namespace {

// The error names the check that failed.
::testing::AssertionResult Mentions(const std::string& error, std::string_view what) {
  if (error.find(what) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << error << "\" does not mention \"" << what << "\"";
}

// Offsets of the header (changelog_record.h) and of the batch body
// (changelog_record.cc), written out here independently of the codec.
constexpr size_t kVersionAt = 4;
constexpr size_t kTypeAt = 6;
constexpr size_t kHeaderBytes = 36;
constexpr size_t kChecksumBytes = 8;
constexpr size_t kBatchSegmentCountAt = kHeaderBytes + 32;  // after key, input range, seal time

std::string Encoded(const Record& record) {
  std::string out;
  EncodeRecord(record, out);
  return out;
}

using oncecount::testing::FromHex;
using oncecount::testing::Hex;
using oncecount::testing::Le;
using oncecount::testing::PutLe;
using oncecount::testing::Reseal;
using oncecount::testing::WithField;

BatchRecord SampleBatch() {
  BatchRecord b;
  b.partition = base::Partition(7);
  b.epoch = base::Epoch(3);
  b.seq = base::Seq(42);
  b.input_from = base::Offset(1000);
  b.input_to = base::Offset(1017);
  b.sealed_at_ms = 1'700'000'001'234;
  b.claim = 0xfeedface12345678;
  b.segments = {{1'700'000'000'000, {0x0123456789abcdefULL, 1, 0xffffffffffffffffULL}},
                {1'700'000'000'250, {}},
                {1'700'000'000'900, {99}}};
  b.counters = {{"clicks", 12}, {"likes", -4}, {std::string(256, 'x'), INT64_MAX}};
  b.stats.applied = 11;
  b.stats.duplicates = 3;
  b.stats.near_edge_duplicates = 1;
  b.stats.dead_lettered = {1, 2, 3, 4, 5, 6, 7, 8};
  return b;
}

template <class T>
T DecodedAs(std::string_view bytes) {
  base::Result<Record> decoded = DecodeRecord(bytes);
  if (!decoded.ok()) {
    ADD_FAILURE() << decoded.error();
    return T{};
  }
  if (!std::holds_alternative<T>(decoded.value())) {
    ADD_FAILURE() << "decoded to another record type";
    return T{};
  }
  return std::get<T>(decoded.value());
}

TEST(ChangelogRecord, RoundTripsABatch) {
  const BatchRecord batch = SampleBatch();
  EXPECT_EQ(DecodedAs<BatchRecord>(Encoded(batch)), batch);
}

TEST(ChangelogRecord, RoundTripsAnEmptyBatch) {
  BatchRecord batch;
  batch.partition = base::Partition(0);
  batch.epoch = base::Epoch(1);
  batch.seq = base::Seq(1);
  batch.input_from = base::Offset(5);
  batch.input_to = base::Offset(5);
  EXPECT_EQ(DecodedAs<BatchRecord>(Encoded(batch)), batch);
}

TEST(ChangelogRecord, RoundTripsAClaim) {
  const ClaimRecord claim{base::Partition(12), base::Epoch(9), base::Seq(123456789)};
  EXPECT_EQ(DecodedAs<ClaimRecord>(Encoded(claim)), claim);
}

TEST(ChangelogRecord, RoundTripsASnapshotChunk) {
  const SnapshotChunk chunk{base::Partition(3),
                            base::Epoch(2),
                            base::Seq(40),
                            1,
                            3,
                            std::string("\0snapshot\xff bytes", 16)};
  EXPECT_EQ(DecodedAs<SnapshotChunk>(Encoded(chunk)), chunk);
}

TEST(ChangelogRecord, RoundTripsASnapshotChunkOfTheFullChunkSize) {
  SnapshotChunk chunk{base::Partition(1),
                      base::Epoch(1),
                      base::Seq(1),
                      0,
                      1,
                      std::string(kSnapshotChunkBytes, '\x5a')};
  EXPECT_EQ(DecodedAs<SnapshotChunk>(Encoded(chunk)), chunk);
}

TEST(ChangelogRecord, RoundTripsANegativePartitionAndExtremeValues) {
  BatchRecord batch;
  batch.partition = base::Partition(-1);
  batch.epoch = base::Epoch(std::numeric_limits<uint64_t>::max());
  batch.seq = base::Seq(std::numeric_limits<uint64_t>::max());
  batch.input_from = base::Offset(std::numeric_limits<int64_t>::min());
  batch.input_to = base::Offset(std::numeric_limits<int64_t>::max());
  batch.segments = {{std::numeric_limits<int64_t>::min(), {0}}};
  batch.counters = {{"c", std::numeric_limits<int64_t>::min()}};
  batch.stats.dead_lettered[6] = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(DecodedAs<BatchRecord>(Encoded(batch)), batch);
}

TEST(ChangelogRecord, AppendsToWhatTheOutputAlreadyHolds) {
  const ClaimRecord claim{base::Partition(1), base::Epoch(2), base::Seq(3)};
  std::string out = "prefix";
  EncodeRecord(claim, out);
  ASSERT_EQ(out.substr(0, 6), "prefix");
  EXPECT_EQ(out.substr(6), Encoded(claim));
  EXPECT_EQ(DecodedAs<ClaimRecord>(std::string_view(out).substr(6)), claim);
}

// The bytes are the changelog's on-disk format: a change here breaks every
// existing changelog and needs a new format version.
TEST(ChangelogRecord, PinsTheBytesOfAClaim) {
  const std::string bytes =
      Encoded(ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 0x1122334455667788,
                          0x0102030405060708, "oncecount"});
  EXPECT_EQ(Hex(bytes),
            "4f43434c"            // 0: magic "OCCL"
            "0600"                // 4: format version 6
            "02"                  // 6: type 2, claim
            "00"                  // 7: reserved
            "03000000"            // 8: partition 3
            "0200000000000000"    // 12: epoch 2
            "0500000000000000"    // 20: base_seq 5
            "8877665544332211"    // 28: claim id
            "0807060504030201"    // 36: id hash key
            "09000000"            // 44: group length 9
            "6f6e6365636f756e74"  // 48: group "oncecount"
            "b3acbc29f3c5513f"    // 57: XXH3-64 of bytes 0..56
  );
  // The same fields, read back by offset as the layout comment places them.
  ASSERT_EQ(bytes.size(), 65u);
  EXPECT_EQ(bytes.substr(0, 4), "OCCL");
  EXPECT_EQ(Le(bytes, 4, 2), 6u);
  EXPECT_EQ(Le(bytes, 6, 1), 2u);
  EXPECT_EQ(Le(bytes, 7, 1), 0u);
  EXPECT_EQ(Le(bytes, 8, 4), 3u);
  EXPECT_EQ(Le(bytes, 12, 8), 2u);
  EXPECT_EQ(Le(bytes, 20, 8), 5u);
  EXPECT_EQ(Le(bytes, 28, 8), 0x1122334455667788u);
  EXPECT_EQ(Le(bytes, 36, 8), 0x0102030405060708u);
  EXPECT_EQ(Le(bytes, 44, 4), 9u);
  EXPECT_EQ(bytes.substr(48, 9), "oncecount");
  EXPECT_EQ(Le(bytes, 57, 8), XXH3_64bits(bytes.data(), 57));
}

TEST(ChangelogRecord, PinsTheBytesOfASnapshotChunk) {
  const std::string bytes = Encoded(
      SnapshotChunk{base::Partition(3), base::Epoch(2), base::Seq(5), 1, 2, "ab", 0xc1, "g"});
  EXPECT_EQ(Hex(bytes),
            "4f43434c"          // 0: magic "OCCL"
            "0600"              // 4: format version 6
            "03"                // 6: type 3, snapshot chunk
            "00"                // 7: reserved
            "03000000"          // 8: partition 3
            "0200000000000000"  // 12: epoch 2
            "0500000000000000"  // 20: seq 5
            "c100000000000000"  // 28: claim id 0xc1
            "01000000"          // 36: index 1
            "02000000"          // 40: count 2
            "02000000"          // 44: length 2
            "6162"              // 48: "ab"
            "01000000"          // 50: group length 1
            "67"                // 54: group "g"
            "a0e345acecda73bf"  // 55: XXH3-64 of bytes 0..54
  );
  ASSERT_EQ(bytes.size(), 63u);
  EXPECT_EQ(Le(bytes, 4, 2), 6u);
  EXPECT_EQ(Le(bytes, 6, 1), 3u);
  EXPECT_EQ(Le(bytes, 36, 4), 1u);
  EXPECT_EQ(Le(bytes, 40, 4), 2u);
  EXPECT_EQ(bytes.substr(48, 2), "ab");
  EXPECT_EQ(bytes.substr(54, 1), "g");
  EXPECT_EQ(Le(bytes, 55, 8), XXH3_64bits(bytes.data(), 55));
}

// A claim of format 5 (the bytes its writers wrote) names no group: it decodes with
// an empty one, which any deployment may take over.
TEST(ChangelogRecord, ReadsTheClaimsOfFormat5WithoutAGroup) {
  const std::string claim = FromHex(
      "4f43434c"
      "0500"
      "02"
      "00"
      "03000000"
      "0200000000000000"
      "0500000000000000"
      "8877665544332211"
      "0807060504030201"
      "8690323c4f603bac");
  EXPECT_EQ(DecodedAs<ClaimRecord>(claim),
            (ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 0x1122334455667788,
                         0x0102030405060708, ""}));
}

// A claim's group is at most kMaxGroupIdBytes: a longer one is written cut.
TEST(ChangelogRecord, WritesAClaimsGroupOfAtMostTheMostBytes) {
  std::string bytes = Encoded(ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 1, 2,
                                          std::string(kMaxGroupIdBytes, 'g')});
  EXPECT_EQ(DecodedAs<ClaimRecord>(bytes).group, std::string(kMaxGroupIdBytes, 'g'));
  bytes = Encoded(ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 1, 2,
                              std::string(kMaxGroupIdBytes + 1, 'g')});
  EXPECT_EQ(DecodedAs<ClaimRecord>(bytes).group, std::string(kMaxGroupIdBytes, 'g'))
      << "written cut at the most";
}

// A claim of format 4 (the bytes its writers wrote) has no body: its shard hashed ids
// unkeyed, and it decodes with key 0.
TEST(ChangelogRecord, ReadsTheClaimsOfFormat4AsUnkeyed) {
  const std::string claim = FromHex(
      "4f43434c"
      "0400"
      "02"
      "00"
      "03000000"
      "0200000000000000"
      "0500000000000000"
      "8877665544332211"
      "ebef1e6682dd786d");
  EXPECT_EQ(DecodedAs<ClaimRecord>(claim),
            (ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 0x1122334455667788, 0}));
}

TEST(ChangelogRecord, PinsTheBytesOfABatch) {
  BatchRecord batch;
  batch.partition = base::Partition(1);
  batch.epoch = base::Epoch(2);
  batch.seq = base::Seq(3);
  batch.claim = 0xc1;
  batch.hash_key = 0x0102030405060708;
  batch.input_from = base::Offset(10);
  batch.input_to = base::Offset(12);
  batch.sealed_at_ms = 2000;
  batch.segments = {{1000, {0xab}}};
  batch.counters = {{"a", 5}};
  batch.stats.applied = 1;
  batch.stats.duplicates = 1;
  batch.stats.dead_lettered[2] = 1;
  batch.stats.dead_lettered[7] = 2;
  const std::string bytes = Encoded(batch);
  EXPECT_EQ(Hex(bytes),
            "4f43434c"          // 0: magic "OCCL"
            "0600"              // 4: format version 6
            "01"                // 6: type 1, batch
            "00"                // 7: reserved
            "01000000"          // 8: partition 1
            "0200000000000000"  // 12: epoch 2
            "0300000000000000"  // 20: seq 3
            "c100000000000000"  // 28: claim id 0xc1
            "0807060504030201"  // 36: id hash key
            "0a00000000000000"  // 44: input_from 10
            "0c00000000000000"  // 52: input_to 12
            "d007000000000000"  // 60: sealed_at_ms 2000
            "01000000"          // 68: one segment
            "e803000000000000"  // 72:   time_ms 1000
            "01000000"          // 80:   one hash
            "ab00000000000000"  // 84:   0xab
            "01000000"          // 92: one counter
            "01000000"          // 96:   name length 1
            "61"                // 100:  "a"
            "0500000000000000"  // 101:  value 5
            "0100000000000000"  // 109: applied 1
            "0100000000000000"  // 117: duplicates 1
            "0000000000000000"  // 125: near-edge duplicates 0
            "0000000000000000"  // 133: dead-lettered missing_key
            "0000000000000000"  // 141:   key_too_long
            "0100000000000000"  // 149:   invalid_json 1
            "0000000000000000"  // 157:   missing_counter
            "0000000000000000"  // 165:   invalid_counter
            "0000000000000000"  // 173:   invalid_delta
            "0000000000000000"  // 181:   overflow
            "0200000000000000"  // 189:   late 2
            "ee7a2d035e206c8c"  // 197: XXH3-64 of bytes 0..196
  );
  ASSERT_EQ(bytes.size(), 205u);
  EXPECT_EQ(bytes.substr(0, 4), "OCCL");
  EXPECT_EQ(Le(bytes, 4, 2), 6u);
  EXPECT_EQ(Le(bytes, 6, 1), 1u);
  EXPECT_EQ(Le(bytes, 8, 4), 1u);
  EXPECT_EQ(Le(bytes, 12, 8), 2u);
  EXPECT_EQ(Le(bytes, 20, 8), 3u);
  EXPECT_EQ(Le(bytes, 28, 8), 0xc1u);
  EXPECT_EQ(Le(bytes, 36, 8), 0x0102030405060708u);
  EXPECT_EQ(Le(bytes, 60, 8), 2000u);
  EXPECT_EQ(Le(bytes, 189, 8), 2u);
  EXPECT_EQ(Le(bytes, 197, 8), XXH3_64bits(bytes.data(), 197));
}

// A batch of format 5 (its bytes as the last release wrote them): format 6 changed
// claims only, and the batch decodes as it did.
TEST(ChangelogRecord, ReadsTheBatchesOfFormat5) {
  const BatchRecord batch = DecodedAs<BatchRecord>(
      FromHex("4f43434c050001000100000002000000000000000300000000000000c100000000000000080706050403"
              "02010a000000000000000c00000000000000d00700000000000001000000e80300000000000001000000"
              "ab0000000000000001000000010000006105000000000000000100000000000000010000000000000000"
              "000000000000000000000000000000000000000000000001000000000000000000000000000000000000"
              "00000000000000000000000000000000000000000002000000000000009ff5c5afbdc8d4a3"));
  EXPECT_EQ(batch.partition, base::Partition(1));
  EXPECT_EQ(batch.epoch, base::Epoch(2));
  EXPECT_EQ(batch.seq, base::Seq(3));
  EXPECT_EQ(batch.claim, 0xc1u);
  EXPECT_EQ(batch.hash_key, 0x0102030405060708u);
  EXPECT_EQ(batch.input_to, base::Offset(12));
  EXPECT_EQ(batch.sealed_at_ms, 2000);
  EXPECT_EQ(batch.counters, (std::vector<CounterUpdate>{{"a", 5}}));
  EXPECT_EQ(batch.stats.dead_lettered[7], 2u);
}

// A batch of format 4, as the service wrote it before keys: its hashes are unkeyed,
// and it decodes with key 0.
TEST(ChangelogRecord, ReadsTheBatchesOfFormat4AsUnkeyed) {
  const std::string batch = FromHex(
      "4f43434c040001000100000002000000000000000300000000000000c1000000000000000a0000000000"
      "00000c00000000000000d00700000000000001000000e80300000000000001000000ab00000000000000"
      "010000000100000061050000000000000001000000000000000100000000000000000000000000000000"
      "000000000000000000000000000000010000000000000000000000000000000000000000000000000000"
      "000000000000000000000000000200000000000000df4490b1528dec37");
  BatchRecord expected;
  expected.partition = base::Partition(1);
  expected.epoch = base::Epoch(2);
  expected.seq = base::Seq(3);
  expected.claim = 0xc1;
  expected.input_from = base::Offset(10);
  expected.input_to = base::Offset(12);
  expected.sealed_at_ms = 2000;
  expected.segments = {{1000, {0xab}}};
  expected.counters = {{"a", 5}};
  expected.stats.applied = 1;
  expected.stats.duplicates = 1;
  expected.stats.dead_lettered[2] = 1;
  expected.stats.dead_lettered[7] = 2;
  EXPECT_EQ(DecodedAs<BatchRecord>(batch), expected);
}

// Format 3, as the service wrote it before the dead-letter reason `late`: still read,
// with no late dead letters.
TEST(ChangelogRecord, ReadsTheClaimsAndBatchesOfFormat3) {
  const std::string claim = FromHex(
      "4f43434c"
      "0300"
      "02"
      "00"
      "03000000"
      "0200000000000000"
      "0500000000000000"
      "8877665544332211"
      "8f3e8c057845c64a");
  EXPECT_EQ(DecodedAs<ClaimRecord>(claim),
            (ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 0x1122334455667788}));

  const std::string batch = FromHex(
      "4f43434c"
      "0300"
      "01"
      "00"
      "01000000"
      "0200000000000000"
      "0300000000000000"
      "c100000000000000"
      "0a00000000000000"
      "0c00000000000000"
      "d007000000000000"
      "01000000"
      "e803000000000000"
      "01000000"
      "ab00000000000000"
      "01000000"
      "01000000"
      "61"
      "0500000000000000"
      "0100000000000000"
      "0100000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "0100000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "249f5563014c1823");
  const BatchRecord decoded = DecodedAs<BatchRecord>(batch);
  EXPECT_EQ(decoded.claim, 0xc1u);
  EXPECT_EQ(decoded.input_to.value(), 12);
  EXPECT_EQ(decoded.segments, (std::vector<FilterSegment>{{1000, {0xab}}}));
  EXPECT_EQ(decoded.counters, (std::vector<CounterUpdate>{{"a", 5}}));
  EXPECT_EQ(decoded.stats.applied, 1u);
  EXPECT_EQ(decoded.stats.duplicates, 1u);
  EXPECT_EQ(decoded.stats.dead_lettered,
            (std::array<uint64_t, kDlqReasons>{0, 0, 1, 0, 0, 0, 0, 0}));
}

// Format 2, as the service wrote it before claim ids: still read, with claim id 0.
TEST(ChangelogRecord, ReadsTheClaimsAndBatchesOfFormat2) {
  const std::string claim = FromHex(
      "4f43434c"
      "0200"
      "02"
      "00"
      "03000000"
      "0200000000000000"
      "0500000000000000"
      "4d7178660b4c2b59");
  EXPECT_EQ(DecodedAs<ClaimRecord>(claim),
            (ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(5), 0}));

  const std::string batch = FromHex(
      "4f43434c"
      "0200"
      "01"
      "00"
      "01000000"
      "0200000000000000"
      "0300000000000000"
      "0a00000000000000"
      "0c00000000000000"
      "d007000000000000"
      "01000000"
      "e803000000000000"
      "01000000"
      "ab00000000000000"
      "01000000"
      "01000000"
      "61"
      "0500000000000000"
      "0100000000000000"
      "0100000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "0100000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "0000000000000000"
      "7e07ec10119219ae");
  const BatchRecord decoded = DecodedAs<BatchRecord>(batch);
  EXPECT_EQ(decoded.epoch.value(), 2u);
  EXPECT_EQ(decoded.seq.value(), 3u);
  EXPECT_EQ(decoded.claim, 0u);
  EXPECT_EQ(decoded.input_from.value(), 10);
  EXPECT_EQ(decoded.input_to.value(), 12);
  EXPECT_EQ(decoded.sealed_at_ms, 2000);
  EXPECT_EQ(decoded.counters, (std::vector<CounterUpdate>{{"a", 5}}));
  EXPECT_EQ(decoded.stats.dead_lettered[2], 1u);
}

TEST(ChangelogRecord, RejectsEverySingleByteCorruptionOfABatch) {
  const std::string good = Encoded(SampleBatch());
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ flip);
      EXPECT_FALSE(DecodeRecord(bad).ok()) << "byte " << i << " ^ " << int{flip};
    }
  }
}

TEST(ChangelogRecord, ReportsAChecksumMismatch) {
  std::string bad = Encoded(SampleBatch());
  bad[kHeaderBytes] ^= 1;
  const auto decoded = DecodeRecord(bad);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "checksum"));
}

TEST(ChangelogRecord, RejectsAWrongMagic) {
  std::string bad = Encoded(ClaimRecord{base::Partition(1), base::Epoch(1), base::Seq(1)});
  bad[0] = 'X';
  Reseal(bad);
  const auto decoded = DecodeRecord(bad);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "magic"));
}

TEST(ChangelogRecord, RejectsAnotherFormatVersion) {
  for (uint64_t version :
       {uint64_t{0}, uint64_t{1}, uint64_t{kChangelogFormatVersion} + 1, uint64_t{0xffff}}) {
    const auto decoded = DecodeRecord(WithField(Encoded(SampleBatch()), kVersionAt, 2, version));
    ASSERT_FALSE(decoded.ok()) << version;
    EXPECT_TRUE(Mentions(decoded.message(), "version " + std::to_string(version)));
  }
}

TEST(ChangelogRecord, RejectsAnUnknownRecordType) {
  for (uint64_t type : {0, 4, 255}) {
    const auto decoded = DecodeRecord(WithField(
        Encoded(ClaimRecord{base::Partition(1), base::Epoch(1), base::Seq(1)}), kTypeAt, 1, type));
    ASSERT_FALSE(decoded.ok()) << type;
    EXPECT_TRUE(Mentions(decoded.message(), "unknown type"));
  }
}

TEST(ChangelogRecord, RejectsEveryTruncation) {
  for (const Record& record :
       {Record{SampleBatch()},
        Record{ClaimRecord{base::Partition(1), base::Epoch(2), base::Seq(3)}},
        Record{SnapshotChunk{base::Partition(1), base::Epoch(2), base::Seq(3), 0, 2, "abc"}}}) {
    const std::string good = Encoded(record);
    for (size_t n = 0; n < good.size(); ++n) {
      EXPECT_FALSE(DecodeRecord(std::string_view(good).substr(0, n)).ok()) << n;
    }
  }
}

TEST(ChangelogRecord, RejectsATruncatedBodyEvenWithAValidChecksum) {
  // Drop the last stats word and re-seal: the checksum holds, the body is short.
  std::string good = Encoded(SampleBatch());
  std::string bad = good.substr(0, good.size() - kChecksumBytes - 8) + std::string(8, '\0');
  Reseal(bad);
  const auto decoded = DecodeRecord(bad);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "truncated"));
}

TEST(ChangelogRecord, RejectsTrailingBytesAfterAnyBody) {
  for (const Record& record :
       {Record{SampleBatch()},
        Record{ClaimRecord{base::Partition(1), base::Epoch(2), base::Seq(3)}},
        Record{SnapshotChunk{base::Partition(1), base::Epoch(2), base::Seq(3), 0, 2, "abc"}}}) {
    const std::string good = Encoded(record);
    std::string bad =
        good.substr(0, good.size() - kChecksumBytes) + "junk" + std::string(kChecksumBytes, '\0');
    Reseal(bad);
    EXPECT_FALSE(DecodeRecord(bad).ok()) << record.index();
  }
}

TEST(ChangelogRecord, RejectsAnOversizeRecord) {
  const SnapshotChunk chunk{
      base::Partition(1), base::Epoch(1), base::Seq(1), 0, 1, std::string(kMaxRecordBytes, 'z')};
  const auto decoded = DecodeRecord(Encoded(chunk));
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "too large"));
}

TEST(ChangelogRecord, RejectsASnapshotChunkWhoseIndexIsNotBelowItsCount) {
  for (const auto& [index, count] : {std::pair<uint32_t, uint32_t>{2, 2}, {3, 2}, {0, 0}}) {
    const auto decoded = DecodeRecord(Encoded(
        SnapshotChunk{base::Partition(1), base::Epoch(1), base::Seq(1), index, count, "x"}));
    ASSERT_FALSE(decoded.ok()) << index << "/" << count;
    EXPECT_TRUE(Mentions(decoded.message(), "snapshot chunk"));
  }
  EXPECT_TRUE(DecodeRecord(Encoded(SnapshotChunk{base::Partition(1), base::Epoch(1), base::Seq(1),
                                                 1, 2, "x"}))
                  .ok());
}

TEST(ChangelogRecord, RejectsABatchWhoseInputRangeEndsBeforeItStarts) {
  BatchRecord batch;
  batch.seq = base::Seq(1);
  batch.input_from = base::Offset(10);
  batch.input_to = base::Offset(9);
  const auto decoded = DecodeRecord(Encoded(batch));
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "input range"));
}

// Counts that claim more elements than the record's bytes could hold are refused
// before anything is allocated for them: with 2^32 - 1 segments of 32 bytes each a
// resize would ask for 128 GiB.
TEST(ChangelogRecord, RejectsASegmentCountTheBytesCannotHold) {
  const std::string good = Encoded(SampleBatch());
  ASSERT_EQ(Le(good, kBatchSegmentCountAt, 4), 3u);
  for (uint64_t count : {uint64_t{4}, uint64_t{1000}, uint64_t{0xffffffff}}) {
    const auto decoded = DecodeRecord(WithField(good, kBatchSegmentCountAt, 4, count));
    ASSERT_FALSE(decoded.ok()) << count;
  }
  const auto huge = DecodeRecord(WithField(good, kBatchSegmentCountAt, 4, 0xffffffff));
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(Mentions(huge.message(), "segment count"));
}

TEST(ChangelogRecord, RejectsAHashCountTheBytesCannotHold) {
  const std::string good = Encoded(SampleBatch());
  const size_t hash_count_at = kBatchSegmentCountAt + 4 + 8;  // first segment's count
  ASSERT_EQ(Le(good, hash_count_at, 4), 3u);
  const auto decoded = DecodeRecord(WithField(good, hash_count_at, 4, 0xffffffff));
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "hash count"));
}

TEST(ChangelogRecord, RejectsACounterCountTheBytesCannotHold) {
  BatchRecord batch;
  batch.seq = base::Seq(1);
  batch.counters = {{"a", 1}};
  const std::string good = Encoded(batch);
  const size_t counter_count_at = kBatchSegmentCountAt + 4;  // no segments
  ASSERT_EQ(Le(good, counter_count_at, 4), 1u);
  const auto decoded = DecodeRecord(WithField(good, counter_count_at, 4, 0xffffffff));
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Mentions(decoded.message(), "counter count"));
}

TEST(ChangelogRecord, RejectsACounterNameLongerThanTheLimitOrTheRecord) {
  BatchRecord batch;
  batch.seq = base::Seq(1);
  batch.counters = {{"a", 1}};
  const std::string good = Encoded(batch);
  const size_t name_length_at = kBatchSegmentCountAt + 4 + 4;
  ASSERT_EQ(Le(good, name_length_at, 4), 1u);
  for (uint64_t length : {uint64_t{257}, uint64_t{0xffffffff}}) {
    EXPECT_FALSE(DecodeRecord(WithField(good, name_length_at, 4, length)).ok()) << length;
  }
  batch.counters = {{std::string(257, 'n'), 1}};
  EXPECT_FALSE(DecodeRecord(Encoded(batch)).ok());
}

TEST(ChangelogRecord, RejectsASnapshotChunkLengthTheBytesCannotHold) {
  const std::string good =
      Encoded(SnapshotChunk{base::Partition(1), base::Epoch(1), base::Seq(1), 0, 1, "abc"});
  const size_t length_at = kHeaderBytes + 8;  // after index and count
  ASSERT_EQ(Le(good, length_at, 4), 3u);
  EXPECT_FALSE(DecodeRecord(WithField(good, length_at, 4, 0xffffffff)).ok());
  EXPECT_FALSE(DecodeRecord(WithField(good, length_at, 4, 4)).ok());
}

TEST(ShardStats, AddsEveryFieldAndTotalsTheDeadLetters) {
  ShardStats a;
  a.applied = 1;
  a.duplicates = 2;
  a.near_edge_duplicates = 3;
  a.dead_lettered = {1, 0, 0, 0, 0, 0, 2, 4};
  ShardStats b;
  b.applied = 10;
  b.duplicates = 20;
  b.near_edge_duplicates = 30;
  b.dead_lettered = {0, 1, 1, 1, 1, 1, 1, 1};
  a.Add(b);
  EXPECT_EQ(a.applied, 11u);
  EXPECT_EQ(a.duplicates, 22u);
  EXPECT_EQ(a.near_edge_duplicates, 33u);
  EXPECT_EQ(a.dead_lettered, (std::array<uint64_t, kDlqReasons>{1, 1, 1, 1, 1, 1, 3, 5}));
  EXPECT_EQ(a.dead_lettered_total(), 14u);
}

TEST(ChangelogRecord, SizeConstantsWritersCutBatchesByMatchTheEncoding) {
  BatchRecord b;
  b.segments = {{1, {1, 2}}, {2, {3}}};
  b.counters = {{"short", 1}, {std::string(kMaxCounterNameBytes, 'n'), 2}};
  std::string bytes;
  EncodeRecord(b, bytes);
  EXPECT_EQ(bytes.size(), kBatchRecordFixedBytes + 2 * kSegmentBytes + 3 * kHashBytes +
                              CounterUpdateBytes(5) + CounterUpdateBytes(kMaxCounterNameBytes));
  EXPECT_EQ(BatchRecordBytes(b), bytes.size());
  bytes.clear();
  EncodeRecord(SampleBatch(), bytes);
  EXPECT_EQ(BatchRecordBytes(SampleBatch()), bytes.size());
  SnapshotChunk c;
  c.bytes.assign(SnapshotChunkPayload(kMinRecordBytes), 's');
  c.group.assign(kMaxGroupIdBytes, 'g');  // the longest a chunk names
  bytes.clear();
  EncodeRecord(c, bytes);
  EXPECT_EQ(bytes.size(), kMinRecordBytes);
}

TEST(ChangelogRecord, CutsASnapshotIntoChunksUnderTheRecordLimitThatJoinBackInOrder) {
  std::string bytes(10000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  const std::vector<std::string> records = EncodeSnapshotChunks(
      base::Partition(2), base::Epoch(3), 0xc1, "oncecount", base::Seq(9), bytes, kMinRecordBytes);
  ASSERT_EQ(records.size(), (bytes.size() + SnapshotChunkPayload(kMinRecordBytes) - 1) /
                                SnapshotChunkPayload(kMinRecordBytes));
  std::string joined;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_LE(records[i].size(), kMinRecordBytes);
    auto decoded = DecodeRecord(records[i]);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    const auto& chunk = std::get<SnapshotChunk>(decoded.value());
    EXPECT_EQ(chunk.index, i);
    EXPECT_EQ(chunk.count, records.size());
    EXPECT_EQ(chunk.seq, base::Seq(9));
    EXPECT_EQ(chunk.claim, 0xc1u);
    EXPECT_EQ(chunk.group, "oncecount");
    joined += chunk.bytes;
  }
  EXPECT_EQ(joined, bytes);
}

TEST(ChangelogRecord, DecodesTheLargestBatchAWriterMayWrite) {
  BatchRecord b;
  b.segments = {
      {1, std::vector<uint64_t>(
              (kMaxRecordBytes - kBatchRecordFixedBytes - kSegmentBytes) / kHashBytes, 7)}};
  std::string bytes;
  EncodeRecord(b, bytes);
  ASSERT_LE(bytes.size(), kMaxRecordBytes);
  ASSERT_GT(bytes.size(), kMaxRecordBytes - kHashBytes);
  auto decoded = DecodeRecord(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(std::get<BatchRecord>(decoded.value()), b);
}

}  // namespace
}  // namespace oncecount::changelog
