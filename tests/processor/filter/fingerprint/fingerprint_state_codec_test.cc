#include "processor/filter/fingerprint/fingerprint_state_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"
#include "processor/filter/state_codec.h"
#include "tests/testing/serialized_bytes.h"

namespace oncecount::filter {
namespace {

using oncecount::testing::Hex;
using oncecount::testing::Le;
using oncecount::testing::WithField;

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xFEED)};
}

std::string Bytes(const DedupFilter& f) {
  std::string out;
  f.Serialize(out);
  return out;
}

template <class W>
BasicFingerprintFilter<W> Make(const FingerprintFilterConfig& c) {
  auto made = BasicFingerprintFilter<W>::Create(c, Millis{0});
  if (!made.ok()) ADD_FAILURE() << made.error();
  return std::move(made).value();
}

FingerprintFilterConfig Small(uint32_t bucket_bits) {
  FingerprintFilterConfig c;
  c.bucket_bits = bucket_bits;
  c.fingerprint_bits = bucket_bits == 64 ? 16 : 25;
  c.groups = 8;
  c.max_load = 0.9;
  c.window_slices = bucket_bits == 64 ? 7 : 3;
  c.refresh = Millis{1000};
  c.target_fpp = 1e-3;
  c.seed = 3;
  return c;
}

// A filter that has grown, dropped slices, failed kicks and holds several planes.
template <class W>
BasicFingerprintFilter<W> Busy(bool adaptive) {
  FingerprintFilterConfig c = Small(kWordBits<W>);
  c.adaptive = adaptive;
  auto f = Make<W>(c);
  uint64_t n = 0;
  for (int ms = 0; ms < 12000; ms += 50) {
    f.AdvanceTo(Millis{ms});
    const int ids = ms < 3000 ? 2 : ms < 6000 ? 40 : 5;
    for (int i = 0; i < ids; ++i) f.TestAndInsert(Id(n++));
    if (ms % 700 == 0) f.TestAndInsert(Id(n / 2));  // a retry
  }
  return f;
}

template <class W>
void CheckRoundTrip(bool adaptive) {
  auto f = Busy<W>(adaptive);
  // It went past its sizing: it grew, or (not adaptive) its kicks failed.
  EXPECT_GT(adaptive ? f.early_refreshes() : f.kicks_failed(), 0u);
  const std::string bytes = Bytes(f);
  auto decoded = DecodeDedupFilter(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  DedupFilter& g = *decoded.value();
  EXPECT_EQ(Bytes(g), bytes);
  // Both go on alike.
  for (uint64_t n = 0; n < 3000; ++n) {
    const Millis t{12000 + static_cast<int64_t>(n)};
    f.AdvanceTo(t);
    g.AdvanceTo(t);
    const IdHash id = Id(n % 7 == 0 ? n / 3 : 1000000 + n);
    ASSERT_EQ(f.TestAndInsert(id), g.TestAndInsert(id)) << n;
  }
  EXPECT_EQ(f.Digest(), g.Digest());
}

TEST(FingerprintStateCodec, RoundTripsABusyFilter64) {
  CheckRoundTrip<uint64_t>(true);
}

TEST(FingerprintStateCodec, RoundTripsABusyFilter128) {
  CheckRoundTrip<Bucket128>(true);
}

TEST(FingerprintStateCodec, RoundTripsAFilterWhoseKicksFailed) {
  CheckRoundTrip<Bucket128>(false);
}

// ---------------------------------------------------------------------------------
// The pinned format: a tiny deterministic fingerprint filter, byte for byte. If this
// test fails the format has changed: once a release has written states, bump
// kFingerprintLayoutVersion and keep a decoder for the old layout rather than edit
// the literal.

// `memory_limit_bytes`: 16 planes of one group, unless a test asks for none.
FingerprintFilter64 Pinned(uint64_t memory_limit_bytes = 16 * 64) {
  FingerprintFilterConfig c = Small(64);
  c.groups = 1;
  c.seed = 7;
  c.memory_limit_bytes = memory_limit_bytes;
  auto f = Make<uint64_t>(c);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)), Verdict::kNew);
  f.AdvanceTo(Millis{1500});
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-2/1", kUnkeyed)), Verdict::kNew);
  f.AdvanceTo(Millis{2100});
  // A retry of an id of the oldest slice.
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)),
            Verdict::kDuplicateNearEdge);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-3/7", kUnkeyed)), Verdict::kNew);
  return f;
}

