// The serialized state of Gaussian filters: an FBF with Gaussian constituents (mode
// fbf, constituent byte 1) and the single Gaussian filter of filter-eval (mode
// gaussian), with pinned bytes for each.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/experiments/experiment_filters.h"
#include "processor/filter/experiments/gaussian_dedup.h"
#include "processor/filter/state_codec.h"
#include "tests/testing/serialized_bytes.h"

namespace oncecount::filter {
namespace {

using oncecount::testing::Hex;
using oncecount::testing::Le;
using oncecount::testing::WithField;

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0x6A055)};
}

std::string Bytes(const DedupFilter& f) {
  std::string out;
  f.Serialize(out);
  return out;
}

FbfConfig TinyConfig(uint32_t cell_bits) {
  FbfConfig c;  // check: pairs
  c.bits_per_filter = 64;
  c.hashes = 3;
  c.past_filters = 1;
  c.refresh = Millis{1000};
  c.seed = 7;
  c.cell_bits = cell_bits;
  return c;
}

GaussianForgetfulFilter PinnedGaussianFbf() {
  auto created = GaussianForgetfulFilter::Create(TinyConfig(4), Millis{0});
  EXPECT_TRUE(created.ok());
  GaussianForgetfulFilter f = std::move(created).value();
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)), Verdict::kNew);
  f.AdvanceTo(Millis{1500});
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-2/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)), Verdict::kDuplicate);
  return f;
}

