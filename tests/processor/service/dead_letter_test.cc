#include "processor/service/dead_letter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

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

// An input message carrying `headers`, as a consumer hands it over.
struct InputWithHeaders {
  std::vector<kafka::Header> headers;
  kafka::Message message() {
    static const kafka::Message::Ops ops{
        [](void*) {},
        [](const void* h) { return static_cast<const InputWithHeaders*>(h)->headers; }};
    kafka::Message m(this, &ops);
    m.partition = base::Partition(3);
    m.offset = base::Offset(42);
    m.timestamp_ms = 1'700'000'000'123;
    m.key = "client/9";
    m.value = "{\"counter\":1}";
    return m;
  }
};

size_t Count(const DeadLetter& d, const std::string& name) {
  return std::count_if(d.headers.begin(), d.headers.end(),
                       [&](const kafka::Header& h) { return h.name == name; });
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

TEST(DeadLetter, CarriesTheInputsKeyValueAndHeadersWithOneReasonAndOneSource) {
  InputWithHeaders input{{{"trace", "t-1"}, {"oncecount.error", "late"}}};
  const DeadLetter d = MakeDeadLetter(input.message(), "invalid_json", "events");
  EXPECT_EQ(d.key, "client/9");
  EXPECT_EQ(d.value, "{\"counter\":1}");
  EXPECT_EQ(Count(d, "oncecount.error"), 1u) << "a letter produced again keeps its old reason "
                                                "under another name";
  EXPECT_EQ(Count(d, "oncecount.source"), 1u);
  const auto headers = Headers(d);
  EXPECT_EQ(headers.at("trace"), "t-1");
  EXPECT_EQ(headers.at("original.oncecount.error"), "late");
  EXPECT_EQ(headers.at("oncecount.error"), "invalid_json");
  EXPECT_EQ(headers.at("oncecount.source"), "events/3/42");
  EXPECT_EQ(headers.at("oncecount.timestamp"), "1700000000123");
}

// Regression: an input header named oncecount.* was kept as the service's own when a
// letter was trimmed; a large one made a letter that could not fit, and every commit
// carrying it failed (each retry halving the batch, down to the one record).
TEST(DeadLetter, FitsALetterWhoseInputCarriesALargeHeaderNamedLikeTheServices) {
  InputWithHeaders input{{{"oncecount.x", std::string(1'500'000, 'x')}}};
  DeadLetter d = MakeDeadLetter(input.message(), "invalid_json", "events");
  FitDeadLetter(d, 1'000'000);
  EXPECT_LE(DeadLetterBytes(d), 1'000'000u);
  EXPECT_EQ(Headers(d).at("oncecount.truncated"), "key=8 value=13 headers=1");
  EXPECT_EQ(Headers(d).at("oncecount.error"), "invalid_json");
}

}  // namespace
}  // namespace oncecount::service