// Offsets of the layout in fingerprint_state_codec.h (frame header: 16 bytes).
namespace at {
constexpr size_t kVersion = 16;
constexpr size_t kBucketBits = 17;
constexpr size_t kFingerprintBits = 21;
constexpr size_t kGroups = 25;
constexpr size_t kMaxLoad = 33;
constexpr size_t kWindowSlices = 41;
constexpr size_t kRefresh = 45;
constexpr size_t kWindow = 53;
constexpr size_t kAdaptive = 61;
constexpr size_t kTargetFpp = 62;
constexpr size_t kMaxSlices = 70;
constexpr size_t kSeed = 74;
constexpr size_t kMemoryLimit = 82;  // frame format 3
constexpr size_t kNow = 90;
constexpr size_t kNextRefresh = 98;
constexpr size_t kNextGroups = 106;
constexpr size_t kInserted = 114;
constexpr size_t kDuplicates = 122;
constexpr size_t kNearEdge = 130;
constexpr size_t kEarlyRefreshes = 138;
constexpr size_t kKicksFailed = 146;
constexpr size_t kLostUntil = 154;     // frame format 3
constexpr size_t kForgottenIds = 162;  // frame format 3
constexpr size_t kPlanes = 170;
constexpr size_t kPlaneGroups = 174;
constexpr size_t kPlaneWidth = 182;  // layout 2
constexpr size_t kPlaneLive = 183;
constexpr size_t kPlaneWords = 184;
constexpr size_t kFirstWord = 192;
constexpr size_t kSlices = kFirstWord + 3 * 8;  // one group three slots wide
constexpr size_t kFirstSlice = kSlices + 4;     // plane, slot, ids, started, newest
constexpr size_t kSliceBytes = 32;
}  // namespace at

// Layout 1 had no width: its plane's live slots, words and slices sit a byte earlier,
// and its one group is a whole line of eight slots.
namespace at_layout1 {
constexpr size_t kFirstWord = at::kFirstWord - 1;
}  // namespace at_layout1

// The same filter without a memory bound, as frame format 2 and layout 1 wrote it
// (its plane a whole line wide): still read.
constexpr std::string_view kPinnedVersion2Hex =
    // header: "OCDF", version 2, mode fbf, constituent 2 (fingerprint), payload length
    "4f434446020003023b01000000000000"
    // layout version 1; config: bucket bits, fingerprint bits, groups, max load, window slices,
    //   refresh, window, adaptive, target fpp, max slices, seed
    "0140000000100000000100000000000000cdccccccccccec3f07000000e803000000000000000000"
    "000000000001fca9f1d24d62503f400000000700000000000000"
    // clock and counts: now, next refresh, next groups, inserted, duplicates, near edge,
    //   early refreshes, failed kicks
    "3408000000000000b80b000000000000010000000000000004000000000000000100000000000000"
    "010000000000000000000000000000000000000000000000"
    // one plane: groups, live slots, word count, eight words (slots 0 to 7)
    "0100000001000000000000000708000000000000003e8df3d700000000b1fb000000000000831700"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000"
    // three slices, newest first: plane, slot, ids, started, newest
    "0300000000000000020000000100000000000000d007000000000000340800000000000000000000"
    "010000000100000000000000e803000000000000dc05000000000000000000000000000002000000"
    "0000000000000000000000000000000000000000"
    // XXH3-64 checksum
    "c23c82c0a5cab857";

