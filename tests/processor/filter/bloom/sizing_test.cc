#include "processor/filter/bloom/sizing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "processor/filter/bloom/fpp_model.h"

namespace oncecount::filter {
namespace {

double SliceIds(const SizingRequest& r, const FbfConfig& c) {
  return std::max(1.0, r.expected_rate * static_cast<double>(c.refresh.count()) / 1000.0);
}

std::string Describe(const SizingRequest& r) {
  return "rate " + std::to_string(r.expected_rate) + "/s, window " +
         std::to_string(r.window.count()) + " ms, target " + std::to_string(r.target_fpp) +
         ", check " + CheckName(r.check) + ", N " + std::to_string(r.past_filters) + ", block " +
         std::to_string(r.block_bits);
}

TEST(SizeFbf, MeetsTheTargetWithTheSmallestFiltersThatDo) {
  // Representative requests: the sizing search costs up to seconds for large windows
  // at high rates (the model's Poisson sum grows with ids per block), so the grid
  // stays small.
  const SizingRequest requests[] = {
      {50, Millis{1000}, 1e-3, MembershipCheck::kPaper, 1, 512},
      {50, Millis{1000}, 1e-9, MembershipCheck::kPairs, 1, 1024},
      {5000, Millis{60000}, 1e-6, MembershipCheck::kPairs, 8, 512},
      {5000, Millis{60000}, 1e-6, MembershipCheck::kPaper, 8, 512},
      {5000, Millis{60000}, 1e-6, MembershipCheck::kPairs, 8, 1024},
      {5000, Millis{60001}, 1e-3, MembershipCheck::kPaper, 3, 1024},
      {20000, Millis{10000}, 1e-9, MembershipCheck::kPairs, 8, 512},
      {20000, Millis{10000}, 1e-9, MembershipCheck::kPaper, 2, 512},
      {300, Millis{3'600'000}, 1e-6, MembershipCheck::kPairs, 16, 512},
      {1, Millis{1}, 0.5, MembershipCheck::kPaper, 1, 512},  // one id per slice, 1 ms window
  };
  for (const SizingRequest& r : requests) {
    SCOPED_TRACE(Describe(r));
    auto result = SizeFbf(r);
    ASSERT_TRUE(result.ok()) << result.error();
    const FbfConfig& c = result.value();
    EXPECT_EQ(c.window, r.window);
    EXPECT_EQ(c.target_fpp, r.target_fpp);
    EXPECT_EQ(c.check, r.check);
    EXPECT_EQ(c.past_filters, r.past_filters);
    EXPECT_EQ(c.block_bits, r.block_bits);
    // The nominal window covers the window, with the shortest such period.
    EXPECT_GE((r.past_filters + 1) * c.refresh, r.window);
    EXPECT_LT((r.past_filters + 1) * (c.refresh - Millis{1}), r.window);
    EXPECT_EQ(c.bits_per_filter % r.block_bits, 0u);
    // The worst point of a steady load meets the target, with the headroom Algorithm 3
    // needs...
    const double slice = SliceIds(r, c);
    const double target = r.target_fpp * kSizingHeadroom;
    EXPECT_LE(SteadyStateWorstFpp(c, slice, ConstituentModel::kBlocked), target);
    EXPECT_LE(SteadyStateWorstFpp(c, slice, ConstituentModel::kBlocked), r.target_fpp);
    // ...and one block less per filter would not, whatever the hash count.
    if (c.bits_per_filter > r.block_bits) {
      FbfConfig smaller = c;
      smaller.bits_per_filter -= r.block_bits;
      for (int k = kMinHashes; k <= kMaxHashes; ++k) {
        smaller.hashes = k;
        ASSERT_GT(SteadyStateWorstFpp(smaller, slice, ConstituentModel::kBlocked), target)
            << "k " << k;
      }
    }
    EXPECT_TRUE(ForgetfulBloomFilter::Create(c, Millis{0}).ok());
  }
}

TEST(SliceCapacity, KeepsTheSizedRingAtTheTargetAndOneIdMoreWouldNot) {
  for (MembershipCheck check : {MembershipCheck::kPairs, MembershipCheck::kPaper}) {
    auto sized = SizeFbf({10000, Millis{60000}, 1e-6, check});
    ASSERT_TRUE(sized.ok()) << sized.error();
    const FbfConfig& c = sized.value();
    EXPECT_EQ(c.slice_capacity, SliceCapacity(c));
    const auto capacity = static_cast<double>(c.slice_capacity);
    EXPECT_LE(SteadyStateWorstFpp(c, capacity, ConstituentModel::kBlocked), c.target_fpp);
    EXPECT_GT(SteadyStateWorstFpp(c, capacity + 1, ConstituentModel::kBlocked), c.target_fpp);
    // Above the slice of the expected rate (the sizing's headroom), so that early
    // refreshes start only once the load outgrows the sizing.
    const double slice = 10000 * static_cast<double>(c.refresh.count()) / 1000;
    EXPECT_GT(capacity, slice) << CheckName(check);
  }
}

TEST(SliceCapacity, IsAtLeastOneIdEvenWhenNoFillMeetsTheTarget) {
  FbfConfig c;
  c.bits_per_filter = 512;
  c.hashes = 1;
  c.past_filters = 1;
  c.refresh = Millis{100};
  c.target_fpp = 1e-12;
  EXPECT_EQ(SliceCapacity(c), 1u);
}

TEST(SizeFbf, UsesEightPastFiltersAndThePairsCheckByDefault) {
  SizingRequest r;
  r.expected_rate = 1000;
  r.window = Millis{9000};
  r.target_fpp = 1e-6;
  auto c = SizeFbf(r);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->past_filters, kDefaultPastFilters);
  EXPECT_EQ(c->check, MembershipCheck::kPairs);
  EXPECT_EQ(c->refresh, Millis{1000});
}

TEST(SizeFbf, NeedsFewerBitsForThePairsCheckThanForThePapersCheck) {
  for (double fpp : {1e-4, 1e-8}) {
    auto paper = SizeFbf({2000, Millis{60000}, fpp, MembershipCheck::kPaper, 8});
    auto pairs = SizeFbf({2000, Millis{60000}, fpp, MembershipCheck::kPairs, 8});
    ASSERT_TRUE(paper.ok() && pairs.ok());
    const double paper_bits = static_cast<double>(paper->bits_per_filter) * (8 + 2);
    const double pairs_bits = static_cast<double>(pairs->bits_per_filter) * (8 + 3);
    EXPECT_LT(pairs_bits, paper_bits) << fpp;
  }
}

void ExpectRejected(const SizingRequest& r, const std::string& word) {
  auto c = SizeFbf(r);
  ASSERT_FALSE(c.ok()) << "accepted " << Describe(r);
  EXPECT_NE(c.message().find(word), std::string::npos) << c.error();
}

TEST(SizeFbf, RejectsBadRequestsNamingTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double rate : {0.0, -5.0, nan}) ExpectRejected({rate, Millis{1000}, 1e-6}, "expected rate");
  for (int64_t w : {0, -1}) ExpectRejected({100, Millis{w}, 1e-6}, "window");
  for (double fpp : {0.0, 1.0, -1e-6, 2.0, nan})
    ExpectRejected({100, Millis{1000}, fpp}, "target fpp");
  ExpectRejected({100, Millis{1000}, 1e-6, MembershipCheck::kPairs, 0}, "past filters");
  ExpectRejected({100, Millis{1000}, 1e-6, MembershipCheck::kPairs, 8, 256}, "block bits");
}