GaussianDedup PinnedGaussian() {
  auto created = GaussianDedup::Create({32, 2, 8, ExpKind::kFast, 11});
  EXPECT_TRUE(created.ok());
  GaussianDedup g = std::move(created).value();
  g.AdvanceTo(Millis{42});
  EXPECT_EQ(g.TestAndInsert(HashIdempotencyId("client-1/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(g.TestAndInsert(HashIdempotencyId("client-1/1", kUnkeyed)), Verdict::kDuplicate);
  return g;
}

// If these fail, the format changed: see the note on the pinned FBF in
// state_codec_test.cc.
constexpr std::string_view kPinnedGaussianFbfHex =
    "4f43444603000301e60100000000000040000000000000000300000000020000"
    "01000000e803000000000000010000000000000000008dedb5a0f7c6b03e0000"
    "00000000000040000000e8030000000000000107000000000000000000000000"
    "0000000000000000000000000401e80300000000000004000000dc0500000000"
    "0000d007000000000000dc050000000000000500000000000000030000000000"
    "0000010000000000000000000000000000000000000000000000000000000000"
    "00000000000000000080000000000000000004000000d9c051dae0b993f20100"
    "000000000000ffffffffffffff7fffffffffffffff7f04000000000000000021"
    "95fd9d2501000000000000000000000000104296ecef9c46929f020000005547"
    "f836216ab5120300000000000000e803000000000000ffffffffffffff7f0400"
    "0000000000004296ecef9cf929f929000000929f95fddf99ecef9c4695fdfece"
    "69240100001011325718df58517d02000000000000000000000000000000e803"
    "00000000000004000000000000009c4612000000001052d9df591200929f9f12"
    "4296fdef9c46120000104296ecef00c4b7b597ab35b800000000000000000000"
    "0000000000000000000000000000040000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000dfc481c67c7e191c";
// The same state as format 2 wrote it (no memory bound, nothing forgotten early).
constexpr std::string_view kPinnedGaussianFbfVersion2Hex =
    "4f43444602000301ce0100000000000040000000000000000300000000020000"
    "01000000e803000000000000010000000000000000008dedb5a0f7c6b03e0000"
    "00000000000040000000e8030000000000000107000000000000000000000000"
    "000000000401e80300000000000004000000dc05000000000000d00700000000"
    "0000dc0500000000000005000000000000000300000000000000010000000000"
    "000000000000000000000000000000000000000000000000000004000000d9c0"
    "51dae0b993f20100000000000000ffffffffffffff7fffffffffffffff7f0400"
    "000000000000002195fd9d2501000000000000000000000000104296ecef9c46"
    "929f020000005547f836216ab5120300000000000000e803000000000000ffff"
    "ffffffffff7f04000000000000004296ecef9cf929f929000000929f95fddf99"
    "ecef9c4695fdfece69240100001011325718df58517d02000000000000000000"
    "000000000000e80300000000000004000000000000009c4612000000001052d9"
    "df591200929f9f124296fdef9c46120000104296ecef00c4b7b597ab35b80000"
    "0000000000000000000000000000000000000000000004000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000d691"
    "f315492e579b";
constexpr std::string_view kPinnedGaussianHex =
    "4f43444603000400560000000000000020000000000000000200000008010b00"
    "00000000000001000000000000002a0000000000000001000000000000000400"
    "00000000000000000003229cff9ce1ffe19c54220b0300000000000000000000"
    "000000000000f81d11c744ca35af";

TEST(GaussianStateCodec, SerializesATinyGaussianFbfToThePinnedBytes) {
  EXPECT_EQ(Hex(Bytes(PinnedGaussianFbf())), kPinnedGaussianFbfHex);
}

TEST(GaussianStateCodec, ReadsTheFormat2BytesOfATinyGaussianFbf) {
  auto decoded = DecodeExperimentFilter(testing::FromHex(kPinnedGaussianFbfVersion2Hex));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(Hex(Bytes(*decoded.value())), kPinnedGaussianFbfHex);
}

TEST(GaussianStateCodec, SerializesATinyGaussianFilterToThePinnedBytes) {
  EXPECT_EQ(Hex(Bytes(PinnedGaussian())), kPinnedGaussianHex);
}

TEST(GaussianStateCodec, MarksGaussianConstituentsInTheHeaderAndKeepsVersionAndChecksum) {
  const std::string b = Bytes(PinnedGaussianFbf());
  EXPECT_EQ(b.substr(0, 4), "OCDF");
  EXPECT_EQ(Le(b, 4, 2), kStateFormatVersion);
  EXPECT_EQ(Le(b, 6, 1), static_cast<uint64_t>(DedupMode::kFbf));
  EXPECT_EQ(Le(b, 7, 1), 1u);
  EXPECT_EQ(Le(b, 8, 8), b.size() - 24);
  const std::string g = Bytes(PinnedGaussian());
  EXPECT_EQ(Le(g, 6, 1), static_cast<uint64_t>(DedupMode::kGaussian));
  EXPECT_EQ(Le(g, 7, 1), 0u);
}

void ExpectSameFutureBehaviour(DedupFilter& a, DedupFilter& b) {
  for (uint64_t i = 0; i < 3000; ++i) {
    a.AdvanceTo(Millis{static_cast<int64_t>(2000 + i)});
    b.AdvanceTo(Millis{static_cast<int64_t>(2000 + i)});
    const IdHash id = Id(i % 2000);
    ASSERT_EQ(a.TestAndInsert(id), b.TestAndInsert(id)) << i;
  }
  EXPECT_EQ(Bytes(a), Bytes(b));
  EXPECT_EQ(a.Digest(), b.Digest());
}

TEST(GaussianStateCodec, RoundTripsAGaussianFbfOfEveryCellWidth) {
  for (uint32_t bits : {4u, 8u, 64u}) {
    FbfConfig c = TinyConfig(bits);
    c.bits_per_filter = 2000;
    c.adaptive = true;
    c.target_fpp = 1e-3;
    auto created = GaussianForgetfulFilter::Create(c, Millis{0});
    ASSERT_TRUE(created.ok()) << created.error();
    GaussianForgetfulFilter f = std::move(created).value();
    for (uint64_t i = 0; i < 1500; ++i) {
      f.AdvanceTo(Millis{static_cast<int64_t>(i)});
      f.TestAndInsert(Id(i));
    }
    const std::string bytes = Bytes(f);
    auto decoded = DecodeExperimentFilter(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    EXPECT_EQ(Bytes(*decoded.value()), bytes);
    ASSERT_NE(dynamic_cast<GaussianForgetfulFilter*>(decoded.value().get()), nullptr);
    ExpectSameFutureBehaviour(f, *decoded.value());
  }
}

TEST(GaussianStateCodec, LeavesTheSingleGaussianFilterToTheExperimentsDecoder) {
  const std::string bytes = Bytes(PinnedGaussian());
  auto refused = DecodeDedupFilter(bytes);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), base::Errc::kCorrupt);
  EXPECT_NE(refused.message().find("not a service filter"), std::string::npos) << refused.message();
  EXPECT_TRUE(DecodeExperimentFilter(bytes).ok());
}

TEST(GaussianStateCodec, RoundTripsASingleGaussianFilter) {
  GaussianDedup g = PinnedGaussian();
  auto decoded = DecodeExperimentFilter(Bytes(g));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value()->mode(), DedupMode::kGaussian);
  ExpectSameFutureBehaviour(g, *decoded.value());
}

TEST(GaussianStateCodec, RejectsAnUnknownConstituentAndAConstituentOnOtherModes) {
  const std::string fbf = Bytes(PinnedGaussianFbf());
  EXPECT_FALSE(DecodeExperimentFilter(WithField(fbf, 7, 1, 2)).ok());
  const std::string single = Bytes(PinnedGaussian());
  EXPECT_FALSE(DecodeExperimentFilter(WithField(single, 7, 1, 1)).ok());
  // Reading a Gaussian FBF as a blocked one fails instead of misreading it.
  EXPECT_FALSE(DecodeExperimentFilter(WithField(fbf, 7, 1, 0)).ok());
}

TEST(GaussianStateCodec, RejectsEveryTruncationAndEveryFlippedByte) {
  for (const std::string& b : {Bytes(PinnedGaussianFbf()), Bytes(PinnedGaussian())}) {
    for (size_t n = 0; n < b.size(); ++n)
      EXPECT_FALSE(DecodeExperimentFilter(b.substr(0, n)).ok()) << n;
    for (size_t i = 0; i < b.size(); ++i) {
      std::string flipped = b;
      flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
      EXPECT_FALSE(DecodeExperimentFilter(flipped).ok()) << i;
    }
  }
}

TEST(GaussianStateCodec, RejectsBadCellBitsBehindAValidChecksum) {
  const std::string single = Bytes(PinnedGaussian());
  // Payload: cells u64, hashes u32, then cell bits at payload offset 12.
  auto decoded = DecodeExperimentFilter(WithField(single, 16 + 12, 1, 16));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.message().find("cell bits"), std::string::npos) << decoded.error();
}

TEST(GaussianStateCodec, RejectsADoubleCellAboveThePeakBehindAValidChecksum) {
  auto created = GaussianDedup::Create({8, 1, 64, ExpKind::kExact, 1});
  ASSERT_TRUE(created.ok());
  std::string b = Bytes(created.value());
  // The last cell is the last 8 bytes before the checksum; 2.0 is above the peak.
  b = WithField(b, b.size() - 16, 8, 0x4000000000000000ULL);
  auto decoded = DecodeExperimentFilter(b);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.message().find("peak"), std::string::npos) << decoded.error();
}

}  // namespace
}  // namespace oncecount::filter