// The same filter as frame format 3 and layout 1 wrote it: still read.
constexpr std::string_view kPinnedLayout1Hex =
    // header: "OCDF", version 3, mode fbf, constituent 2 (fingerprint), payload length
    "4f434446030003025301000000000000"
    // layout version 1; config: bucket bits, fingerprint bits, groups, max load, window slices,
    //   refresh, window, adaptive, target fpp, max slices, seed, memory limit
    "0140000000100000000100000000000000cdccccccccccec3f07000000e803000000000000000000"
    "000000000001fca9f1d24d62503f4000000007000000000000000004000000000000"
    // clock and counts: now, next refresh, next groups, inserted, duplicates, near edge,
    //   early refreshes, failed kicks; early forgetting: lost until, ids
    "3408000000000000b80b000000000000010000000000000004000000000000000100000000000000"
    "01000000000000000000000000000000000000000000000000000000000000800000000000000000"
    // one plane: groups, live slots, word count, eight words (slots 0 to 7)
    "0100000001000000000000000708000000000000003e8df3d700000000b1fb000000000000831700"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000"
    // three slices, newest first: plane, slot, ids, started, newest
    "0300000000000000020000000100000000000000d007000000000000340800000000000000000000"
    "010000000100000000000000e803000000000000dc05000000000000000000000000000002000000"
    "0000000000000000000000000000000000000000"
    // XXH3-64 checksum
    "9b10b0e62a123b7a";

constexpr std::string_view kPinnedHex =
    // header: "OCDF", version 3, mode fbf, constituent 2 (fingerprint), payload length
    "4f434446030003022c01000000000000"
    // layout version 2; config: bucket bits, fingerprint bits, groups, max load, window slices,
    //   refresh, window, adaptive, target fpp, max slices, seed, memory limit
    "0240000000100000000100000000000000cdccccccccccec3f07000000e803000000000000000000"
    "000000000001fca9f1d24d62503f4000000007000000000000000004000000000000"
    // clock and counts: now, next refresh, next groups, inserted, duplicates, near edge,
    //   early refreshes, failed kicks; early forgetting: lost until, ids
    "3408000000000000b80b000000000000010000000000000004000000000000000100000000000000"
    "01000000000000000000000000000000000000000000000000000000000000800000000000000000"
    // one plane: groups, width 3, live slots, word count, three words (slots 0 to 2)
    "010000000100000000000000030703000000000000003e8df3d700000000b1fb0000000000008317"
    "000000000000"
    // three slices, newest first: plane, slot, ids, started, newest
    "0300000000000000020000000100000000000000d007000000000000340800000000000000000000"
    "010000000100000000000000e803000000000000dc05000000000000000000000000000002000000"
    "0000000000000000000000000000000000000000"
    // XXH3-64 checksum
    "91e034b2d19635a5";

constexpr std::string_view kPinnedDigest = "994d3b278f65ad14";

