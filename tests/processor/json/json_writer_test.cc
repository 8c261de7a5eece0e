#include "processor/json/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace oncecount::json {
namespace {

TEST(JsonWriter, WritesNestedObjectsAndArraysWithCommas) {
  JsonWriter j;
  j.BeginObject().Key("a").Int(-1).Key("b").BeginArray().Uint(1).Uint(2).EndArray();
  j.Key("c").BeginObject().Key("d").Bool(true).Key("e").Null().EndObject().EndObject();
  EXPECT_EQ(j.str(), R"({"a":-1,"b":[1,2],"c":{"d":true,"e":null}})");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  JsonWriter j;
  j.String("a\"b\\c\n\t\x01 ä");
  EXPECT_EQ(j.str(), "\"a\\\"b\\\\c\\n\\t\\u0001 ä\"");
}

// Regression: an error message quoting a request's raw bytes made the body invalid JSON.
TEST(JsonWriter, WritesBytesThatAreNotUtf8AsReplacementCharacters) {
  JsonWriter j;
  j.String(
      "a\xC0\xAF"
      "b\xFF\xF0\x9F\x91\x8D\xE2\x82");
  EXPECT_EQ(j.str(),
            "\"a\\ufffd\\ufffdb\\ufffd"
            "\xF0\x9F\x91\x8D\\ufffd\\ufffd\"");
}

TEST(JsonWriter, WritesDoublesRoundTripAndNonFiniteAsNull) {
  JsonWriter j;
  j.BeginArray()
      .Double(0.1)
      .Double(1e-6)
      .Double(std::nan(""))
      .Double(std::numeric_limits<double>::infinity());
  j.EndArray();
  EXPECT_EQ(j.str(), "[0.10000000000000001,9.9999999999999995e-07,null,null]");
}

TEST(JsonWriter, WritesFloatsInTheirShortestRoundTripTextAndNonFiniteAsNull) {
  JsonWriter j;
  j.BeginArray().Float(0.1f).Float(1.2345678e-7f).Float(0).Float(std::nanf("")).EndArray();
  EXPECT_EQ(j.str(), "[0.1,1.2345679e-07,0,null]");
}

TEST(JsonWriter, InsertsRawJsonAsOneValue) {
  JsonWriter j;
  j.BeginObject().Key("x").Raw("[1,2]").Key("y").Int(3).EndObject();
  EXPECT_EQ(j.str(), R"({"x":[1,2],"y":3})");
}

}  // namespace
}  // namespace oncecount::json
