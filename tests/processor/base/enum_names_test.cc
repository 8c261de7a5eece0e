#include "processor/base/enum_names.h"

#include <gtest/gtest.h>

namespace oncecount::base {
namespace {

enum class Fruit : uint8_t { kApple = 0, kPear = 1, kPlum = 2, kFig = 3 };

constexpr std::array<EnumName<Fruit>, 3> kFruitNames = {{
    {Fruit::kApple, "apple"},
    {Fruit::kPear, "pear"},
    {Fruit::kPlum, "plum"},
}};

TEST(EnumNames, NamesEveryListedValueAndCallsTheRestUnknown) {
  EXPECT_STREQ(NameOf(kFruitNames, Fruit::kPear), "pear");
  EXPECT_STREQ(NameOf(kFruitNames, Fruit::kFig), "unknown");
}

TEST(EnumNames, ParsesExactlyTheNamesItPrints) {
  for (const EnumName<Fruit>& entry : kFruitNames) {
    EXPECT_EQ(ParseName(kFruitNames, NameOf(kFruitNames, entry.value)), entry.value);
  }
  EXPECT_EQ(ParseName(kFruitNames, "Apple"), std::nullopt);
  EXPECT_EQ(ParseName(kFruitNames, "apple "), std::nullopt);
  EXPECT_EQ(ParseName(kFruitNames, ""), std::nullopt);
  EXPECT_EQ(ParseName(kFruitNames, "unknown"), std::nullopt);
}

TEST(EnumNames, ListsTheChoicesForAnErrorMessage) {
  EXPECT_EQ(ChoicesOf(kFruitNames), "apple, pear or plum");
  constexpr std::array<EnumName<Fruit>, 1> kOne = {{{Fruit::kFig, "fig"}}};
  EXPECT_EQ(ChoicesOf(kOne), "fig");
  constexpr std::array<EnumName<Fruit>, 2> kTwo = {{{Fruit::kFig, "fig"}, {Fruit::kPlum, "plum"}}};
  EXPECT_EQ(ChoicesOf(kTwo), "fig or plum");
}

TEST(EnumNames, SaysWhatItExpectedAndWhatItGotForAnUnknownName) {
  EXPECT_EQ(ExpectedOneOf(kFruitNames, "kiwi"), "expected apple, pear or plum, got \"kiwi\"");
  EXPECT_EQ(ExpectedOneOf(kFruitNames, ""), "expected apple, pear or plum, got \"\"");
}

TEST(EnumNames, TakesASubsetInTheOrderGivenWithTheTablesNames) {
  constexpr auto kStoneFruit = Subset(kFruitNames, {Fruit::kPlum, Fruit::kApple});
  static_assert(kStoneFruit.size() == 2);
  EXPECT_EQ(kStoneFruit[0].value, Fruit::kPlum);
  EXPECT_STREQ(kStoneFruit[0].name, "plum");
  EXPECT_STREQ(kStoneFruit[1].name, "apple");
  EXPECT_EQ(ParseName(kStoneFruit, "pear"), std::nullopt);
  EXPECT_EQ(ChoicesOf(kStoneFruit), "plum or apple");
}

TEST(EnumNames, TellsWhetherATableIsListedInValueOrder) {
  EXPECT_TRUE(ListedInValueOrder(kFruitNames));
  constexpr std::array<EnumName<Fruit>, 2> kSwapped = {
      {{Fruit::kPear, "pear"}, {Fruit::kApple, "apple"}}};
  EXPECT_FALSE(ListedInValueOrder(kSwapped));
  constexpr std::array<EnumName<Fruit>, 2> kGap = {
      {{Fruit::kApple, "apple"}, {Fruit::kPlum, "plum"}}};
  EXPECT_FALSE(ListedInValueOrder(kGap));
}

}  // namespace
}  // namespace oncecount::base
