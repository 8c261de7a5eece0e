#include "processor/json/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace oncecount::json {
namespace {

TEST(Utf8, AcceptsEveryWellFormedLengthAtItsBounds) {
  for (const char* good :
       {"", "a", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
        "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "z\xC3\xA4hler"}) {
    EXPECT_TRUE(IsValidUtf8(good)) << good;
  }
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x91\x8D!"), 4u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA4"), 2u);
}

TEST(Utf8, RejectsOverlongsSurrogatesBeyondTheRangeAndBrokenSequences) {
  for (const char* bad : {
           "\xC0\xAF",          // overlong "/"
           "\xC1\xBF",          // overlong
           "\xE0\x9F\xBF",      // overlong three bytes
           "\xF0\x8F\xBF\xBF",  // overlong four bytes
           "\xED\xA0\x80",      // a surrogate
           "\xF4\x90\x80\x80",  // past U+10FFFF
           "\xF5\x80\x80\x80",  // no such lead
           "\xFF\xFE",          // not UTF-8 at all
           "\x80",              // a lone continuation
           "\xC3",              // truncated
           "\xE2\x82",          // truncated
           "\xE2\x28\xA1",      // a continuation that is not one
       }) {
    EXPECT_FALSE(IsValidUtf8(bad)) << std::string(bad).size();
  }
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
}

}  // namespace
}  // namespace oncecount::json
