#include "processor/filter/state_codec.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/bloom/plain_bloom_dedup.h"
#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/no_dedup.h"
#include "tests/testing/serialized_bytes.h"

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xC0DEC)};
}

std::string Bytes(const DedupFilter& f) {
  std::string out;
  f.Serialize(out);
  return out;
}

using oncecount::testing::Hex;
using oncecount::testing::Le;
using oncecount::testing::PutLe;
using oncecount::testing::Reseal;
using oncecount::testing::WithField;

template <class F>
F Created(base::Result<F> r) {
  if (!r.ok()) ADD_FAILURE() << r.error();
  return std::move(r).value();
}

std::unique_ptr<DedupFilter> Decoded(std::string_view bytes) {
  auto decoded = DecodeDedupFilter(bytes);
  if (!decoded.ok()) {
    ADD_FAILURE() << decoded.error();
    return nullptr;
  }
  return std::move(decoded).value();
}

void ExpectSameSummary(const FilterSummary& a, const FilterSummary& b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.inserted, b.inserted);
  EXPECT_EQ(a.duplicates, b.duplicates);
  EXPECT_EQ(a.near_edge_duplicates, b.near_edge_duplicates);
  EXPECT_EQ(a.estimated_fpp, b.estimated_fpp);
  EXPECT_EQ(a.bits_total, b.bits_total);
  EXPECT_EQ(a.filters, b.filters);
  EXPECT_EQ(a.refresh_ms, b.refresh_ms);
  EXPECT_EQ(a.window_ms_guaranteed, b.window_ms_guaranteed);
  ASSERT_EQ(a.constituents.size(), b.constituents.size());
  for (size_t i = 0; i < a.constituents.size(); ++i) {
    EXPECT_EQ(a.constituents[i].inserted, b.constituents[i].inserted);
    EXPECT_EQ(a.constituents[i].fill, b.constituents[i].fill);
  }
}

// A workload of fresh ids and retries of earlier ones at random times. Returns the
// verdicts so that two replicas fed the same calls can be compared.
class Workload {
 public:
  Workload(uint64_t seed, Millis start, int max_step_ms, int max_batch)
      : rng_(seed), now_(start), max_step_ms_(max_step_ms), max_batch_(max_batch) {}

  std::vector<Verdict> Step(DedupFilter& a, DedupFilter* b) {
    now_ += Millis{std::uniform_int_distribution<int>(0, max_step_ms_)(rng_)};
    a.AdvanceTo(now_);
    if (b != nullptr) b->AdvanceTo(now_);
    const int batch = std::uniform_int_distribution<int>(0, max_batch_)(rng_);
    std::vector<Verdict> verdicts;
    for (int i = 0; i < batch; ++i) {
      uint64_t n = next_id_;
      if (next_id_ > 0 && rng_() % 4 == 0) {
        n = std::uniform_int_distribution<uint64_t>(0, next_id_ - 1)(rng_);  // a retry
      } else {
        ++next_id_;
      }
      const Verdict v = a.TestAndInsert(Id(n));
      verdicts.push_back(v);
      if (b != nullptr) {
        const Verdict w = b->TestAndInsert(Id(n));
        if (v != w) {
          ADD_FAILURE() << "replicas disagree on id #" << n << " at " << now_.count() << " ms";
          return verdicts;
        }
      }
    }
    return verdicts;
  }

  uint64_t ids() const { return next_id_; }
  Millis now() const { return now_; }

 private:
  std::mt19937_64 rng_;
  Millis now_;
  int max_step_ms_;
  int max_batch_;
  uint64_t next_id_ = 0;
};

// Serializes `original`, decodes it, and checks that the copy is the same filter: same
// bytes, digest, summary and answers, and the same verdicts and digest after both are
// fed the same further calls (what a standby replica relies on).
void ExpectFaithfulRoundTrip(DedupFilter& original, Workload& workload, int more_steps) {
  const std::string bytes = Bytes(original);
  std::unique_ptr<DedupFilter> copy = Decoded(bytes);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->mode(), original.mode());
  EXPECT_EQ(Bytes(*copy), bytes);
  EXPECT_EQ(copy->Digest(), original.Digest());
  ExpectSameSummary(copy->Summary(), original.Summary());
  const uint64_t probe = workload.ids() + 20000;
  for (uint64_t n = 0; n < probe; ++n) {
    ASSERT_EQ(copy->Contains(Id(n)), original.Contains(Id(n))) << "id #" << n;
  }
  for (int i = 0; i < more_steps; ++i) {
    workload.Step(original, copy.get());
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(copy->Digest(), original.Digest());
  EXPECT_EQ(Bytes(*copy), Bytes(original));
}

