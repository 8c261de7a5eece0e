#include "processor/filter/bloom/blocked_bloom.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xB10C)};
}

BlockedBloom Make(uint64_t bits, int hashes, uint64_t seed, uint32_t block = kBlockBits) {
  auto created = BlockedBloom::Create(bits, hashes, seed, block);
  if (!created.ok()) ADD_FAILURE() << created.error();
  return std::move(created).value();
}

uint64_t SetBits(const BlockedBloom& f) {
  uint64_t set = 0;
  for (uint64_t w : f.words()) set += static_cast<uint64_t>(std::popcount(w));
  return set;
}

TEST(BlockedBloom, HasNoFalseNegatives) {
  for (uint32_t block : {512u, 1024u}) {
    for (int k : {1, 2, 5, 11, 30}) {
      BlockedBloom f = Make(1 << 14, k, 42, block);
      for (uint64_t i = 0; i < 4000; ++i) f.Insert(Id(i));  // overfull for large k
      for (uint64_t i = 0; i < 4000; ++i) {
        ASSERT_TRUE(f.MayContain(Id(i))) << "block " << block << ", k " << k << ", id " << i;
      }
      EXPECT_EQ(f.inserted(), 4000u);
    }
  }
}

TEST(BlockedBloom, StartsEmpty) {
  BlockedBloom f = Make(4096, 4, 1);
  EXPECT_EQ(f.inserted(), 0u);
  EXPECT_EQ(f.FillRatio(), 0.0);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_FALSE(f.MayContain(Id(i)));
}

TEST(BlockedBloom, RoundsBitsUpToWholeBlocks) {
  EXPECT_EQ(Make(1, 3, 0).bits(), 512u);
  EXPECT_EQ(Make(512, 3, 0).bits(), 512u);
  EXPECT_EQ(Make(513, 3, 0).bits(), 1024u);
  EXPECT_EQ(Make(1, 3, 0, 1024).bits(), 1024u);
  EXPECT_EQ(Make(1025, 3, 0, 1024).bits(), 2048u);
  EXPECT_EQ(Make(1025, 3, 0, 1024).words().size(), 32u);
  EXPECT_EQ(Make(1025, 3, 0, 1024).block_bits(), 1024u);
  EXPECT_EQ(Make(1025, 3, 0).block_bits(), 512u);
  EXPECT_EQ(Make(1025, 7, 99).hashes(), 7);
  EXPECT_EQ(Make(1025, 7, 99).seed(), 99u);
}

// Every id sets its k bits inside one block: inserting one id into an empty filter
// touches one block only, and sets between 1 and k bits.
TEST(BlockedBloom, PutsAllBitsOfAnIdInOneBlock) {
  for (uint32_t block : {512u, 1024u}) {
    for (uint64_t i = 0; i < 200; ++i) {
      BlockedBloom f = Make(64 * block, 8, 5, block);
      f.Insert(Id(i));
      const uint64_t words_per_block = block / 64;
      int blocks_touched = 0;
      for (uint64_t b = 0; b < 64; ++b) {
        uint64_t any = 0;
        for (uint64_t w = 0; w < words_per_block; ++w) any |= f.words()[b * words_per_block + w];
        blocks_touched += any != 0;
      }
      ASSERT_EQ(blocks_touched, 1);
      ASSERT_GE(SetBits(f), 1u);
      ASSERT_LE(SetBits(f), 8u);
    }
  }
}

TEST(BlockedBloom, FillRatioIsTheFractionOfBitsSet) {
  BlockedBloom f = Make(1 << 16, 3, 8);
  f.Insert(Id(1));
  EXPECT_EQ(f.FillRatio(), static_cast<double>(SetBits(f)) / (1 << 16));
  for (uint64_t i = 2; i <= 10000; ++i) f.Insert(Id(i));
  // Expected fill 1 - e^{-kn/m} (blocking does not change the mean): 0.3674; the
  // binomial sd over 65536 bits is 0.2%, 2% is ten of them.
  const double expected = 1 - std::exp(-3.0 * 10000 / (1 << 16));
  EXPECT_NEAR(f.FillRatio(), expected, 0.02 * expected);
  EXPECT_EQ(f.FillRatio(), static_cast<double>(SetBits(f)) / (1 << 16));
}