TEST(SizeFbf, RejectsARequestNoFilterSizeCanMeet) {
  auto c = SizeFbf({1000, Millis{60000}, 1e-300});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("256 GiB"), std::string::npos) << c.error();
}

TEST(SteadyStateWorstFpp, IsTheCheckOverOneSliceInTheFutureAndTwoInEveryOtherFilter) {
  FbfConfig c;
  c.past_filters = 2;
  c.bits_per_filter = 4096;
  c.hashes = 3;
  const double one = BlockedBloomFpp(4096, 3, 100);
  const double two = BlockedBloomFpp(4096, 3, 200);
  c.check = MembershipCheck::kPairs;  // 5 filters
  EXPECT_DOUBLE_EQ(SteadyStateWorstFpp(c, 100, ConstituentModel::kBlocked),
                   PairsCheckFpp(std::vector<double>{one, two, two, two, two}));
  c.check = MembershipCheck::kPaper;  // 4 filters
  EXPECT_DOUBLE_EQ(SteadyStateWorstFpp(c, 100, ConstituentModel::kBlocked),
                   PaperCheckFpp(std::vector<double>{one, two, two, two}));
  EXPECT_DOUBLE_EQ(SteadyStateWorstFpp(c, 100, ConstituentModel::kClassic),
                   PaperCheckFpp(std::vector<double>{
                       ClassicBloomFpp(4096, 3, 100), ClassicBloomFpp(4096, 3, 200),
                       ClassicBloomFpp(4096, 3, 200), ClassicBloomFpp(4096, 3, 200)}));
}

TEST(SizeBloom, HoldsTheIdsAtTheTargetWithTheSmallestFilter) {
  for (double ids : {1.0, 1000.0, 1e5}) {
    for (double fpp : {1e-2, 1e-6}) {
      auto size = SizeBloom(ids, fpp);
      ASSERT_TRUE(size.ok()) << size.error();
      EXPECT_EQ(size->bits % kBlockBits, 0u);
      EXPECT_LE(BlockedBloomFpp(static_cast<double>(size->bits), size->hashes, ids), fpp);
      if (size->bits > kBlockBits) {
        for (int k = kMinHashes; k <= kMaxHashes; ++k) {
          ASSERT_GT(BlockedBloomFpp(static_cast<double>(size->bits - kBlockBits), k, ids), fpp)
              << "ids " << ids << ", fpp " << fpp << ", k " << k;
        }
      }
    }
  }
  auto none = SizeBloom(0, 1e-3);
  auto one = SizeBloom(1, 1e-3);
  ASSERT_TRUE(none.ok() && one.ok());
  EXPECT_EQ(none->bits, one->bits);
}

TEST(SizeBloom, RejectsATargetOutsideZeroOne) {
  for (double fpp : {0.0, 1.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    auto size = SizeBloom(100, fpp);
    ASSERT_FALSE(size.ok());
    EXPECT_NE(size.message().find("target fpp"), std::string::npos) << size.error();
  }
}

}  // namespace
}  // namespace oncecount::filter