// Byte offsets in a serialized FBF (state_codec.cc, format version 3): the header is
// 16 bytes, then the payload fields in order. Kept in one place for the tests below.
namespace fbf_at {
constexpr size_t kBits = 16;                  // u64
constexpr size_t kHashes = 24;                // u32
constexpr size_t kBlockBits = 28;             // u32
constexpr size_t kPastFilters = 32;           // u32
constexpr size_t kRefresh = 36;               // i64 ms
constexpr size_t kCheck = 44;                 // u8
constexpr size_t kWindow = 45;                // i64 ms
constexpr size_t kAdaptive = 53;              // u8
constexpr size_t kTargetFpp = 54;             // f64
constexpr size_t kRefreshStep = 62;           // i64 ms
constexpr size_t kMaxFilters = 70;            // u32
constexpr size_t kAdaptEvery = 74;            // i64 ms
constexpr size_t kModel = 82;                 // u8
constexpr size_t kSeed = 83;                  // u64
constexpr size_t kPolicy = 91;                // u8
constexpr size_t kSliceCapacity = 92;         // u64
constexpr size_t kMemoryLimit = 100;          // u64 (format 3)
constexpr size_t kRefreshNow = 108;           // i64 ms: the current refresh period
constexpr size_t kTargetFilters = 116;        // u32
constexpr size_t kNow = 120;                  // i64 ms
constexpr size_t kNextRefresh = 128;          // i64 ms
constexpr size_t kNextAdapt = 136;            // i64 ms
constexpr size_t kSeedsIssued = 144;          // u64
constexpr size_t kInserted = 152;             // u64
constexpr size_t kDuplicates = 160;           // u64
constexpr size_t kNearEdge = 168;             // u64
constexpr size_t kInsertedAtLastAdapt = 176;  // u64
constexpr size_t kEarlyRefreshes = 184;       // u64
constexpr size_t kLostUntil = 192;            // i64 ms (format 3)
constexpr size_t kForgottenIds = 200;         // u64 (format 3)
constexpr size_t kSlots = 208;                // u32
constexpr size_t kFirstSlot = 212;            // per slot: seed, inserted, left future, left
                                              // present, word count, words
constexpr size_t kSlotHeader = 40;
}  // namespace fbf_at

// The same for a serialized bloom filter.
namespace bloom_at {
constexpr size_t kBits = 16;       // u64
constexpr size_t kHashes = 24;     // u32
constexpr size_t kBlockBits = 28;  // u32
constexpr size_t kWordCount = 64;  // u64, after seed, inserted, now and duplicates
}  // namespace bloom_at

// And a serialized exact window: window, memory bound, now, inserted, duplicates,
// early forgetting, entries, then (key, time) pairs. (The table capacity is not state
// and is not serialized.)
namespace exact_at {
constexpr size_t kWindow = 16;
constexpr size_t kMemoryLimit = 24;
constexpr size_t kNow = 32;
constexpr size_t kLostUntil = 56;
constexpr size_t kForgottenIds = 64;
constexpr size_t kEntries = 72;
constexpr size_t kFirstKey = 80;
constexpr size_t kFirstTime = 88;
constexpr size_t kSecondKey = 96;
}  // namespace exact_at

// ---------------------------------------------------------------------------------
// Round trips.

struct FbfCase {
  MembershipCheck check;
  bool adaptive;
};

class FbfRoundTrip : public ::testing::TestWithParam<FbfCase> {};

TEST_P(FbfRoundTrip, DecodesToTheSameFilterAfterRefreshesAndAdaptation) {
  FbfConfig c;
  c.check = GetParam().check;
  c.adaptive = GetParam().adaptive;
  c.past_filters = 3;
  c.bits_per_filter = 1024;
  c.hashes = 3;
  c.refresh = Millis{200};
  c.target_fpp = 1e-4;
  c.seed = 1234;
  ForgetfulBloomFilter f = Created(ForgetfulBloomFilter::Create(c, Millis{5000}));
  Workload workload(77, Millis{5000}, 60, 40);
  for (int i = 0; i < 400; ++i) workload.Step(f, nullptr);
  // The state has been through refreshes (and, when adaptive, resizing).
  EXPECT_GT(f.Summary().duplicates, 0u);
  if (c.adaptive) {
    EXPECT_TRUE(f.refresh_period() != c.refresh || f.target_filters() != c.past_filters + 3 ||
                f.filter_count() != c.past_filters + 3)
        << "the workload did not make the filter adapt";
  }
  ExpectFaithfulRoundTrip(f, workload, 400);
}

INSTANTIATE_TEST_SUITE_P(EveryCheck, FbfRoundTrip,
                         ::testing::Values(FbfCase{MembershipCheck::kPaper, false},
                                           FbfCase{MembershipCheck::kPaper, true},
                                           FbfCase{MembershipCheck::kPairs, false},
                                           FbfCase{MembershipCheck::kPairs, true},
                                           FbfCase{MembershipCheck::kAny, false},
                                           FbfCase{MembershipCheck::kAny, true}),
                         [](const ::testing::TestParamInfo<FbfCase>& param_info) {
                           return std::string(CheckName(param_info.param.check)) +
                                  (param_info.param.adaptive ? "_adaptive" : "_fixed");
                         });

TEST(StateCodec, RoundTripsAFreshFbf) {
  FbfConfig c;
  c.past_filters = 1;
  c.bits_per_filter = 512;
  c.hashes = 2;
  c.refresh = Millis{100};
  ForgetfulBloomFilter f = Created(ForgetfulBloomFilter::Create(c, Millis{-5}));
  Workload workload(1, Millis{-5}, 30, 5);
  ExpectFaithfulRoundTrip(f, workload, 100);
}

TEST(StateCodec, RoundTripsAPlainBloomFilter) {
  PlainBloomDedup f = Created(PlainBloomDedup::Create(8192, 4, 99));
  Workload workload(2, Millis{0}, 100, 30);
  for (int i = 0; i < 100; ++i) workload.Step(f, nullptr);
  ExpectFaithfulRoundTrip(f, workload, 100);
}

TEST(StateCodec, RoundTripsAnExactWindowAfterGrowthAndExpiry) {
  ExactWindowDedup f = Created(ExactWindowDedup::Create(Millis{500}, 10, Millis{0}));
  Workload workload(3, Millis{0}, 20, 60);
  for (int i = 0; i < 300; ++i) workload.Step(f, nullptr);
  EXPECT_GT(f.Summary().bits_total, 1024u * 64);  // the table grew past its minimum
  ExpectFaithfulRoundTrip(f, workload, 300);
}

TEST(StateCodec, RoundTripsAnEmptyExactWindow) {
  ExactWindowDedup f = Created(ExactWindowDedup::Create(Millis{1}, 0, Millis{0}));
  Workload workload(4, Millis{0}, 3, 3);
  ExpectFaithfulRoundTrip(f, workload, 50);
}

