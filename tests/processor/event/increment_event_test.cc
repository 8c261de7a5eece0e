#include "processor/event/increment_event.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace oncecount::event {
namespace {

IncrementEvent Parsed(EventParser& p, std::optional<std::string_view> key, std::string_view value) {
  const ParseResult r = p.Parse(key, value);
  if (const auto* reason = std::get_if<DlqReason>(&r)) {
    ADD_FAILURE() << "rejected as " << DlqReasonName(*reason) << ": " << value;
    return {};
  }
  return std::get<IncrementEvent>(r);
}

std::string Rejected(EventParser& p, std::optional<std::string_view> key, std::string_view value) {
  const ParseResult r = p.Parse(key, value);
  if (const auto* reason = std::get_if<DlqReason>(&r)) return std::string(DlqReasonName(*reason));
  return "accepted";
}

TEST(EventParser, ReadsCounterAndDelta) {
  EventParser p;
  const IncrementEvent e = Parsed(p, "client-1/7", R"({"counter": "likes:42", "delta": 5})");
  EXPECT_EQ(e.counter, "likes:42");
  EXPECT_EQ(e.delta, 5);
}

TEST(EventParser, DefaultsTheDeltaToOneAndIgnoresOtherFields) {
  EventParser p;
  const IncrementEvent e =
      Parsed(p, "c/1", R"({"counter": "clicks", "ts": 17, "meta": {"a": [1, 2]}})");
  EXPECT_EQ(e.counter, "clicks");
  EXPECT_EQ(e.delta, 1);
}

TEST(EventParser, AcceptsNegativeAndExtremeDeltas) {
  EventParser p;
  EXPECT_EQ(Parsed(p, "c/1", R"({"counter":"x","delta":-3})").delta, -3);
  EXPECT_EQ(Parsed(p, "c/1", R"({"counter":"x","delta":9223372036854775807})").delta,
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Parsed(p, "c/1", R"({"counter":"x","delta":-9223372036854775808})").delta,
            std::numeric_limits<int64_t>::min());
}

TEST(EventParser, AcceptsKeysAndCounterNamesOfExactlyTheLimit) {
  EventParser p;
  const std::string key(kMaxKeyBytes, 'k');
  const std::string name(kMaxCounterBytes, 'n');
  EXPECT_EQ(Parsed(p, key, R"({"counter":")" + name + R"("})").counter, name);
  EXPECT_EQ(Parsed(p, "c/1", R"({"counter":"zähler ✓"})").counter, "zähler ✓");
}

TEST(EventParser, RejectsAMissingOrEmptyKeyAsMissingKey) {
  EventParser p;
  EXPECT_EQ(Rejected(p, std::nullopt, R"({"counter":"x"})"), "missing_key");
  EXPECT_EQ(Rejected(p, "", R"({"counter":"x"})"), "missing_key");
}

TEST(EventParser, RejectsAKeyOverTheLimitAsKeyTooLong) {
  EventParser p;
  EXPECT_EQ(Rejected(p, std::string(kMaxKeyBytes + 1, 'k'), R"({"counter":"x"})"), "key_too_long");
}

TEST(EventParser, RejectsAnythingButAJsonObjectAsInvalidJson) {
  EventParser p;
  for (const char* value : {"", "not json", "{\"counter\":", "[1,2]", "\"counter\"", "42",
                            "{\"counter\":\"x\"} trailing", "{\"counter\":\"\xff\xfe\"}"}) {
    EXPECT_EQ(Rejected(p, "c/1", value), "invalid_json") << value;
  }
}

TEST(EventParser, IgnoresNumbersBeyondInt64AndDoubleInOtherFields) {
  EventParser p;
  const IncrementEvent e =
      Parsed(p, "c/1",
             R"({"ts": 123456789012345678901234567890, "counter": "x", "delta": 2, "f": 1e400})");
  EXPECT_EQ(e.counter, "x");
  EXPECT_EQ(e.delta, 2);
  EXPECT_EQ(Rejected(p, "c/1", R"({"ts": 123456789012345678901234567890})"), "missing_counter");
}

// Regression: the parser reports a number that breaks JSON's grammar as it reports
// one too large to hold, and the path for large numbers skipped what it did not read:
// these were counted.
TEST(EventParser, RejectsANumberThatBreaksJsonsGrammarAsInvalidJson) {
  EventParser p;
  for (const char* bad : {"01", "-", "1.", "2x", "0x1F", "-Infinity", "NaN", "1e", "1e+", ".5",
                          "+1", "1.5.2", "--1"}) {
    for (const std::string& value : {std::string(R"({"counter":"x","f":)") + bad + "}",
                                     std::string(R"({"counter":"x","f":1e400,"g":)") + bad + "}",
                                     std::string(R"({"counter":"x","delta":)") + bad + "}"}) {
      EXPECT_EQ(Rejected(p, "c/1", value), "invalid_json") << value;
    }
  }
  // Past a number too large to hold, the rest is checked as closely as before it.
  for (const char* value :
       {R"({"counter":"x","f":1e400,"g":nul})", R"({"counter":"x","f":1e400,"g":[1,]})",
        R"({"counter":"x","f":1e400} trailing)",
        "{\"counter\":\"x\",\"f\":1e400,\"g\":\"\xff\"}"}) {
    EXPECT_EQ(Rejected(p, "c/1", value), "invalid_json") << value;
  }
}

// Regression: the first of two fields of one name was read (simdjson's at_key), where
// most producers' own tools read the last: {"delta":1,"delta":500} counted 1 where its
// writer meant 500, without a word.
TEST(EventParser, RefusesAnEventThatGivesCounterOrDeltaTwice) {
  EventParser p;
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter":"x","delta":1,"delta":500})"), "invalid_delta");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter":"x","delta":1,"delta":1})"), "invalid_delta");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter":"x","counter":"y"})"), "invalid_counter");
  const IncrementEvent nested =
      Parsed(p, "c/1", R"({"counter":"x","n":{"counter":"y","delta":2}})");
  EXPECT_EQ(nested.counter, "x") << "fields of a nested object are other fields";
  EXPECT_EQ(nested.delta, 1);
}

