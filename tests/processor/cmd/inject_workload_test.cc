#include "processor/cmd/inject_workload.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace oncecount::cmd {
namespace {

std::vector<WorkloadMessage> Drain(InjectWorkload& w) {
  std::vector<WorkloadMessage> out;
  for (int64_t now = 0; !w.Done(); now += 10) {
    while (auto m = w.Next(now, true)) out.push_back(*m);
  }
  return out;
}

TEST(InjectWorkload, SendsEveryEventOnceEveryRetryAfterItsEventAndTheTruthCountsEachEventOnce) {
  WorkloadOptions o;
  o.events = 2000;
  o.duplicate_rate = 0.25;
  o.counters = 17;
  o.clients = 5;
  o.max_retry_delay_ms = 300;
  o.malformed_rate = 0.02;
  InjectWorkload w(o);
  const auto messages = Drain(w);
  const Truth& t = w.truth();
  EXPECT_EQ(t.events, 2000u);
  EXPECT_GT(t.duplicates, 400u);
  EXPECT_LT(t.duplicates, 600u);
  EXPECT_GT(t.malformed, 10u);
  EXPECT_EQ(messages.size(), t.events + t.duplicates + t.malformed);

  std::map<std::string, std::string> first_copy;
  std::map<std::string, int64_t> sums;
  size_t retries = 0;
  for (const WorkloadMessage& m : messages) {
    if (m.kind == WorkloadMessage::Kind::kMalformed) continue;
    ASSERT_TRUE(m.key.has_value());
    if (m.kind == WorkloadMessage::Kind::kRetry) {
      ++retries;
      ASSERT_TRUE(first_copy.count(*m.key)) << "retry before its event: " << *m.key;
      EXPECT_EQ(first_copy[*m.key], m.value) << "a retry must be byte for byte the event";
      continue;
    }
    ASSERT_TRUE(first_copy.emplace(*m.key, m.value).second) << "event key repeated: " << *m.key;
    const size_t at = m.value.find("\"counter\":\"") + 11;
    const std::string name = m.value.substr(at, m.value.find('"', at) - at);
    const size_t d = m.value.find("\"delta\":") + 8;
    sums[name] += std::stoll(m.value.substr(d));
  }
  EXPECT_EQ(retries, t.duplicates);
  EXPECT_EQ(first_copy.size(), t.events);
  EXPECT_EQ(sums, t.counters);
}

TEST(InjectWorkload, GivesTheSameStreamForTheSameSeed) {
  WorkloadOptions o;
  o.events = 300;
  o.malformed_rate = 0.1;
  InjectWorkload a(o), b(o);
  const auto ma = Drain(a), mb = Drain(b);
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i].key, mb[i].key);
    EXPECT_EQ(ma[i].value, mb[i].value);
  }
  EXPECT_EQ(a.truth().ToJson(), b.truth().ToJson());
}

// Two runs with disjoint sequence ranges send no id in common, whatever their seeds.
TEST(InjectWorkload, SendsIdsNewToAnotherRunWhenItsSequenceRangeIsDisjoint) {
  WorkloadOptions first;
  first.events = 500;
  first.clients = 3;
  WorkloadOptions second = first;
  second.seed = first.seed;  // even the same seed
  second.first_seq = 500;
  InjectWorkload a(first);
  InjectWorkload b(second);
  std::set<std::string> ids;
  for (const WorkloadMessage& m : Drain(a)) ids.insert(*m.key);
  for (const WorkloadMessage& m : Drain(b)) {
    EXPECT_FALSE(ids.contains(*m.key)) << *m.key;
    EXPECT_GE(std::stoull(m.key->substr(m.key->find('/') + 1)), 500u);
  }
}

TEST(InjectWorkload, HoldsNewEventsBackUntilAllowedButReleasesDueRetries) {
  WorkloadOptions o;
  o.events = 1;
  o.duplicate_rate = 1;
  o.max_retry_delay_ms = 0;
  InjectWorkload w(o);
  EXPECT_FALSE(w.Next(0, false).has_value());
  ASSERT_TRUE(w.Next(0, true).has_value());
  auto retry = w.Next(0, false);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->kind, WorkloadMessage::Kind::kRetry);
  EXPECT_TRUE(w.Done());
}

TEST(Truth, IsTheSpecsJson) {
  Truth t;
  t.counters = {{"a", 3}, {"b", -1}};
  t.events = 4;
  t.duplicates = 1;
  t.malformed = 2;
  EXPECT_EQ(t.ToJson(), R"({"counters":{"a":3,"b":-1},"events":4,"duplicates":1,"malformed":2})");
}

}  // namespace
}  // namespace oncecount::cmd