TEST(StateCodec, RoundTripsNoDedup) {
  NoDedup f;
  Workload workload(5, Millis{0}, 10, 10);
  for (int i = 0; i < 10; ++i) workload.Step(f, nullptr);
  EXPECT_GT(f.Summary().inserted, 0u);
  ExpectFaithfulRoundTrip(f, workload, 10);
}

// ---------------------------------------------------------------------------------
// The pinned format: a tiny deterministic FBF, byte for byte. If this test fails the
// format has changed. Once a release has written states (the service's snapshots),
// bump kStateFormatVersion and keep a decoder for the old version rather than edit
// the literal; before that, the literal changes in the same commit as the format.

// `memory_limit_bytes`: 64 filters of 1024 bits, unless a test asks for none.
ForgetfulBloomFilter PinnedFbf(uint64_t memory_limit_bytes = 64 * 128) {
  FbfConfig c;  // check: pairs (the default)
  c.bits_per_filter = 1024;
  c.hashes = 3;
  c.past_filters = 1;
  c.refresh = Millis{1000};
  c.seed = 7;
  c.memory_limit_bytes = memory_limit_bytes;
  ForgetfulBloomFilter f = Created(ForgetfulBloomFilter::Create(c, Millis{0}));
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/1", kUnkeyed)), Verdict::kNew);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)), Verdict::kNew);
  f.AdvanceTo(Millis{1500});
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-2/1", kUnkeyed)), Verdict::kNew);
  f.AdvanceTo(Millis{2100});
  // A retry of an id two refreshes old: it sits in the oldest pair.
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-1/2", kUnkeyed)),
            Verdict::kDuplicateNearEdge);
  EXPECT_EQ(f.TestAndInsert(HashIdempotencyId("client-3/7", kUnkeyed)), Verdict::kNew);
  return f;
}

// The same filter without a memory bound, as format 2 wrote it: still read.
constexpr std::string_view kPinnedFbfVersion2Hex =
    // header: "OCDF", version 2, mode fbf, reserved, payload length
    "4f434446020003004c03000000000000"
    // config: bits, hashes, block bits, N, refresh, check, window, adaptive, target fpp,
    //   refresh step, max filters, adapt every, model, seed, resize policy, slice capacity
    "0004000000000000030000000002000001000000e803000000000000010000000000000000008ded"
    "b5a0f7c6b03e000000000000000040000000e80300000000000001070000000000000000"
    "0000000000000000"
    // state: refresh, target filters, now, next refresh, next adaptation, seeds issued,
    //   inserted, duplicates, near edge, inserted at last adaptation, early refreshes,
    //   slot count
    "e803000000000000040000003408000000000000b80b000000000000340800000000000006000000"
    "00000000040000000000000001000000000000000100000000000000000000000000000000000000"
    "0000000004000000"
    // slot 0: seed, inserted, left future, left present, word count; 16 words
    "d60c3676f5b33a400100000000000000ffffffffffffff7fffffffffffffff7f1000000000000000"
    "00000000000000000000400000000000000000000000000000000000000000008000000000000000"
    "00000000000000000000000000000000000000000100000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000"
    // slot 1: seed, inserted, left future, left present, word count; 16 words
    "d9c051dae0b993f20200000000000000d007000000000000ffffffffffffff7f1000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000001000000000000"
    "00000000000000000000000000020000000000000001000000000000000000000000000000000400"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0001400000000000"
    // slot 2: seed, inserted, left future, left present, word count; 16 words
    "5547f836216ab5120300000000000000e803000000000000d0070000000000001000000000000000"
    "00000000000000000000000000000000000000000000000000000002000000000000000100000000"
    "00000000000000000000000400000000000000000000000000002000000000000000000000000000"
    "00000000100000000000000000000000000800000000000000000000010000000000000000000000"
    "0001000004000000"
    // slot 3: seed, inserted, left future, left present, word count; 16 words
    "11325718df58517d02000000000000000000000000000000e8030000000000001000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000008000100"
    "00000000000000000000000000000000000000000000000000004000000000000000000000080000"
    "0008000000000080"
    // XXH3-64 checksum
    "68711201ac118527";

constexpr std::string_view kPinnedFbfHex =
    // header: "OCDF", version 3, mode fbf, reserved, payload length
    "4f434446030003006403000000000000"
    // config: bits, hashes, block bits, N, refresh, check, window, adaptive, target fpp,
    //   refresh step, max filters, adapt every, model, seed, resize policy, slice capacity,
    //   memory limit
    "0004000000000000030000000002000001000000e803000000000000010000000000000000008ded"
    "b5a0f7c6b03e000000000000000040000000e8030000000000000107000000000000000000000000"
    "000000000020000000000000"
    // state: refresh, target filters, now, next refresh, next adaptation, seeds issued,
    //   inserted, duplicates, near edge, inserted at last adaptation, early refreshes,
    //   lost until, ids forgotten early, slot count
    "e803000000000000040000003408000000000000b80b000000000000340800000000000006000000"
    "00000000040000000000000001000000000000000100000000000000000000000000000000000000"
    "000000000000000000000080000000000000000004000000"
    // slot 0: seed, inserted, left future, left present, word count; 16 words
    "d60c3676f5b33a400100000000000000ffffffffffffff7fffffffffffffff7f1000000000000000"
    "00000000000000000000400000000000000000000000000000000000000000008000000000000000"
    "00000000000000000000000000000000000000000100000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000"
    // slot 1: seed, inserted, left future, left present, word count; 16 words
    "d9c051dae0b993f20200000000000000d007000000000000ffffffffffffff7f1000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000001000000000000"
    "00000000000000000000000000020000000000000001000000000000000000000000000000000400"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0001400000000000"
    // slot 2: seed, inserted, left future, left present, word count; 16 words
    "5547f836216ab5120300000000000000e803000000000000d0070000000000001000000000000000"
    "00000000000000000000000000000000000000000000000000000002000000000000000100000000"
    "00000000000000000000000400000000000000000000000000002000000000000000000000000000"
    "00000000100000000000000000000000000800000000000000000000010000000000000000000000"
    "0001000004000000"
    // slot 3: seed, inserted, left future, left present, word count; 16 words
    "11325718df58517d02000000000000000000000000000000e8030000000000001000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000008000100"
    "00000000000000000000000000000000000000000000000000004000000000000000000000080000"
    "0008000000000080"
    // XXH3-64 checksum
    "a96d4d8c376d2fa9";

