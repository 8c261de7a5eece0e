#include "processor/service/dead_letter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace oncecount::service {
namespace {

DeadLetter Letter(std::string key, std::string value) {
  DeadLetter d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.headers = {{"trace", std::string(500, 't')},
               {"oncecount.error", "invalid_json"},
               {"oncecount.source", "events/0/7"}};
  return d;
}

std::map<std::string, std::string> Headers(const DeadLetter& d) {
  std::map<std::string, std::string> out;
  for (const auto& h : d.headers) out[h.name] = h.value.value_or("");
  return out;
}

TEST(DeadLetter, LeavesALetterThatFitsUntouched) {
  DeadLetter d = Letter("k", "v");
  const DeadLetter before = d;
  FitDeadLetter(d, DeadLetterBytes(d));
  EXPECT_EQ(d.key, before.key);
  EXPECT_EQ(d.value, before.value);
  EXPECT_EQ(d.headers, before.headers);
}

TEST(DeadLetter, DropsTheOriginalHeadersFirstThenCutsTheValueAndSaysWhatItWas) {
  DeadLetter d = Letter("client/1", std::string(10'000, 'v'));
  FitDeadLetter(d, 4096);
  EXPECT_LE(DeadLetterBytes(d), 4096u);
  EXPECT_EQ(d.key, "client/1");
  EXPECT_GT(d.value->size(), 3000u) << "the room left goes to the value";
  const auto headers = Headers(d);
  EXPECT_EQ(headers.count("trace"), 0u);
  EXPECT_EQ(headers.at("oncecount.error"), "invalid_json");
  EXPECT_EQ(headers.at("oncecount.source"), "events/0/7");
  EXPECT_EQ(headers.at("oncecount.truncated"), "key=8 value=10000 headers=1");
}

TEST(DeadLetter, CutsAHugeKeyTooAndKeepsAnAbsentValueAbsent) {
  DeadLetter d = Letter(std::string(50'000, 'k'), "");
  d.value.reset();
  FitDeadLetter(d, 4096);
  EXPECT_LE(DeadLetterBytes(d), 4096u);
  EXPECT_FALSE(d.value.has_value());
  EXPECT_GT(d.key->size(), 3000u);
  EXPECT_EQ(Headers(d).at("oncecount.truncated"), "key=50000 value=none headers=1");
}

}  // namespace
}  // namespace oncecount::service
