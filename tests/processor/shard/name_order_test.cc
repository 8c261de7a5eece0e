#include "processor/shard/name_order.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace oncecount::shard {
namespace {

TEST(NameOrder, OrdersAsStringViewDoesForNamesOfEveryLengthAndByte) {
  std::mt19937_64 rng(7);
  // Few distinct bytes and shared prefixes, so that pairs differ late, at every offset
  // relative to the eight-byte words, and bytes above 0x7f (unsigned in the order).
  const std::string alphabet = std::string("ab-/") + '\x80' + '\xff';
  std::vector<std::string> names;
  for (int i = 0; i < 600; ++i) {
    std::string name = i % 2 == 0 ? "counter-" : "";
    const size_t length = rng() % 20;
    for (size_t c = 0; c < length; ++c) name += alphabet[rng() % alphabet.size()];
    names.push_back(std::move(name));
  }
  size_t less = 0;
  for (const std::string& a : names) {
    for (const std::string& b : names) {
      ASSERT_EQ(NameLess(a, b), std::string_view(a) < std::string_view(b))
          << '"' << a << "\" against \"" << b << '"';
      less += NameLess(a, b) ? 1 : 0;
    }
  }
  EXPECT_GT(less, names.size() * names.size() / 4);  // the pairs were not all equal
}

TEST(NameOrder, APrefixSortsBeforeTheNamesItStarts) {
  EXPECT_TRUE(NameLess("counter-1", "counter-12"));
  EXPECT_FALSE(NameLess("counter-12", "counter-1"));
  EXPECT_TRUE(NameLess("", "a"));
  EXPECT_FALSE(NameLess("", ""));
  EXPECT_FALSE(NameLess("counter-123456789", "counter-123456789"));
}

}  // namespace
}  // namespace oncecount::shard