constexpr std::string_view kPinnedFbfDigest = "ba6900de8051ff61";

TEST(StateCodec, SerializesATinyFbfToThePinnedBytes) {
  EXPECT_EQ(Hex(Bytes(PinnedFbf())), kPinnedFbfHex);
}

TEST(StateCodec, GivesATinyFbfThePinnedDigest) {
  EXPECT_EQ(PinnedFbf().Digest(), kPinnedFbfDigest);
}

TEST(StateCodec, ReadsAFormat2StateAsAFilterWithoutAMemoryBoundThatForgotNothing) {
  auto decoded = DecodeDedupFilter(testing::FromHex(kPinnedFbfVersion2Hex));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  const ForgetfulBloomFilter unbounded = PinnedFbf(0);
  EXPECT_EQ(Bytes(**decoded), Bytes(unbounded));
  const FilterSummary s = (*decoded)->Summary();
  EXPECT_EQ(s.memory_limit_bytes, 0u);
  EXPECT_EQ(s.forgotten_early, 0u);
  EXPECT_EQ(s.window_ms_guaranteed, s.window_ms_configured);
}

TEST(StateCodec, GivesAFormat2StateTheBoundItIsDecodedWith) {
  // As a restore gives a state written before bounds dedup.max_filter_mib: it decodes
  // to the filter made today with that bound, byte for byte.
  auto decoded = DecodeDedupFilter(testing::FromHex(kPinnedFbfVersion2Hex),
                                   DecodeLimits{.bound_if_none = 64 * 128});
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ((*decoded)->Summary().memory_limit_bytes, 64u * 128);
  EXPECT_EQ(Bytes(**decoded), Bytes(PinnedFbf(64 * 128)));
}

TEST(StateCodec, KeepsAStatesOwnBoundAndRefusesOneAboveTheMost) {
  const std::string state = Bytes(PinnedFbf(64 * 128));
  auto kept = DecodeDedupFilter(state, DecodeLimits{.bound_if_none = 1 << 20, .most = 64 * 128});
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ((*kept)->Summary().memory_limit_bytes, 64u * 128);
  auto refused = DecodeDedupFilter(state, DecodeLimits{.most = 64 * 128 - 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), base::Errc::kCorrupt);
  EXPECT_NE(refused.message().find("a memory bound of 8192 bytes, above the most"),
            std::string::npos)
      << refused.message();
  // The default refuses what no configuration sets.
  EXPECT_FALSE(
      DecodeDedupFilter(WithField(state, fbf_at::kMemoryLimit, 8, kMaxMemoryLimitBytes + 1)).ok());
  EXPECT_TRUE(
      DecodeDedupFilter(WithField(state, fbf_at::kMemoryLimit, 8, kMaxMemoryLimitBytes)).ok());
}