TEST(BlockedBloom, ResetEmptiesTheFilterAndChangesItsSeed) {
  BlockedBloom f = Make(1 << 14, 4, 1);
  for (uint64_t i = 0; i < 3000; ++i) f.Insert(Id(i));
  const std::vector<uint64_t> before(f.words().begin(), f.words().end());
  ASSERT_GT(f.FillRatio(), 0.1);
  f.Reset(2);
  EXPECT_EQ(f.seed(), 2u);
  EXPECT_EQ(f.inserted(), 0u);
  EXPECT_EQ(f.FillRatio(), 0.0);
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_FALSE(f.MayContain(Id(i)));
  // The same ids under the new seed land elsewhere: a recycled filter does not repeat
  // its previous life.
  for (uint64_t i = 0; i < 3000; ++i) f.Insert(Id(i));
  const std::vector<uint64_t> after(f.words().begin(), f.words().end());
  EXPECT_NE(before, after);
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_TRUE(f.MayContain(Id(i)));
}

TEST(BlockedBloom, ResetOfAnUntouchedFilterKeepsItEmpty) {
  BlockedBloom f = Make(4096, 4, 1);
  f.Reset(3);
  EXPECT_EQ(f.seed(), 3u);
  EXPECT_EQ(f.FillRatio(), 0.0);
  f.Insert(Id(1));
  f.Reset(4);
  EXPECT_EQ(f.FillRatio(), 0.0);
  EXPECT_FALSE(f.MayContain(Id(1)));
}

TEST(BlockedBloom, SameSeedAndIdsGiveTheSameBitsAndOtherSeedsOtherBits) {
  BlockedBloom a = Make(8192, 5, 77);
  BlockedBloom b = Make(8192, 5, 77);
  BlockedBloom c = Make(8192, 5, 78);
  for (uint64_t i = 0; i < 500; ++i) {
    a.Insert(Id(i));
    b.Insert(Id(i));
    c.Insert(Id(i));
  }
  EXPECT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin()));
  EXPECT_FALSE(std::equal(a.words().begin(), a.words().end(), c.words().begin()));
}

TEST(BlockedBloom, RestoreReplacesTheContents) {
  BlockedBloom a = Make(4096, 3, 9);
  for (uint64_t i = 0; i < 300; ++i) a.Insert(Id(i));
  BlockedBloom b = Make(4096, 3, 9);
  b.Insert(Id(100000));
  b.Restore(a.words(), a.inserted());
  EXPECT_EQ(b.inserted(), 300u);
  EXPECT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin()));
  for (uint64_t i = 0; i < 300; ++i) ASSERT_TRUE(b.MayContain(Id(i)));
  b.Reset(10);  // a restored filter is cleared by Reset too
  EXPECT_EQ(b.FillRatio(), 0.0);
}

TEST(BlockedBloom, ViewAnswersLikeTheFilter) {
  BlockedBloom f = Make(4096, 4, 12);
  for (uint64_t i = 0; i < 200; ++i) f.view().Insert(Id(i));
  for (uint64_t i = 0; i < 2000; ++i) {
    ASSERT_EQ(f.view().MayContain(Id(i)), f.MayContain(Id(i)));
    ASSERT_EQ(f.view().MayContainMixed(f.view().Mix(Id(i))), f.MayContain(Id(i)));
  }
}

void ExpectRejected(uint64_t bits, int hashes, uint32_t block, const std::string& word) {
  auto created = BlockedBloom::Create(bits, hashes, 0, block);
  ASSERT_FALSE(created.ok()) << "accepted bits " << bits << ", hashes " << hashes << ", block "
                             << block;
  EXPECT_NE(created.message().find(word), std::string::npos) << created.error();
}

TEST(BlockedBloom, RejectsBadParametersNamingThem) {
  ExpectRejected(0, 3, 512, "bits");
  ExpectRejected(kMaxBlocks * 512 + 1, 3, 512, "bits");
  ExpectRejected(kMaxBlocks * 1024 + 1, 3, 1024, "bits");
  ExpectRejected(1024, 0, 512, "hashes");
  ExpectRejected(1024, -3, 512, "hashes");
  ExpectRejected(1024, kMaxHashes + 1, 512, "hashes");
  ExpectRejected(1024, 3, 0, "block bits");
  ExpectRejected(1024, 3, 256, "block bits");
  ExpectRejected(1024, 3, 768, "block bits");
  ExpectRejected(1024, 3, 2048, "block bits");
}

}  // namespace
}  // namespace oncecount::filter