// A state of an older layout decodes to the filter that wrote it: the same ids, counts
// and clock, its plane a whole line wide. It goes on as the filter of today.
void ExpectThePinnedFilterIn(std::string_view hex, uint64_t memory_limit_bytes,
                             const DecodeLimits& limits = {}) {
  auto decoded = DecodeDedupFilter(testing::FromHex(hex), limits);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  DedupFilter& old = **decoded;
  FingerprintFilter64 today = Pinned(memory_limit_bytes);
  const FilterSummary was = old.Summary();
  const FilterSummary is = today.Summary();
  EXPECT_EQ(was.inserted, is.inserted);
  EXPECT_EQ(was.duplicates, is.duplicates);
  EXPECT_EQ(was.near_edge_duplicates, is.near_edge_duplicates);
  EXPECT_EQ(was.memory_limit_bytes, memory_limit_bytes);
  EXPECT_EQ(was.forgotten_early, 0u);
  EXPECT_DOUBLE_EQ(was.estimated_fpp, is.estimated_fpp);
  EXPECT_EQ(was.bits_total, 512u);  // one group of eight slots
  for (const char* id : {"client-1/1", "client-1/2", "client-2/1", "client-3/7"}) {
    EXPECT_TRUE(old.Contains(HashIdempotencyId(id, kUnkeyed))) << id;
  }
  old.AdvanceTo(Millis{9000});
  today.AdvanceTo(Millis{9000});
  EXPECT_EQ(old.TestAndInsert(HashIdempotencyId("client-4/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(today.TestAndInsert(HashIdempotencyId("client-4/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(old.Summary().filters, today.Summary().filters);
}

TEST(FingerprintStateCodec, ReadsAFormat2StateAsAFilterWithoutAMemoryBoundThatForgotNothing) {
  ExpectThePinnedFilterIn(kPinnedVersion2Hex, 0);
}

TEST(FingerprintStateCodec, GivesAFormat2StateTheBoundItIsDecodedWith) {
  ExpectThePinnedFilterIn(kPinnedVersion2Hex, 16 * 64, DecodeLimits{.bound_if_none = 16 * 64});
}

TEST(FingerprintStateCodec, RefusesAStateWhoseBoundIsAboveTheMost) {
  const std::string b = Bytes(Pinned(16 * 64));
  EXPECT_TRUE(DecodeDedupFilter(b, DecodeLimits{.most = 16 * 64}).ok());
  auto refused = DecodeDedupFilter(b, DecodeLimits{.most = 16 * 64 - 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("above the most"), std::string::npos) << refused.message();
}

// Found in review: layout 1 allowed sizes to come up to a whole plane of the bound
// (bound / 64 groups), layout 2 only FittingGroups (bound / 72 with 64-bit buckets).
// A layout-1 state between the two decoded, and was written as a state of layout 2
// its decoder refused: its shard failed at the next restore, for good.
TEST(FingerprintStateCodec, BringsALayout1SizeToComeWithinTheBoundSoThatWhatItWritesDecodes) {
  const std::string b = WithField(testing::FromHex(kPinnedLayout1Hex), at::kNextGroups, 8, 15);
  auto decoded = DecodeDedupFilter(b);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  const auto& filter = dynamic_cast<const FingerprintFilter64&>(**decoded);
  EXPECT_EQ(filter.next_groups(), 14u);  // max(1, 1024 / 72)
  auto again = DecodeDedupFilter(Bytes(**decoded));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(Bytes(**again), Bytes(**decoded));
  // Past a whole plane of the bound it is refused as before.
  EXPECT_FALSE(
      DecodeDedupFilter(WithField(testing::FromHex(kPinnedLayout1Hex), at::kNextGroups, 8, 17))
          .ok());
}

TEST(FingerprintStateCodec, ReadsAStateOfTheFirstLayoutWithItsPlaneAWholeLineWide) {
  ExpectThePinnedFilterIn(kPinnedLayout1Hex, 16 * 64);
  // Its free slots are checked as before.
  const std::string b = testing::FromHex(kPinnedLayout1Hex);
  EXPECT_FALSE(DecodeDedupFilter(WithField(b, at_layout1::kFirstWord + 3 * 8, 8, 5)).ok());
}

TEST(FingerprintStateCodec, SerializesATinyFilterToThePinnedBytes) {
  EXPECT_EQ(Hex(Bytes(Pinned())), kPinnedHex);
}

TEST(FingerprintStateCodec, GivesATinyFilterThePinnedDigest) {
  EXPECT_EQ(Pinned().Digest(), kPinnedDigest);
}

TEST(FingerprintStateCodec, PinnedBytesFollowTheDocumentedLayout) {
  const std::string b = Bytes(Pinned());
  ASSERT_EQ(b.size(), at::kFirstSlice + 3 * at::kSliceBytes + 8);
  EXPECT_EQ(Le(b, 6, 1), static_cast<uint64_t>(DedupMode::kFbf));
  EXPECT_EQ(Le(b, 7, 1), kFingerprintConstituent);
  EXPECT_EQ(Le(b, at::kVersion, 1), kFingerprintLayoutVersion);
  EXPECT_EQ(Le(b, at::kBucketBits, 4), 64u);
  EXPECT_EQ(Le(b, at::kFingerprintBits, 4), 16u);
  EXPECT_EQ(Le(b, at::kGroups, 8), 1u);
  EXPECT_EQ(Le(b, at::kMaxLoad, 8), std::bit_cast<uint64_t>(0.9));
  EXPECT_EQ(Le(b, at::kWindowSlices, 4), 7u);
  EXPECT_EQ(Le(b, at::kRefresh, 8), 1000u);
  EXPECT_EQ(Le(b, at::kWindow, 8), 0u);
  EXPECT_EQ(Le(b, at::kAdaptive, 1), 1u);
  EXPECT_EQ(Le(b, at::kTargetFpp, 8), std::bit_cast<uint64_t>(1e-3));
  EXPECT_EQ(Le(b, at::kMaxSlices, 4), 64u);
  EXPECT_EQ(Le(b, at::kSeed, 8), 7u);
  EXPECT_EQ(Le(b, at::kMemoryLimit, 8), 16u * 64);
  EXPECT_EQ(Le(b, at::kNow, 8), 2100u);
  EXPECT_EQ(Le(b, at::kNextRefresh, 8), 3000u);
  EXPECT_EQ(Le(b, at::kNextGroups, 8), 1u);
  EXPECT_EQ(Le(b, at::kInserted, 8), 4u);
  EXPECT_EQ(Le(b, at::kDuplicates, 8), 1u);
  EXPECT_EQ(Le(b, at::kNearEdge, 8), 1u);
  EXPECT_EQ(Le(b, at::kEarlyRefreshes, 8), 0u);
  EXPECT_EQ(Le(b, at::kKicksFailed, 8), 0u);
  EXPECT_EQ(static_cast<int64_t>(Le(b, at::kLostUntil, 8)), INT64_MIN);
  EXPECT_EQ(Le(b, at::kForgottenIds, 8), 0u);
  EXPECT_EQ(Le(b, at::kPlanes, 4), 1u);
  EXPECT_EQ(Le(b, at::kPlaneGroups, 8), 1u);
  EXPECT_EQ(Le(b, at::kPlaneWidth, 1), 3u);  // as wide as its three slices
  EXPECT_EQ(Le(b, at::kPlaneLive, 1), 0b111u);
  EXPECT_EQ(Le(b, at::kPlaneWords, 8), 3u);
  EXPECT_EQ(Le(b, at::kSlices, 4), 3u);
  // Newest first: the present (slot 2, one id, started at 2000), then slots 1 and 0.
  const size_t present = at::kFirstSlice;
  EXPECT_EQ(Le(b, present + 4, 4), 2u);
  EXPECT_EQ(Le(b, present + 8, 8), 1u);
  EXPECT_EQ(Le(b, present + 16, 8), 2000u);
  EXPECT_EQ(Le(b, present + 24, 8), 2100u);
  const size_t oldest = at::kFirstSlice + 2 * at::kSliceBytes;
  EXPECT_EQ(Le(b, oldest + 4, 4), 0u);
  EXPECT_EQ(Le(b, oldest + 8, 8), 2u);
  EXPECT_EQ(Le(b, oldest + 16, 8), 0u);
  EXPECT_EQ(Le(b, oldest + 24, 8), 0u);
  // Slot 0's bucket holds two fingerprints, slot 2's one.
  FingerprintFields<uint64_t> fields(16);
  EXPECT_EQ(fields.Occupied(Le(b, at::kFirstWord, 8)), 2u);
  EXPECT_EQ(fields.Occupied(Le(b, at::kFirstWord + 2 * 8, 8)), 1u);
}

TEST(FingerprintStateCodec, RejectsEveryTruncationAndEveryFlippedByte) {
  const std::string b = Bytes(Pinned());
  for (size_t n = 0; n < b.size(); ++n) {
    EXPECT_FALSE(DecodeDedupFilter(std::string_view(b).substr(0, n)).ok()) << n;
    std::string flipped = b;
    flipped[n] = static_cast<char>(flipped[n] ^ 0x10);
    EXPECT_FALSE(DecodeDedupFilter(flipped).ok()) << n;
  }
}

// Every field is checked even behind a valid checksum (a state from a buggy or
// foreign writer).
TEST(FingerprintStateCodec, RejectsFieldsOutOfRangeBehindAValidChecksum) {
  const std::string b = Bytes(Pinned());
  struct Bad {
    const char* what;
    size_t offset;
    size_t size;
    uint64_t value;
  };
  const size_t slice1 = at::kFirstSlice + at::kSliceBytes;
  const Bad bad[] = {
      {"a layout version from the future", at::kVersion, 1, 3},
      {"96-bit buckets", at::kBucketBits, 4, 96},
      {"128-bit buckets over a 64-bit plane", at::kBucketBits, 4, 128},
      {"7-bit fingerprints", at::kFingerprintBits, 4, 7},
      {"zero groups", at::kGroups, 8, 0},
      {"a load of 2", at::kMaxLoad, 8, std::bit_cast<uint64_t>(2.0)},
      {"a NaN load", at::kMaxLoad, 8, std::bit_cast<uint64_t>(std::nan(""))},
      // Found by filter_state_fuzz past the checksum: a load of 1e-312 made every slice
      // hold one id, and each insert grew the slices to come 16 times, to gigabytes.
      {"a load below a tenth", at::kMaxLoad, 8, std::bit_cast<uint64_t>(0.05)},
      {"zero window slices", at::kWindowSlices, 4, 0},
      {"zero refresh", at::kRefresh, 8, 0},
      {"a window beyond the slices", at::kWindow, 8, 7001},
      {"adaptive 2", at::kAdaptive, 1, 2},
      {"target fpp 0", at::kTargetFpp, 8, 0},
      {"max slices below window slices + 1", at::kMaxSlices, 4, 7},
      {"now beyond 2^61 ms", at::kNow, 8, uint64_t{1} << 62},
      {"next refresh not after now", at::kNextRefresh, 8, 2100},
      {"next refresh more than a period ahead", at::kNextRefresh, 8, 3101},
      {"next groups zero", at::kNextGroups, 8, 0},
      // Found by filter_state_fuzz past the checksum (its next refresh allocated GiBs).
      {"next groups far beyond the present's", at::kNextGroups, 8, uint64_t{1} << 20},
      {"next groups beyond the memory bound", at::kNextGroups, 8, 32},
      {"a memory bound below its plane", at::kMemoryLimit, 8, 32},
      {"ids forgotten early without a time", at::kForgottenIds, 8, 2},
      {"ids forgotten early after the clock", at::kLostUntil, 8, 2101},
      {"a time forgotten early without ids", at::kLostUntil, 8, 2000},
      {"no plane", at::kPlanes, 4, 0},
      {"more planes than stored", at::kPlanes, 4, 2},
      {"a plane of more groups than the payload", at::kPlaneGroups, 8, 1000},
      {"a plane with no live slot", at::kPlaneLive, 1, 0},
      {"live slots past the plane's width", at::kPlaneLive, 1, 0b1111},
      {"a plane of no width", at::kPlaneWidth, 1, 0},
      {"a plane wider than a line", at::kPlaneWidth, 1, 9},
      {"a plane narrower than its live slots", at::kPlaneWidth, 1, 2},
      {"a plane wider than its words", at::kPlaneWidth, 1, 4},
      {"a wrong word count", at::kPlaneWords, 8, 8},
      {"a slice count that does not match its fingerprints", at::kFirstWord, 8, 0},
      {"no slice", at::kSlices, 4, 0},
      {"more slices than the planes have slots", at::kSlices, 4, 4},
      {"a slice in a plane that does not exist", slice1, 4, 1},
      {"a slice in a slot past its plane's width", slice1 + 4, 4, 3},
      {"two slices in one slot", slice1 + 4, 4, 2},
      {"a slice holding more ids than were inserted", slice1 + 8, 8, 5},
      {"a slice started after now", slice1 + 16, 8, 2101},
      {"a slice whose newest id is after now", slice1 + 24, 8, 2101},
      {"a slice with ids and no newest time", slice1 + 24, 8, static_cast<uint64_t>(INT64_MIN)},
      // Found by filter_state_fuzz past the checksum: adaptation adds the window to it.
      {"a slice whose newest id is before any clock", slice1 + 24, 8,
       static_cast<uint64_t>(INT64_MIN + 5)},
  };
  for (const Bad& x : bad) {
    EXPECT_FALSE(DecodeDedupFilter(WithField(b, x.offset, x.size, x.value)).ok())
        << "accepted a state with " << x.what;
  }
}

}  // namespace
}  // namespace oncecount::filter