TEST(StateCodec, AnExactStateWithoutABoundTakesTheOneItIsDecodedWithAndStaysWithinIt) {
  // Filter-eval's exact filters have no bound; a frozen clock then grows one with
  // every id. Decoded with a bound, it forgets early at it instead, and says so.
  ExactWindowDedup unbounded = Created(ExactWindowDedup::Create(Millis{1000}, 1, Millis{0}, 0));
  constexpr uint64_t kBound = uint64_t{1} << 16;
  auto decoded = DecodeDedupFilter(Bytes(unbounded), DecodeLimits{.bound_if_none = kBound});
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  DedupFilter& f = **decoded;
  for (uint64_t i = 1; i <= 20'000; ++i) ASSERT_EQ(f.TestAndInsert(Id(i)), Verdict::kNew) << i;
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.memory_limit_bytes, kBound);
  EXPECT_LE(s.bits_total / 8, kBound);
  EXPECT_GT(s.forgotten_early, 0u);
  EXPECT_TRUE(s.HoldsLessThanItsWindow());
  // Without a bound to give, it stays without one and holds every id.
  auto as_before = DecodeDedupFilter(Bytes(unbounded));
  ASSERT_TRUE(as_before.ok()) << as_before.error();
  for (uint64_t i = 1; i <= 20'000; ++i) (void)(*as_before)->TestAndInsert(Id(i));
  EXPECT_EQ((*as_before)->Summary().forgotten_early, 0u);
  EXPECT_GT((*as_before)->Summary().bits_total / 8, kBound);
  // A bound above the most is refused in exact mode too.
  EXPECT_FALSE(DecodeDedupFilter(
                   Bytes(Created(ExactWindowDedup::Create(Millis{1000}, 1, Millis{0}, kBound))),
                   DecodeLimits{.most = kBound - 1})
                   .ok());
}

TEST(StateCodec, AStateWithoutABoundThatHoldsMoreThanTheOneItWouldTakeIsReadAsWritten) {
  // Format 2 let a filter grow past any bound; refusing it would fail its shard for
  // good, and trimming it would drop ids of its window. It keeps no bound, and says so.
  ExactWindowDedup unbounded = Created(ExactWindowDedup::Create(Millis{1000}, 1, Millis{0}, 0));
  for (uint64_t i = 1; i <= 5'000; ++i) ASSERT_EQ(unbounded.TestAndInsert(Id(i)), Verdict::kNew);
  constexpr uint64_t kBound = uint64_t{1} << 16;  // 2,048 ids
  ASSERT_GT(unbounded.Summary().bits_total / 8, kBound);
  auto decoded = DecodeDedupFilter(Bytes(unbounded), DecodeLimits{.bound_if_none = kBound});
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  const FilterSummary s = (*decoded)->Summary();
  EXPECT_EQ(s.memory_limit_bytes, 0u);
  EXPECT_TRUE(s.GrowsWithoutABound());
  EXPECT_EQ(s.forgotten_early, 0u);
  for (uint64_t i = 1; i <= 5'000; ++i) EXPECT_TRUE((*decoded)->Contains(Id(i))) << i;
  EXPECT_EQ(Bytes(**decoded), Bytes(unbounded));
  // A bounded filter does not say so.
  EXPECT_FALSE(PinnedFbf().Summary().GrowsWithoutABound());
}

TEST(StateCodec, PinnedBytesFollowTheDocumentedLayout) {
  using namespace fbf_at;  // NOLINT(google-build-using-namespace)
  const std::string b = Bytes(PinnedFbf());
  constexpr size_t kSlotBytes = kSlotHeader + 16 * 8;  // 1024 bits
  ASSERT_EQ(b.size(), kFirstSlot + 4 * kSlotBytes + 8);
  // Header: magic, version 3, mode fbf, reserved 0, payload length; checksum trailer.
  EXPECT_EQ(b.substr(0, 4), "OCDF");
  EXPECT_EQ(Le(b, 4, 2), 3u);
  EXPECT_EQ(Le(b, 6, 1), static_cast<uint64_t>(DedupMode::kFbf));
  EXPECT_EQ(Le(b, 7, 1), 0u);
  EXPECT_EQ(Le(b, 8, 8), b.size() - 16 - 8);
  EXPECT_EQ(Le(b, b.size() - 8, 8), XXH3_64bits(b.data(), b.size() - 8));
  // Config.
  EXPECT_EQ(Le(b, kBits, 8), 1024u);
  EXPECT_EQ(Le(b, kHashes, 4), 3u);
  EXPECT_EQ(Le(b, kBlockBits, 4), 512u);
  EXPECT_EQ(Le(b, kPastFilters, 4), 1u);
  EXPECT_EQ(Le(b, kRefresh, 8), 1000u);
  EXPECT_EQ(Le(b, kCheck, 1), static_cast<uint64_t>(MembershipCheck::kPairs));
  EXPECT_EQ(Le(b, kWindow, 8), 0u);  // the nominal window
  EXPECT_EQ(Le(b, kAdaptive, 1), 0u);
  EXPECT_EQ(std::bit_cast<double>(Le(b, kTargetFpp, 8)), 1e-6);
  EXPECT_EQ(Le(b, kRefreshStep, 8), 0u);
  EXPECT_EQ(Le(b, kMaxFilters, 4), 64u);
  EXPECT_EQ(Le(b, kAdaptEvery, 8), 1000u);
  EXPECT_EQ(Le(b, kModel, 1), static_cast<uint64_t>(ConstituentModel::kBlocked));
  EXPECT_EQ(Le(b, kSeed, 8), 7u);
  EXPECT_EQ(Le(b, kPolicy, 1), static_cast<uint64_t>(ResizePolicy::kGuarded));
  EXPECT_EQ(Le(b, kSliceCapacity, 8), 0u);  // never early
  EXPECT_EQ(Le(b, kMemoryLimit, 8), 64u * 128);
  // Clock, shape and counters.
  EXPECT_EQ(Le(b, kRefreshNow, 8), 1000u);
  EXPECT_EQ(Le(b, kTargetFilters, 4), 4u);  // N + 3
  EXPECT_EQ(Le(b, kNow, 8), 2100u);
  EXPECT_EQ(Le(b, kNextRefresh, 8), 3000u);
  EXPECT_EQ(Le(b, kNextAdapt, 8), 2100u);  // not adaptive: follows the clock
  EXPECT_EQ(Le(b, kSeedsIssued, 8), 6u);   // 4 filters + 2 refreshes
  EXPECT_EQ(Le(b, kInserted, 8), 4u);
  EXPECT_EQ(Le(b, kDuplicates, 8), 1u);
  EXPECT_EQ(Le(b, kNearEdge, 8), 1u);
  EXPECT_EQ(Le(b, kInsertedAtLastAdapt, 8), 0u);
  EXPECT_EQ(Le(b, kEarlyRefreshes, 8), 0u);
  EXPECT_EQ(static_cast<int64_t>(Le(b, kLostUntil, 8)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Le(b, kForgottenIds, 8), 0u);
  EXPECT_EQ(Le(b, kSlots, 4), 4u);
  // Slots, future first: after two refreshes the ring holds the filters of generations
  // 6, 5, 1 and 2 (3 and 4 were empty when they fell off the end).
  struct SlotWant {
    uint64_t generation;
    uint64_t inserted;
    int64_t left_future;
    int64_t left_present;
  };
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  const SlotWant want[] = {
      {6, 1, kNever, kNever}, {5, 2, 2000, kNever}, {1, 3, 1000, 2000}, {2, 2, 0, 1000}};
  size_t at = kFirstSlot;
  for (const SlotWant& w : want) {
    SCOPED_TRACE("slot of generation " + std::to_string(w.generation));
    EXPECT_EQ(Le(b, at, 8), SeededMix(IdHash{7}, w.generation));
    EXPECT_EQ(Le(b, at + 8, 8), w.inserted);
    EXPECT_EQ(static_cast<int64_t>(Le(b, at + 16, 8)), w.left_future);
    EXPECT_EQ(static_cast<int64_t>(Le(b, at + 24, 8)), w.left_present);
    EXPECT_EQ(Le(b, at + 32, 8), 16u);  // words: 1024 bits
    at += kSlotBytes;
  }
  EXPECT_EQ(at, b.size() - 8);
}

// ---------------------------------------------------------------------------------
// Corrupt input: always an Error, never a crash.

// Small serialized states of every mode, each after a short workload.
struct SmallStates {
  std::string fbf;  // paper check, N = 1, 512 bits: three filters
  std::string bloom;
  std::string exact;
  std::string none;

  std::vector<std::string> all() const { return {fbf, bloom, exact, none}; }
};

SmallStates MakeSmallStates() {
  FbfConfig c;
  c.check = MembershipCheck::kPaper;
  c.past_filters = 1;
  c.bits_per_filter = 512;
  c.hashes = 2;
  c.refresh = Millis{100};
  c.memory_limit_bytes = 64 * 64;  // 64 filters of 512 bits
  ForgetfulBloomFilter fbf = Created(ForgetfulBloomFilter::Create(c, Millis{0}));
  PlainBloomDedup bloom = Created(PlainBloomDedup::Create(512, 2, 1));
  ExactWindowDedup exact =
      Created(ExactWindowDedup::Create(Millis{1000}, 1, Millis{0}, uint64_t{1} << 20));
  NoDedup none;
  uint64_t seed = 8;
  for (DedupFilter* f : std::initializer_list<DedupFilter*>{&fbf, &bloom, &exact}) {
    Workload workload(seed++, Millis{0}, 70, 6);
    for (int i = 0; i < 20; ++i) workload.Step(*f, nullptr);
  }
  (void)none.TestAndInsert(Id(1));
  SmallStates states{Bytes(fbf), Bytes(bloom), Bytes(exact), Bytes(none)};
  for (const std::string& state : states.all()) EXPECT_TRUE(DecodeDedupFilter(state).ok());
  return states;
}

TEST(StateCodec, RejectsEveryTruncationOfEveryMode) {
  for (const std::string& state : MakeSmallStates().all()) {
    SCOPED_TRACE("mode " + std::to_string(Le(state, 6, 1)));
    for (size_t len = 0; len < state.size(); ++len) {
      auto decoded = DecodeDedupFilter(std::string_view(state).substr(0, len));
      ASSERT_FALSE(decoded.ok()) << "accepted a state truncated to " << len << " bytes";
      EXPECT_NE(decoded.message().find("corrupt"), std::string::npos) << decoded.error();
    }
  }
}

TEST(StateCodec, RejectsTrailingBytes) {
  for (std::string state : MakeSmallStates().all()) {
    state.push_back('\0');
    EXPECT_FALSE(DecodeDedupFilter(state).ok());
  }
}

TEST(StateCodec, RejectsEveryFlippedByte) {
  for (const std::string& state : MakeSmallStates().all()) {
    SCOPED_TRACE("mode " + std::to_string(Le(state, 6, 1)));
    for (size_t i = 0; i < state.size(); ++i) {
      for (unsigned char mask : {0x01, 0x80, 0xFF}) {
        std::string bad = state;
        bad[i] = static_cast<char>(bad[i] ^ mask);
        ASSERT_FALSE(DecodeDedupFilter(bad).ok())
            << "accepted byte " << i << " xor " << static_cast<int>(mask);
      }
    }
  }
}

TEST(StateCodec, RejectsAWrongMagic) {
  std::string state = MakeSmallStates().fbf;
  state[3] = 'X';
  Reseal(state);
  auto decoded = DecodeDedupFilter(state);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.message().find("magic"), std::string::npos) << decoded.error();
}

TEST(StateCodec, RejectsAnUnknownVersionEvenWithAValidChecksum) {
  for (uint64_t version : {0, 1, 4, 0xFFFF}) {
    auto decoded = DecodeDedupFilter(WithField(MakeSmallStates().fbf, 4, 2, version));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.message().find("version"), std::string::npos) << decoded.error();
  }
}

TEST(StateCodec, RejectsAPayloadLengthThatDoesNotMatch) {
  const std::string state = MakeSmallStates().fbf;
  const uint64_t length = Le(state, 8, 8);
  for (uint64_t bad : {length - 1, length + 1, uint64_t{0}, ~uint64_t{0}, uint64_t{1} << 63}) {
    auto decoded = DecodeDedupFilter(WithField(state, 8, 8, bad));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.message().find("length"), std::string::npos) << decoded.error();
  }
}

TEST(StateCodec, RejectsAChecksumMismatch) {
  std::string state = MakeSmallStates().bloom;
  state[state.size() - 1] = static_cast<char>(state[state.size() - 1] ^ 1);
  auto decoded = DecodeDedupFilter(state);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.message().find("checksum"), std::string::npos) << decoded.error();
}

