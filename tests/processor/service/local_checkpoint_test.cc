#include "processor/service/local_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testing/serialized_bytes.h"

namespace oncecount::service {
namespace {

using testing::Hex;
using testing::WithField;

LocalCheckpoint Example() {
  return LocalCheckpoint{base::Partition(3), base::Epoch(7),     0xabcd,
                         base::Seq(42),      base::Offset(1000), "snap",
                         base::Offset(900),  base::Offset(1003)};
}

// An older version's bytes with their checksum appended.
std::string Sealed(std::string bytes) {
  bytes.append(8, '\0');
  testing::Reseal(bytes);
  return bytes;
}

TEST(LocalCheckpoint, PinsItsBytes) {
  const std::string bytes = EncodeCheckpoint(Example());
  EXPECT_EQ(Hex(bytes.substr(0, bytes.size() - 8)),
            "4f434350"          // "OCCP"
            "0300"              // version 3
            "03000000"          // partition 3
            "0700000000000000"  // epoch 7
            "cdab000000000000"  // claim
            "2a00000000000000"  // seq 42
            "e803000000000000"  // changelog offset 1000
            "8403000000000000"  // check from 900
            "eb03000000000000"  // snapshot end 1003
            "04000000736e6170"  // "snap"
  );
  EXPECT_EQ(testing::Le(bytes, bytes.size() - 8, 8), XXH3_64bits(bytes.data(), bytes.size() - 8));
  auto decoded = DecodeCheckpoint(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value(), Example());

  LocalCheckpoint unknown = Example();
  unknown.check_from.reset();
  unknown.snapshot_end.reset();
  const std::string unknown_bytes = EncodeCheckpoint(unknown);
  EXPECT_EQ(Hex(unknown_bytes.substr(4 + 2 + 4 + 8 * 4, 16)), "ffffffffffffffffffffffffffffffff");
  EXPECT_EQ(DecodeCheckpoint(unknown_bytes).value(), unknown);
}

// Files written before the snapshot end (version 2) still decode, without it: their
// lineage is then checked from where the claimer's restore had read to.
TEST(LocalCheckpoint, DecodesAVersion2FileWithoutASnapshotEnd) {
  std::string v2 = testing::FromHex(
      "4f434350"          // "OCCP"
      "0200"              // version 2
      "03000000"          // partition 3
      "0700000000000000"  // epoch 7
      "cdab000000000000"  // claim
      "2a00000000000000"  // seq 42
      "e803000000000000"  // changelog offset 1000
      "8403000000000000"  // check from 900
      "04000000736e6170"  // "snap"
  );
  auto decoded = DecodeCheckpoint(Sealed(v2));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  LocalCheckpoint expected = Example();
  expected.snapshot_end.reset();
  EXPECT_EQ(decoded.value(), expected);
}

// Files written before the claim offset (version 1) still decode, without it: their
// lineage is then checked from the changelog partition's log start.
TEST(LocalCheckpoint, DecodesAVersion1FileWithoutAClaimOffset) {
  std::string v1 = testing::FromHex(
      "4f434350"          // "OCCP"
      "0100"              // version 1
      "03000000"          // partition 3
      "0700000000000000"  // epoch 7
      "cdab000000000000"  // claim
      "2a00000000000000"  // seq 42
      "e803000000000000"  // changelog offset 1000
      "04000000736e6170"  // "snap"
  );
  auto decoded = DecodeCheckpoint(Sealed(v1));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  LocalCheckpoint expected = Example();
  expected.check_from.reset();
  expected.snapshot_end.reset();
  EXPECT_EQ(decoded.value(), expected);
}

TEST(LocalCheckpoint, RejectsEveryCorruptedByteAndEveryTruncation) {
  const std::string good = EncodeCheckpoint(Example());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    EXPECT_FALSE(DecodeCheckpoint(bad).ok()) << "byte " << i;
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeCheckpoint(std::string_view(good).substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeCheckpoint(good + "x").ok());
}

TEST(LocalCheckpoint, RejectsAnImpossiblePositionEvenWithAGoodChecksum) {
  const std::string good = EncodeCheckpoint(Example());
  constexpr size_t kSeqAt = 4 + 2 + 4 + 8 + 8, kOffsetAt = kSeqAt + 8;
  std::string no_batch = WithField(good, kSeqAt, 8, 0);
  std::string negative_offset = WithField(good, kOffsetAt, 8, static_cast<uint64_t>(-5));
  EXPECT_FALSE(DecodeCheckpoint(no_batch).ok());
  EXPECT_FALSE(DecodeCheckpoint(negative_offset).ok());
  constexpr size_t kClaimOffsetAt = kOffsetAt + 8;
  EXPECT_FALSE(DecodeCheckpoint(WithField(good, kClaimOffsetAt, 8, 1001)).ok())
      << "a claim after its own batch's transaction";
  EXPECT_FALSE(
      DecodeCheckpoint(WithField(good, kClaimOffsetAt, 8, static_cast<uint64_t>(-2))).ok());
  EXPECT_TRUE(DecodeCheckpoint(WithField(good, kClaimOffsetAt, 8, 1000)).ok());
  constexpr size_t kSnapshotEndAt = kClaimOffsetAt + 8;
  EXPECT_FALSE(DecodeCheckpoint(WithField(good, kSnapshotEndAt, 8, 999)).ok())
      << "a snapshot that ends before its own transaction begins";
  EXPECT_FALSE(
      DecodeCheckpoint(WithField(WithField(good, kClaimOffsetAt, 8, static_cast<uint64_t>(-1)),
                                 kSnapshotEndAt, 8, 1003))
          .ok())
      << "a run known to be the owner's alone from a claim offset it does not know";
  EXPECT_TRUE(DecodeCheckpoint(WithField(good, kSnapshotEndAt, 8, static_cast<uint64_t>(-1))).ok());
}

class CheckpointFiles : public ::testing::Test {
 protected:
  CheckpointFiles() {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~CheckpointFiles() override { std::filesystem::remove_all(dir_); }
  const std::string dir_ = ::testing::TempDir() + "checkpoint-files-" + std::to_string(getpid());
};

TEST_F(CheckpointFiles, WritesAndReadsBackPerChangelogAndShard) {
  ASSERT_TRUE(WriteCheckpoint(dir_, "events.changelog", Example()).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/events.changelog-3.checkpoint"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/events.changelog-3.checkpoint.tmp"));
  auto read = ReadCheckpoint(dir_, "events.changelog", base::Partition(3));
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_TRUE(read.value().has_value());
  EXPECT_EQ(*read.value(), Example());
  // Another shard, another changelog: none.
  auto none = ReadCheckpoint(dir_, "events.changelog", base::Partition(4));
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none.value().has_value());
  auto other = ReadCheckpoint(dir_, "other.changelog", base::Partition(3));
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_FALSE(other.value().has_value());
}

TEST_F(CheckpointFiles, ANewCheckpointReplacesTheOldOne) {
  ASSERT_TRUE(WriteCheckpoint(dir_, "events.changelog", Example()).ok());
  LocalCheckpoint newer = Example();
  newer.seq = base::Seq(50);
  newer.snapshot = "newer snapshot";
  ASSERT_TRUE(WriteCheckpoint(dir_, "events.changelog", newer).ok());
  auto read = ReadCheckpoint(dir_, "events.changelog", base::Partition(3));
  ASSERT_TRUE(read.ok() && read.value().has_value());
  EXPECT_EQ(*read.value(), newer);
}

TEST_F(CheckpointFiles, ReportsACorruptFileOrOneOfAnotherShard) {
  ASSERT_TRUE(WriteCheckpoint(dir_, "events.changelog", Example()).ok());
  std::filesystem::rename(dir_ + "/events.changelog-3.checkpoint",
                          dir_ + "/events.changelog-5.checkpoint");
  auto moved = ReadCheckpoint(dir_, "events.changelog", base::Partition(5));
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.message().find("holds shard 3"), std::string::npos) << moved.error();
  std::ofstream(dir_ + "/events.changelog-6.checkpoint") << "not a checkpoint";
  auto corrupt = ReadCheckpoint(dir_, "events.changelog", base::Partition(6));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.message().find("bad magic"), std::string::npos) << corrupt.error();
}

TEST_F(CheckpointFiles, SaysWhyItCannotWrite) {
  const base::Status written = WriteCheckpoint(dir_ + "/missing", "events.changelog", Example());
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.code(), base::Errc::kIo);
  EXPECT_NE(written.message().find("cannot create"), std::string::npos) << written.error();
}

}  // namespace
}  // namespace oncecount::service
