#include "processor/base/ids.h"

#include <gtest/gtest.h>

#include <concepts>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace oncecount::base {
namespace {

TEST(StrongNumber, NeitherMixesWithTheOtherKindNorWithPlainIntegers) {
  EXPECT_FALSE((std::is_convertible_v<Epoch, Seq>));
  EXPECT_FALSE((std::is_convertible_v<Seq, Epoch>));
  EXPECT_FALSE((std::is_convertible_v<uint64_t, Epoch>));
  EXPECT_FALSE((std::is_convertible_v<Epoch, uint64_t>));
  EXPECT_FALSE((std::equality_comparable_with<Epoch, Seq>));
  EXPECT_FALSE((std::equality_comparable_with<Epoch, uint64_t>));
  EXPECT_FALSE((std::is_constructible_v<Seq, Epoch>));
}

TEST(StrongNumber, KeepsPartitionsAndOffsetsApart) {
  EXPECT_FALSE((std::is_convertible_v<int32_t, Partition>));
  EXPECT_FALSE((std::is_convertible_v<Partition, int32_t>));
  EXPECT_FALSE((std::is_convertible_v<int64_t, Offset>));
  EXPECT_FALSE((std::is_constructible_v<Offset, Partition>));
  EXPECT_FALSE((std::is_constructible_v<Partition, Offset>));
  EXPECT_FALSE((std::equality_comparable_with<Partition, Offset>));
  EXPECT_FALSE((std::equality_comparable_with<Offset, int64_t>));
}

TEST(StrongNumber, MeasuresTheDistanceBetweenTwoOffsets) {
  EXPECT_EQ(Offset(120).Since(Offset(100)), 20);
  EXPECT_EQ(Offset(100).Since(Offset(120)), -20);
  EXPECT_EQ(Offset(5).Since(Offset(5)), 0);
}

TEST(Offset, IsLogicalOnlyWhenNegative) {
  EXPECT_TRUE(IsLogical(Offset(-1)));
  EXPECT_TRUE(IsLogical(Offset(-2)));
  EXPECT_FALSE(IsLogical(Offset(0)));
  EXPECT_FALSE(IsLogical(Offset(42)));
}

TEST(Partition, AllPartitionsListsZeroToCountMinusOne) {
  EXPECT_EQ(AllPartitions(3), (std::vector<Partition>{Partition(0), Partition(1), Partition(2)}));
  EXPECT_TRUE(AllPartitions(0).empty());
}

TEST(StrongNumber, StartsAtZeroAndSteps) {
  EXPECT_EQ(Epoch().value(), 0u);
  EXPECT_EQ(Epoch(7).Next(), Epoch(8));
  EXPECT_EQ(Seq(7).Previous(), Seq(6));
  EXPECT_EQ(Seq(7).Plus(3), Seq(10));
  EXPECT_EQ(Seq(7).Plus(0), Seq(7));
}

TEST(StrongNumber, OrdersAsItsValue) {
  EXPECT_LT(Seq(1), Seq(2));
  EXPECT_GT(Epoch(3), Epoch(2));
  EXPECT_LE(Seq(2), Seq(2));
  EXPECT_NE(Seq(2), Seq(3));
  EXPECT_EQ(std::max(Epoch(4), Epoch(9)), Epoch(9));
}

TEST(StrongNumber, HashesAndPrintsAsItsValue) {
  std::unordered_set<Seq> seen{Seq(1), Seq(2), Seq(1)};
  EXPECT_EQ(seen.size(), 2u);
  std::ostringstream out;
  out << Epoch(12) << "/" << Seq(34);
  EXPECT_EQ(out.str(), "12/34");
}

}  // namespace
}  // namespace oncecount::base