TEST(StateCodec, RejectsAnUnknownMode) {
  for (uint64_t mode : {5, 9, 255}) {
    auto decoded = DecodeDedupFilter(WithField(MakeSmallStates().none, 6, 1, mode));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.message().find("mode"), std::string::npos) << decoded.error();
  }
}

TEST(StateCodec, RejectsInputThatIsNotAState) {
  for (std::string_view junk : {std::string_view(""), std::string_view("OCDF"),
                                std::string_view("hello, world: not a filter state at all")}) {
    EXPECT_FALSE(DecodeDedupFilter(junk).ok());
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(static_cast<size_t>(rng() % 200), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    if (junk.size() >= 4 && i % 2 == 0) junk.replace(0, 4, "OCDF");
    EXPECT_FALSE(DecodeDedupFilter(junk).ok());
  }
}

// Every field the decoder reads is validated, even behind a valid checksum (a state
// written by a buggy or foreign writer). Offsets follow the layout pinned above for
// the small paper-check FBF of MakeSmallStates().
TEST(StateCodec, RejectsFbfFieldsOutOfRangeBehindAValidChecksum) {
  const std::string state = MakeSmallStates().fbf;
  struct Bad {
    const char* what;
    size_t offset;
    size_t size;
    uint64_t value;
  };
  using namespace fbf_at;  // NOLINT(google-build-using-namespace)
  const size_t word_count = kFirstSlot + 32;
  const Bad bad[] = {
      {"zero bits", kBits, 8, 0},
      {"more bits than the stored words", kBits, 8, 1024},
      {"zero hashes", kHashes, 4, 0},
      {"31 hashes", kHashes, 4, 31},
      {"768-bit blocks", kBlockBits, 4, 768},
      {"1024-bit blocks over 512-bit words", kBlockBits, 4, 1024},
      {"zero past filters", kPastFilters, 4, 0},
      // 0xFFFFFFFD + 3 wraps to 0 in 32 bits: once accepted, with no slots behind it.
      {"past filters that wrap around max filters", kPastFilters, 4, 0xFFFFFFFD},
      {"past filters that wrap around max filters (paper check)", kPastFilters, 4, 0xFFFFFFFE},
      {"zero refresh", kRefresh, 8, 0},
      {"negative refresh", kRefresh, 8, static_cast<uint64_t>(-100)},
      {"unknown check", kCheck, 1, 3},
      {"window beyond (N + 1) * t", kWindow, 8, 201},
      {"negative window", kWindow, 8, static_cast<uint64_t>(-1)},
      {"target fpp of 2", kTargetFpp, 8, std::bit_cast<uint64_t>(2.0)},
      {"negative refresh step", kRefreshStep, 8, static_cast<uint64_t>(-1)},
      {"max filters below N + 2", kMaxFilters, 4, 2},
      {"zero adaptation interval", kAdaptEvery, 8, 0},
      {"unknown model", kModel, 1, 2},
      {"slice capacity beyond 2^48", kSliceCapacity, 8, (uint64_t{1} << 48) + 1},
      {"zero current refresh period", kRefreshNow, 8, 0},
      // Found by filter_state_fuzz past the checksum: a clock jump then refreshed a
      // ring that nothing could drop from, one period at a time, for minutes.
      {"a current refresh period too short for the window", kRefreshNow, 8, 1},
      {"negative current refresh period", kRefreshNow, 8, static_cast<uint64_t>(-5)},
      {"zero target filters", kTargetFilters, 4, 0},
      {"target filters above max", kTargetFilters, 4, 65},
      {"a memory bound below the ring's filters", kMemoryLimit, 8, 2 * 64},
      {"ids forgotten early without a time", kForgottenIds, 8, 3},
      {"ids forgotten early after the clock", kLostUntil, 8, 1u << 30},
      {"a time forgotten early without ids", kLostUntil, 8, 5},
      {"no slots", kSlots, 4, 0},
      {"fewer slots than a ring needs", kSlots, 4, 2},
      {"more slots than stored", kSlots, 4, 4},
      {"absurd slot count", kSlots, 4, 0xFFFFFFFF},
      // Regression: once accepted, the wrapped difference reached a float-to-integer
      // cast of the adaptation (undefined behaviour).
      {"count at the last adaptation above the total", kInsertedAtLastAdapt, 8, ~uint64_t{0}},
      {"a filter's count above the total", kFirstSlot + 8, 8, ~uint64_t{0}},
      {"wrong word count in a slot", word_count, 8, 7},
      {"huge word count in a slot", word_count, 8, ~uint64_t{0}},
  };
  for (const Bad& b : bad) {
    auto decoded = DecodeDedupFilter(WithField(state, b.offset, b.size, b.value));
    EXPECT_FALSE(decoded.ok()) << "accepted an fbf state with " << b.what;
  }  // Found by filter_state_fuzz once it reached past the checksum: a time forgotten
  // early long before any filter clock overflowed the window held (now - lost until).
  const std::string with_ids = WithField(state, kForgottenIds, 8, 3);
  EXPECT_FALSE(
      DecodeDedupFilter(WithField(with_ids, kLostUntil, 8, uint64_t{1} << 63 | uint64_t{5})).ok())
      << "accepted a time forgotten early before every filter clock";
  EXPECT_TRUE(DecodeDedupFilter(WithField(with_ids, kLostUntil, 8, 5)).ok())
      << "refused a time forgotten early within the clock's range";
}

// In a death test's child: decodes `state` with `headroom` bytes of address space
// beyond what the process has, and exits 0 if the decoder refused it without running
// out (1 if it decoded it or could not allocate).
[[noreturn, maybe_unused]] void DecodeUnderAnAddressLimit(const std::string& state,
                                                          size_t headroom) {
  long pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) +
                       static_cast<rlim_t>(headroom);
  const rlimit address_space{limit, limit};
  setrlimit(RLIMIT_AS, &address_space);
  auto decoded = DecodeDedupFilter(state);
  const std::string said = decoded.ok() ? "decoded" : decoded.message();
  std::fprintf(stderr, "%s\n", said.c_str());
  std::_Exit(!decoded.ok() && said.find("allocate") == std::string::npos ? 0 : 1);
}