TEST(EventParser, ReadsAnEventTheSameWayWhateverLargeNumbersItHolds) {
  EventParser p;
  for (const char* tail : {"", R"(,"f":1e400)", R"(,"f":123456789012345678901234567890)"}) {
    const std::string twice = std::string(R"({"counter":"x","delta":1,"delta":2)") + tail + "}";
    EXPECT_EQ(Rejected(p, "c/1", twice), "invalid_delta") << twice;
    const std::string in_string =
        std::string(R"({"counter":"say \"1e400\" 01","delta":-4)") + tail + "}";
    const IncrementEvent e = Parsed(p, "c/1", in_string);
    EXPECT_EQ(e.counter, "say \"1e400\" 01") << in_string;
    EXPECT_EQ(e.delta, -4) << in_string;
  }
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter":"x","delta":1e400})"), "invalid_delta");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter":1e400})"), "invalid_counter");
}

TEST(EventParser, RejectsAnObjectWithoutCounterAsMissingCounter) {
  EventParser p;
  EXPECT_EQ(Rejected(p, "c/1", R"({"delta": 1})"), "missing_counter");
  EXPECT_EQ(Rejected(p, "c/1", R"({})"), "missing_counter");
}

TEST(EventParser, RejectsACounterThatIsNotANonEmptyShortStringAsInvalidCounter) {
  EventParser p;
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": 7})"), "invalid_counter");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": null})"), "invalid_counter");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": ""})"), "invalid_counter");
  EXPECT_EQ(
      Rejected(p, "c/1", R"({"counter": ")" + std::string(kMaxCounterBytes + 1, 'n') + R"("})"),
      "invalid_counter");
}

// Regression: a name with NUL was counted, but no request could read it alone
// (request targets refuse a decoded NUL).
TEST(EventParser, RejectsACounterNameHoldingNulAsInvalidCounter) {
  EventParser p;
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": "a\u0000b"})"), "invalid_counter");
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": "\u0000"})"), "invalid_counter");
  // The path for deltas beyond int64's range checks names the same way.
  EXPECT_EQ(Rejected(p, "c/1", R"({"counter": "a\u0000b", "delta": 1e999})"), "invalid_counter");
  EXPECT_FALSE(IsCounterName(std::string_view("a\0b", 3)));
  EXPECT_TRUE(
      IsCounterName("a\x01"
                    "b"))
      << "other control characters are names";
}

TEST(EventParser, RejectsADeltaThatIsNotAnInt64AsInvalidDelta) {
  EventParser p;
  for (const char* delta : {"1.5", "1.0", "1e3", "\"3\"", "null", "true", "9223372036854775808",
                            "-9223372036854775809", "123456789012345678901234567890", "[1]"}) {
    const std::string value = std::string(R"({"counter":"x","delta":)") + delta + "}";
    EXPECT_EQ(Rejected(p, "c/1", value), "invalid_delta") << value;
  }
}

TEST(EventParser, NamesEveryReasonAsTheSpecDoes) {
  EXPECT_STREQ(DlqReasonName(DlqReason::kMissingKey), "missing_key");
  EXPECT_STREQ(DlqReasonName(DlqReason::kKeyTooLong), "key_too_long");
  EXPECT_STREQ(DlqReasonName(DlqReason::kInvalidJson), "invalid_json");
  EXPECT_STREQ(DlqReasonName(DlqReason::kMissingCounter), "missing_counter");
  EXPECT_STREQ(DlqReasonName(DlqReason::kInvalidCounter), "invalid_counter");
  EXPECT_STREQ(DlqReasonName(DlqReason::kInvalidDelta), "invalid_delta");
  EXPECT_STREQ(DlqReasonName(DlqReason::kOverflow), "overflow");
}

TEST(AddWithoutOverflow, AddsInsideInt64AndRefusesToLeaveIt) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(AddWithoutOverflow(2, -5), -3);
  EXPECT_EQ(AddWithoutOverflow(kMax - 1, 1), kMax);
  EXPECT_EQ(AddWithoutOverflow(kMin + 1, -1), kMin);
  EXPECT_EQ(AddWithoutOverflow(kMax, 1), std::nullopt);
  EXPECT_EQ(AddWithoutOverflow(kMin, -1), std::nullopt);
  EXPECT_EQ(AddWithoutOverflow(kMax, kMin), -1);
}

}  // namespace
}  // namespace oncecount::event
