#include "processor/filter/id_hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "processor/filter/bloom/blocked_bloom.h"

namespace oncecount::filter {
namespace {

TEST(IdHash, KeyZeroIsPlainXxh3SoShardsFromBeforeKeysHashAsTheyDid) {
  const std::string id = "client-1/1";
  EXPECT_EQ(HashIdempotencyId(id, kUnkeyed).value, XXH3_64bits(id.data(), id.size()));
  EXPECT_NE(HashIdempotencyId("client-1/1", kUnkeyed), HashIdempotencyId("client-1/2", kUnkeyed));
}

TEST(IdHash, AnotherKeyGivesAnotherHashOfEveryId) {
  for (int i = 0; i < 1000; ++i) {
    const std::string id = "client/" + std::to_string(i);
    EXPECT_NE(HashIdempotencyId(id, IdHashKey{1}), HashIdempotencyId(id, IdHashKey{2})) << id;
    EXPECT_EQ(HashIdempotencyId(id, IdHashKey{7}), HashIdempotencyId(id, IdHashKey{7})) << id;
  }
}

// The attack keyed hashing stops. A producer that knows the configuration (the filter
// seeds are in the source) and the hash searches offline for ids that land in the
// Bloom block of a victim's next id; sent as events, they fill that block, and the
// victim's event is then dropped as a duplicate although nobody sent it before.
// Under a key it does not know, the same ids spread over every block.
TEST(IdHash, IdsCraftedToShareTheBlockOfAVictimUnderAKnownKeySpreadUnderASecretOne) {
  constexpr uint64_t kBlocks = 64;
  constexpr uint64_t kFilterSeed = 0x6F6E6365636F756EULL;
  constexpr int kHashes = 7;
  constexpr size_t kCrafted = 600;
  auto made = BlockedBloom::Create(kBlocks * kBlockBits, kHashes, kFilterSeed);
  ASSERT_TRUE(made.ok()) << made.error();
  const BloomView& view = made.value().view();
  const auto block_of = [&view](IdHash hash) {
    return static_cast<uint64_t>(view.BlockFor(view.Mix(hash)) - view.words) >>
           view.block_word_shift;
  };

  const std::string victim = "victim/1";
  const IdHashKey known = kUnkeyed;
  const uint64_t target = block_of(HashIdempotencyId(victim, known));
  std::vector<std::string> crafted;
  for (uint64_t i = 0; crafted.size() < kCrafted; ++i) {
    std::string id = "attacker/" + std::to_string(i);
    if (block_of(HashIdempotencyId(id, known)) == target) crafted.push_back(std::move(id));
  }

  // Under the key the attacker searched with, the attack works: the victim's first
  // event reads as a duplicate. (This is what the test guards against; if the block
  // did not fill, the test would prove nothing.)
  {
    auto filter = BlockedBloom::Create(kBlocks * kBlockBits, kHashes, kFilterSeed);
    ASSERT_TRUE(filter.ok());
    for (const std::string& id : crafted) filter.value().Insert(HashIdempotencyId(id, known));
    EXPECT_TRUE(filter.value().MayContain(HashIdempotencyId(victim, known)));
  }

  // Under keys drawn as shards draw theirs, the crafted ids fill no block more than a
  // few times the mean, and the victim is new.
  std::mt19937_64 draw(0x5eed);
  for (int k = 0; k < 16; ++k) {
    const IdHashKey secret{draw()};
    auto filter = BlockedBloom::Create(kBlocks * kBlockBits, kHashes, kFilterSeed);
    ASSERT_TRUE(filter.ok());
    std::vector<uint64_t> per_block(kBlocks, 0);
    for (const std::string& id : crafted) {
      const IdHash hash = HashIdempotencyId(id, secret);
      ++per_block[block_of(hash)];
      filter.value().Insert(hash);
    }
    const uint64_t fullest = *std::max_element(per_block.begin(), per_block.end());
    EXPECT_LE(fullest, 3 * kCrafted / kBlocks) << "key " << secret.value;
    EXPECT_FALSE(filter.value().MayContain(HashIdempotencyId(victim, secret)))
        << "key " << secret.value;
  }
}

}  // namespace
}  // namespace oncecount::filter