// Regression: the decoder built the ring the state's configuration names (past
// filters + 3 of bits_per_filter each) before reading the filters its bytes hold. A
// state of 1 MiB declaring 4,093 past filters of 1 MiB asked for 4 GiB, ~4,000 times
// its size, before any check could refuse it. Run in a child under an address-space
// limit of 1 GiB more than it has, the decode must fail on the state's own bytes, not
// on an allocation. (Sanitizers reserve address space and cannot run under the limit.)
TEST(StateCodec, AllocatesNoMoreForAnFbfStateThanItsBytesHold) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's reservations";
#else
  using namespace fbf_at;  // NOLINT(google-build-using-namespace)
  std::string state = MakeSmallStates().fbf;
  constexpr uint64_t kFilterBits = uint64_t{8} << 20;  // 1 MiB a filter
  PutLe(state, kBits, 8, kFilterBits);
  PutLe(state, kPastFilters, 4, 4093);
  PutLe(state, kMaxFilters, 4, 4096);
  PutLe(state, kMemoryLimit, 8, 0);
  // Bytes enough that one filter of the declared size passes the payload check.
  const size_t padding = kFilterBits / 8;
  state.insert(state.size() - 8, padding, '\0');
  PutLe(state, 8, 8, Le(state, 8, 8) + padding);
  Reseal(state);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(DecodeUnderAnAddressLimit(state, size_t{1} << 30), ::testing::ExitedWithCode(0), "");
