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
