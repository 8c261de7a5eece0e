#include "processor/filter/bit_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace oncecount::filter {
namespace {

void FillWithIndices(BitBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i) b.data()[i] = i + 1;
}

// Keeps the first words and zeroes the rest, whichever allocation each size takes
// (below 4 MiB an aligned allocation, above a mapping that is remapped).
void CheckResize(size_t from, size_t to) {
  BitBuffer b(from);
  FillWithIndices(b);
  b.Resize(to);
  ASSERT_EQ(b.size(), to);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 128, 0u);
  const size_t kept = std::min(from, to);
  size_t wrong = 0;
  for (size_t i = 0; i < to; ++i) wrong += b.data()[i] != (i < kept ? i + 1 : 0) ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << from << " -> " << to << " words";
}

constexpr size_t kMapped = (size_t{8} << 20) / 8;  // 8 MiB: a mapping
constexpr size_t kSmall = 1000;

TEST(BitBuffer, ResizeKeepsThePrefixAndZeroesTheRest) {
  CheckResize(kSmall, 3 * kSmall);
  CheckResize(3 * kSmall, kSmall);
  CheckResize(kMapped, 3 * kMapped);
  CheckResize(3 * kMapped, kMapped);
  CheckResize(kSmall, kMapped);
  CheckResize(kMapped, kSmall);
}

// A shrink inside one mapping leaves its tail in place; growing back must not show it.
TEST(BitBuffer, GrowingAfterAShrinkWithinOneMappingShowsZeroes) {
  BitBuffer b(kMapped);
  FillWithIndices(b);
  b.Resize(kMapped - 10);
  b.Resize(kMapped);
  for (size_t i = kMapped - 10; i < kMapped; ++i) EXPECT_EQ(b.data()[i], 0u) << i;
  EXPECT_EQ(b.data()[kMapped - 11], kMapped - 10);
}

}  // namespace
}  // namespace oncecount::filter