#endif
}

TEST(StateCodec, RejectsBloomFieldsOutOfRangeBehindAValidChecksum) {
  using namespace bloom_at;  // NOLINT(google-build-using-namespace)
  const std::string state = MakeSmallStates().bloom;
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kBits, 8, 0)).ok()) << "zero bits";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kBits, 8, 1024)).ok()) << "bits beyond the words";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kHashes, 4, 0)).ok()) << "zero hashes";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kHashes, 4, 31)).ok()) << "31 hashes";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kBlockBits, 4, 0)).ok()) << "0-bit blocks";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kBlockBits, 4, 1024)).ok())
      << "1024-bit blocks over 512-bit words";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kWordCount, 8, 9)).ok()) << "wrong word count";
}

TEST(StateCodec, RejectsExactFieldsOutOfRangeBehindAValidChecksum) {
  using namespace exact_at;  // NOLINT(google-build-using-namespace)
  const std::string state = MakeSmallStates().exact;
  const uint64_t entries = Le(state, kEntries, 8);
  ASSERT_GE(entries, 2u);
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kWindow, 8, 0)).ok()) << "zero window";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kWindow, 8, static_cast<uint64_t>(-3))).ok())
      << "negative window";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kFirstTime, 8, Le(state, kNow, 8) + 1)).ok())
      << "an entry newer than the clock";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kEntries, 8, entries + 1)).ok())
      << "more entries than stored";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kEntries, 8, entries - 1)).ok())
      << "fewer entries than stored";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kEntries, 8, ~uint64_t{0})).ok())
      << "absurd entries";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kMemoryLimit, 8, 1000)).ok())
      << "a memory bound that holds no id";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kForgottenIds, 8, 1)).ok())
      << "ids forgotten early without a time";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kLostUntil, 8, Le(state, kNow, 8) + 1)).ok())
      << "ids forgotten early after the clock";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kFirstKey, 8, 0)).ok()) << "zero key";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kFirstKey, 8, Le(state, kSecondKey, 8))).ok())
      << "repeated key";
  // Regression: an entry at INT64_MIN was accepted; forgotten at the memory bound, it
  // became a time forgotten until that the filter wrote and then refused to read.
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kFirstTime, 8, uint64_t{1} << 63)).ok())
      << "an entry before the clock's range";
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, kFirstTime, 8,
                                           static_cast<uint64_t>(-kMaxFilterTime.count() - 1)))
                   .ok())
      << "an entry just before the clock's range";
}

TEST(StateCodec, RejectsANoneStateWithAPayloadOfTheWrongSize) {
  std::string state = MakeSmallStates().none;
  std::string longer = state.substr(0, 24) + std::string(8, '\0') + state.substr(24);
  PutLe(longer, 8, 8, 16);
  Reseal(longer);
  EXPECT_FALSE(DecodeDedupFilter(longer).ok());
  std::string shorter = state.substr(0, 16) + state.substr(24);
  PutLe(shorter, 8, 8, 0);
  Reseal(shorter);
  EXPECT_FALSE(DecodeDedupFilter(shorter).ok());
}

// An entry count that the payload cannot hold must be rejected before the table is
// sized from it: a state of a few bytes must not make the decoder ask for petabytes.
TEST(StateCodec, RejectsAnExactStateWhoseEntryCountIsFarBeyondItsPayload) {
  const std::string state = MakeSmallStates().exact;
  base::Result<std::unique_ptr<DedupFilter>> decoded =
      base::Error(base::Errc::kInternal, "not run");
  EXPECT_NO_THROW(
      decoded = DecodeDedupFilter(WithField(state, exact_at::kEntries, 8, uint64_t{1} << 50)));
  EXPECT_FALSE(decoded.ok());
}

// The same for filter bits: a few hundred bytes must not allocate a 256 GiB filter.
TEST(StateCodec, RejectsAnFbfStateWhoseBitsAreFarBeyondItsPayload) {
  const std::string state = MakeSmallStates().fbf;
  base::Result<std::unique_ptr<DedupFilter>> decoded =
      base::Error(base::Errc::kInternal, "not run");
  EXPECT_NO_THROW(
      decoded = DecodeDedupFilter(WithField(state, fbf_at::kBits, 8, kMaxBlocks * kBlockBits)));
  EXPECT_FALSE(decoded.ok());
}

// Clock fields are read too: a next refresh time before the current time by more than
// the clock can represent is corrupt (AdvanceTo would overflow on it).
TEST(StateCodec, RejectsAnFbfStateWithANextRefreshFarBeforeItsClock) {
  const std::string state = MakeSmallStates().fbf;
  const uint64_t min = static_cast<uint64_t>(std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(DecodeDedupFilter(WithField(state, fbf_at::kNextRefresh, 8, min)).ok());
}

}  // namespace
}  // namespace oncecount::filter
