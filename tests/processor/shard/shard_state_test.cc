#include "processor/shard/shard_state.h"

#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/event/increment_event.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/filter_factory.h"

namespace oncecount::shard {
namespace {

using changelog::BatchRecord;
using changelog::ShardStats;
using event::DlqReason;
using filter::DedupMode;
using filter::Millis;

constexpr base::Partition kPartition{3};
// A wall-clock time (ms since the epoch) in late 2023.
constexpr int64_t kT0 = 1'700'000'000'000;

filter::DedupSpec Spec(DedupMode mode = DedupMode::kFbf) {
  filter::DedupSpec spec;
  spec.mode = mode;
  spec.expected_rate = 1000;
  spec.window = Millis{10'000};
  return spec;
}

// Shards are created at time 0, as the processor creates them; the wall-clock
// times reach the filter through Apply.
std::unique_ptr<ShardState> NewShardWithBound(DedupMode mode, uint64_t memory_limit_bytes) {
  filter::DedupSpec spec = Spec(mode);
  spec.memory_limit_bytes = memory_limit_bytes;
  auto made = ShardState::Create(kPartition, spec, Millis{0});
  if (!made.ok()) {
    ADD_FAILURE() << made.error();
    return nullptr;
  }
  return std::move(made).value();
}

std::unique_ptr<ShardState> NewShard(DedupMode mode = DedupMode::kFbf) {
  return NewShardWithBound(mode, Spec(mode).memory_limit_bytes);
}

std::unique_ptr<ShardState> Restored(std::string_view snapshot) {
  auto made = ShardState::FromSnapshot(snapshot, {});
  if (!made.ok()) {
    ADD_FAILURE() << made.error();
    return nullptr;
  }
  return std::move(made).value();
}

std::string Event(std::string_view counter, int64_t delta) {
  return "{\"counter\":\"" + std::string(counter) + "\",\"delta\":" + std::to_string(delta) + "}";
}

Millis At(int64_t ms_after_t0) {
  return Millis{kT0 + ms_after_t0};
}

std::optional<int64_t> CounterOf(const ShardState& s, const std::string& name) {
  const auto i = s.counters().Find(name);
  if (!i) return std::nullopt;
  return s.counters()[*i].value;
}

// The live counters, as a map.
std::unordered_map<std::string, int64_t> Live(const ShardState& s) {
  std::unordered_map<std::string, int64_t> live;
  for (const CounterTable::Entry& e : s.counters()) live[e.name] = e.value;
  return live;
}

// The one pending batch (nullopt when none), for tests that stay under the limit.
std::optional<BatchRecord> OnlyBatch(std::vector<BatchRecord> batches) {
  EXPECT_LE(batches.size(), 1u) << "the batch was cut";
  if (batches.empty()) return std::nullopt;
  return std::move(batches.front());
}

size_t Reason(DlqReason reason) {
  return static_cast<size_t>(reason);
}

TEST(ShardState, StartsEmpty) {
  auto s = NewShard();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->partition(), kPartition);
  EXPECT_EQ(s->position(), kUnknownOffset);
  EXPECT_EQ(s->epoch().value(), 0u);
  EXPECT_EQ(s->committed_seq().value(), 0u);
  EXPECT_EQ(s->stats(), ShardStats{});
  EXPECT_TRUE(s->counters().empty());
  EXPECT_EQ(s->filter().mode(), DedupMode::kFbf);
  EXPECT_EQ(s->pending_events(), 0u);
}

TEST(ShardState, RefusesASpecTheFilterCannotBeBuiltFrom) {
  filter::DedupSpec spec = Spec();
  spec.target_fpp = 2;  // not a probability
  EXPECT_FALSE(ShardState::Create(kPartition, spec, Millis{0}).ok());
}

TEST(ShardState, AppliesANewEventAndCountsIt) {
  auto s = NewShard();
  const std::string value = Event("clicks", 5);
  const Decision d = s->Apply({base::Offset(10), "client-1/1", value}, At(0));
  EXPECT_EQ(d.outcome, Outcome::kApplied);
  EXPECT_EQ(CounterOf(*s, "clicks"), 5);
  EXPECT_EQ(s->position().value(), 11);
  EXPECT_EQ(s->pending_events(), 1u);
  s->MarkCommitted(base::Epoch(1));
  EXPECT_EQ(s->stats().applied, 1u);
  EXPECT_EQ(s->stats().duplicates, 0u);
  EXPECT_EQ(s->stats().dead_lettered_total(), 0u);
}

TEST(ShardState, AppliesTheDefaultDeltaOfOneAndNegativeDeltas) {
  auto s = NewShard();
  EXPECT_EQ(s->Apply({base::Offset(0), "k1", R"({"counter":"c"})"}, At(0)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->Apply({base::Offset(1), "k2", Event("c", -3)}, At(0)).outcome, Outcome::kApplied);
  EXPECT_EQ(CounterOf(*s, "c"), -2);
}

TEST(ShardState, DropsARetryAsADuplicateWithoutChangingTheCounters) {
  auto s = NewShard();
  const std::string value = Event("clicks", 5);
  ASSERT_EQ(s->Apply({base::Offset(0), "client-1/1", value}, At(0)).outcome, Outcome::kApplied);
  const Decision retry = s->Apply({base::Offset(1), "client-1/1", value}, At(1500));
  EXPECT_EQ(retry.outcome, Outcome::kDuplicate);
  EXPECT_EQ(CounterOf(*s, "clicks"), 5);
  EXPECT_EQ(s->counters().size(), 1u);
  EXPECT_EQ(s->position().value(), 2);  // a duplicate is consumed all the same
  s->MarkCommitted(base::Epoch(1));
  EXPECT_EQ(s->stats().applied, 1u);
  EXPECT_EQ(s->stats().duplicates, 1u);
}

TEST(ShardState, DropsARetryWhoseValueDiffersByItsKeyAlone) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(0), "id", Event("a", 1)}, At(0)).outcome, Outcome::kApplied);
  EXPECT_EQ(s->Apply({base::Offset(1), "id", Event("b", 7)}, At(0)).outcome, Outcome::kDuplicate);
  EXPECT_FALSE(CounterOf(*s, "b").has_value());
}

TEST(ShardState, CatchesARetryAfterACommit) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(0), "k", Event("a", 1)}, At(0)).outcome, Outcome::kApplied);
  s->MarkCommitted(base::Epoch(1));
  EXPECT_EQ(s->Apply({base::Offset(1), "k", Event("a", 1)}, At(5000)).outcome, Outcome::kDuplicate);
  EXPECT_EQ(CounterOf(*s, "a"), 1);
}

struct DlqCase {
  const char* name;
  std::optional<std::string> key;
  std::string value;
  DlqReason reason;
};

class ShardStateDeadLetter : public ::testing::TestWithParam<DlqCase> {};

TEST_P(ShardStateDeadLetter, DeadLettersWithTheReasonAndCountsIt) {
  const DlqCase& c = GetParam();
  auto s = NewShard();
  std::optional<std::string_view> key;
  if (c.key) key = *c.key;
  const Decision d = s->Apply({base::Offset(7), key, c.value}, At(0));
  EXPECT_EQ(d.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(d.reason, c.reason) << event::DlqReasonName(d.reason);
  EXPECT_TRUE(s->counters().empty());
  EXPECT_EQ(s->position().value(), 8);
  EXPECT_EQ(s->pending_events(), 0u);  // no filter call
  s->MarkCommitted(base::Epoch(1));
  ShardStats expected;
  expected.dead_lettered[Reason(c.reason)] = 1;
  EXPECT_EQ(s->stats(), expected);
}

TEST(ShardState, DoesNotRememberTheIdOfADeadLetteredMessage) {
  // A corrected message with the same id is a new event, not a duplicate.
  auto s = NewShard();
  int64_t offset = 0;
  for (const char* bad : {"{\"counter\":", R"({"delta":1})", R"({"counter":"c","delta":1.5})"}) {
    const std::string key = "id/" + std::to_string(offset);
    ASSERT_EQ(s->Apply({base::Offset(offset++), key, bad}, At(0)).outcome, Outcome::kDeadLetter)
        << bad;
    EXPECT_EQ(s->Apply({base::Offset(offset++), key, Event("c", 1)}, At(1)).outcome,
              Outcome::kApplied)
        << bad;
  }
  EXPECT_EQ(CounterOf(*s, "c"), 3);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStatelessReason, ShardStateDeadLetter,
    ::testing::Values(
        DlqCase{"missing_key", std::nullopt, Event("c", 1), DlqReason::kMissingKey},
        DlqCase{"empty_key", std::string(), Event("c", 1), DlqReason::kMissingKey},
        DlqCase{"key_too_long", std::string(257, 'k'), Event("c", 1), DlqReason::kKeyTooLong},
        DlqCase{"invalid_json", "k", "{\"counter\":", DlqReason::kInvalidJson},
        DlqCase{"not_an_object", "k", "[1,2]", DlqReason::kInvalidJson},
        DlqCase{"missing_counter", "k", R"({"delta":1})", DlqReason::kMissingCounter},
        DlqCase{"invalid_counter", "k", R"({"counter":12,"delta":1})", DlqReason::kInvalidCounter},
        DlqCase{"empty_counter", "k", R"({"counter":"","delta":1})", DlqReason::kInvalidCounter},
        DlqCase{"invalid_delta", "k", R"({"counter":"c","delta":1.5})", DlqReason::kInvalidDelta},
        DlqCase{"string_delta", "k", R"({"counter":"c","delta":"3"})", DlqReason::kInvalidDelta}),
    [](const ::testing::TestParamInfo<DlqCase>& param) { return std::string(param.param.name); });

TEST(ShardState, AcceptsAKeyOfExactlyTheMaximumLength) {
  auto s = NewShard();
  EXPECT_EQ(s->Apply({base::Offset(0), std::string(256, 'k'), Event("c", 1)}, At(0)).outcome,
            Outcome::kApplied);
}

TEST(ShardState, DeadLettersAnIncrementThatWouldOverflowTheCounter) {
  auto s = NewShard();
  const int64_t max = std::numeric_limits<int64_t>::max();
  ASSERT_EQ(s->Apply({base::Offset(0), "k1", Event("big", max)}, At(0)).outcome, Outcome::kApplied);
  const Decision d = s->Apply({base::Offset(1), "k2", Event("big", max)}, At(0));
  EXPECT_EQ(d.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(d.reason, DlqReason::kOverflow);
  EXPECT_EQ(CounterOf(*s, "big"), max);
  s->MarkCommitted(base::Epoch(1));
  ShardStats expected;
  expected.applied = 1;
  expected.dead_lettered[Reason(DlqReason::kOverflow)] = 1;
  EXPECT_EQ(s->stats(), expected);
}

// An overflow is found after the filter call (it depends on what the events before it
// in the batch did to the counter), so the id of an overflow dead letter is
// remembered for the window, as an applied event's is: sent again under the same id
// it is a duplicate, even once the counter has room (docs/operations.md, "Metrics").
// Events dead-lettered for any other reason are not remembered.
TEST(ShardState, RemembersTheIdOfAnOverflowDeadLetterForTheWindow) {
  auto s = NewShard();
  const int64_t max = std::numeric_limits<int64_t>::max();
  ASSERT_EQ(s->Apply({base::Offset(0), "k1", Event("big", max)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(1), "k2", Event("big", 1)}, At(0)).reason, DlqReason::kOverflow);
  ASSERT_EQ(s->Apply({base::Offset(2), "k3", Event("big", -10)}, At(0)).outcome, Outcome::kApplied);
  EXPECT_EQ(s->Apply({base::Offset(3), "k2", Event("big", 1)}, At(0)).outcome, Outcome::kDuplicate);
  EXPECT_EQ(s->Apply({base::Offset(4), "k2-corrected", Event("big", 1)}, At(0)).outcome,
            Outcome::kApplied)
      << "sent again under a new id, it counts";
  EXPECT_EQ(CounterOf(*s, "big"), max - 9);
}

TEST(ShardState, DeadLettersAnIncrementThatWouldUnderflowTheCounter) {
  auto s = NewShard();
  const int64_t min = std::numeric_limits<int64_t>::min();
  ASSERT_EQ(s->Apply({base::Offset(0), "k1", Event("low", min)}, At(0)).outcome, Outcome::kApplied);
  const Decision d = s->Apply({base::Offset(1), "k2", Event("low", -1)}, At(0));
  EXPECT_EQ(d.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(d.reason, DlqReason::kOverflow);
  EXPECT_EQ(CounterOf(*s, "low"), min);
}

TEST(ShardState, HasNoPendingBatchWhenNothingWasApplied) {
  auto s = NewShard();
  EXPECT_FALSE(OnlyBatch(s->PendingBatches(base::Epoch(1))).has_value());
  s->MarkCommitted(base::Epoch(1));  // nothing to commit: nothing changes
  EXPECT_EQ(s->committed_seq().value(), 0u);
  EXPECT_EQ(s->epoch().value(), 0u);
  ASSERT_EQ(s->Apply({base::Offset(0), "k", Event("a", 1)}, At(0)).outcome, Outcome::kApplied);
  s->MarkCommitted(base::Epoch(1));
  EXPECT_FALSE(OnlyBatch(s->PendingBatches(base::Epoch(1))).has_value());
}

TEST(ShardState, BuildsThePendingBatchOfEverythingSinceTheLastCommit) {
  auto s = NewShard();
  // Each record stamped with the time it is applied at (the shard's clock follows the
  // record timestamps).
  ASSERT_EQ(s->Apply({base::Offset(100), "k1", Event("b", 2), kT0}, At(0)).outcome,
            Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(101), "k2", Event("a", 1), kT0}, At(0)).outcome,
            Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(102), "k1", Event("b", 2), kT0 + 20}, At(20)).outcome,
            Outcome::kDuplicate);
  ASSERT_EQ(s->Apply({base::Offset(104), std::nullopt, Event("c", 1), kT0 + 20}, At(20)).outcome,
            Outcome::kDeadLetter);
  ASSERT_EQ(s->Apply({base::Offset(105), "k3", Event("b", 3), kT0 + 30}, At(30)).outcome,
            Outcome::kApplied);

  const std::optional<BatchRecord> batch = OnlyBatch(s->PendingBatches(base::Epoch(4)));
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->partition, kPartition);
  EXPECT_EQ(batch->epoch.value(), 4u);
  EXPECT_EQ(batch->seq.value(), 1u);
  EXPECT_EQ(batch->input_from.value(), 100);
  EXPECT_EQ(batch->input_to.value(), 106);  // offset 103 was a gap (a transaction marker)
  // One segment per distinct time, the hashes in the order tested.
  ASSERT_EQ(batch->segments.size(), 3u);
  EXPECT_EQ(batch->segments[0].time_ms, kT0);
  EXPECT_EQ(batch->segments[0].hashes,
            (std::vector<uint64_t>{filter::HashIdempotencyId("k1", filter::kUnkeyed).value,
                                   filter::HashIdempotencyId("k2", filter::kUnkeyed).value}));
  EXPECT_EQ(batch->segments[1].time_ms, kT0 + 20);
  EXPECT_EQ(batch->segments[1].hashes,
            (std::vector<uint64_t>{filter::HashIdempotencyId("k1", filter::kUnkeyed).value}));
  EXPECT_EQ(batch->segments[2].time_ms, kT0 + 30);
  EXPECT_EQ(batch->segments[2].hashes,
            (std::vector<uint64_t>{filter::HashIdempotencyId("k3", filter::kUnkeyed).value}));
  // The touched counters' final values, in the order they were first touched.
  EXPECT_EQ(batch->counters, (std::vector<changelog::CounterUpdate>{{"b", 5}, {"a", 1}}));
  ShardStats stats;
  stats.applied = 3;
  stats.duplicates = 1;
  stats.dead_lettered[Reason(DlqReason::kMissingKey)] = 1;
  EXPECT_EQ(batch->stats, stats);
  EXPECT_EQ(s->pending_events(), 4u);
  // Taking the pending batch changes nothing.
  EXPECT_EQ(OnlyBatch(s->PendingBatches(base::Epoch(4))), batch);
  EXPECT_EQ(s->committed_seq().value(), 0u);
  EXPECT_EQ(s->stats(), ShardStats{});
}

TEST(ShardState, PutsOnlyTheCountersTouchedSinceTheLastCommitInTheBatch) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(0), "k1", Event("old", 1)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(1), "k2", Event("kept", 1)}, At(0)).outcome, Outcome::kApplied);
  s->MarkCommitted(base::Epoch(1));
  ASSERT_EQ(s->Apply({base::Offset(2), "k3", Event("kept", 4)}, At(10)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(3), "k1", Event("old", 1)}, At(10)).outcome,
            Outcome::kDuplicate);
  const std::optional<BatchRecord> batch = OnlyBatch(s->PendingBatches(base::Epoch(1)));
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->seq.value(), 2u);
  EXPECT_EQ(batch->input_from.value(), 2);
  EXPECT_EQ(batch->input_to.value(), 4);
  EXPECT_EQ(batch->counters, (std::vector<changelog::CounterUpdate>{{"kept", 5}}));
}

TEST(ShardState, MakesABatchOfDeadLettersAloneWithoutFilterCalls) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(5), "k", "nope"}, At(0)).outcome, Outcome::kDeadLetter);
  const std::optional<BatchRecord> batch = OnlyBatch(s->PendingBatches(base::Epoch(1)));
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(batch->segments.empty());
  EXPECT_TRUE(batch->counters.empty());
  EXPECT_EQ(batch->input_from.value(), 5);
  EXPECT_EQ(batch->input_to.value(), 6);
  EXPECT_EQ(batch->stats.dead_lettered[Reason(DlqReason::kInvalidJson)], 1u);

  const std::string digest_before = s->filter().Digest();
  s->MarkCommitted(base::Epoch(1));
  auto replica = NewShard();
  replica->Replay(*batch);
  EXPECT_EQ(replica->position().value(), 6);
  EXPECT_EQ(replica->stats(), s->stats());
  EXPECT_EQ(replica->committed_seq().value(), 1u);
  EXPECT_EQ(replica->filter().Digest(), digest_before);
}

TEST(ShardState, MarkCommittedAdvancesTheSeqAndFoldsTheStats) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(0), "k1", Event("a", 1)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(1), "k1", Event("a", 1)}, At(0)).outcome, Outcome::kDuplicate);
  s->MarkCommitted(base::Epoch(2));
  EXPECT_EQ(s->committed_seq().value(), 1u);
  EXPECT_EQ(s->epoch().value(), 2u);
  EXPECT_EQ(s->pending_events(), 0u);
  ASSERT_EQ(s->Apply({base::Offset(2), "k2", Event("a", 1)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(3), "k3", "{}"}, At(0)).outcome, Outcome::kDeadLetter);
  const std::optional<BatchRecord> second = OnlyBatch(s->PendingBatches(base::Epoch(2)));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->seq.value(), 2u);
  EXPECT_EQ(second->stats.applied, 1u);  // this batch's increments only
  EXPECT_EQ(second->stats.duplicates, 0u);
  s->MarkCommitted(base::Epoch(2));
  EXPECT_EQ(s->committed_seq().value(), 2u);
  ShardStats total;
  total.applied = 2;
  total.duplicates = 1;
  total.dead_lettered[Reason(DlqReason::kMissingCounter)] = 1;
  EXPECT_EQ(s->stats(), total);
}

// --- Replay -------------------------------------------------------------------

// A random input stream: new events over a few counters, byte-identical retries
// of earlier ones (some late enough to fall out of the window), dead letters and
// overflows, with time advancing in small steps (sometimes not at all, sometimes
// a little backwards, as a wall clock may) across many filter refreshes.
class Stream {
 public:
  explicit Stream(uint32_t seed) : rng_(seed) {}

  struct Message {
    int64_t offset = 0;
    std::optional<std::string> key;
    std::string value;
    int64_t now_ms;
  };

  Message Next() {
    Message m;
    m.offset = offset_;
    offset_ += Chance(0.05) ? 2 : 1;  // now and then a transaction marker
    const int64_t step = Chance(0.3) ? 0 : Chance(0.03) ? -3 : Uniform(1, 25);
    now_ms_ = std::max<int64_t>(0, now_ms_ + step);
    m.now_ms = kT0 + now_ms_;
    if (Chance(0.03)) {
      m.value = Chance(0.5) ? "{\"counter\":" : R"({"counter":"c","delta":0.5})";
      m.key = "bad/" + std::to_string(m.offset);
    } else if (Chance(0.01)) {
      m.key = std::nullopt;
      m.value = Event("c", 1);
    } else if (!sent_.empty() && Chance(0.25)) {
      // Mostly a recent event, sometimes any earlier one (possibly out of the window).
      const auto last = static_cast<int64_t>(sent_.size()) - 1;
      const base::Offset from{Chance(0.2) ? 0 : std::max<int64_t>(0, last - 400)};
      const Message& original = sent_[static_cast<size_t>(Uniform(from.value(), last))];
      m.key = original.key;
      m.value = original.value;
    } else if (Chance(0.01)) {
      m.key = "huge/" + std::to_string(m.offset);
      m.value = Event("huge", std::numeric_limits<int64_t>::max());  // overflows 2nd time
      sent_.push_back(m);
    } else {
      m.key = "client-" + std::to_string(Uniform(0, 9)) + "/" + std::to_string(m.offset);
      m.value = Event("counter-" + std::to_string(Uniform(0, 19)), Uniform(-5, 10));
      sent_.push_back(m);
    }
    return m;
  }

  int64_t elapsed_ms() const { return now_ms_; }

 private:
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::mt19937 rng_;
  int64_t offset_ = 0;
  int64_t now_ms_ = 0;
  std::vector<Message> sent_;
};

Decision ApplyMessage(ShardState& s, const Stream::Message& m) {
  std::optional<std::string_view> key;
  if (m.key) key = *m.key;
  return s.Apply({base::Offset(m.offset), key, m.value}, Millis{m.now_ms});
}

// Runs `commits` commit intervals of `per_commit` messages on `active`, returning
// the batches it committed, as the processor writes them.
std::vector<BatchRecord> RunAndCommit(ShardState& active, Stream& stream, int commits,
                                      int per_commit, uint64_t epoch) {
  std::vector<BatchRecord> batches;
  for (int c = 0; c < commits; ++c) {
    for (int i = 0; i < per_commit; ++i) ApplyMessage(active, stream.Next());
    std::optional<BatchRecord> batch = OnlyBatch(active.PendingBatches(base::Epoch(epoch)));
    if (!batch) {
      ADD_FAILURE() << "nothing pending after " << per_commit << " messages";
      continue;
    }
    batches.push_back(*batch);
    active.MarkCommitted(base::Epoch(epoch));
  }
  return batches;
}

void ExpectSameState(const ShardState& a, const ShardState& b) {
  EXPECT_EQ(a.filter().Digest(), b.filter().Digest());
  EXPECT_EQ(a.counters(), b.counters());
  EXPECT_EQ(a.position(), b.position());
  EXPECT_EQ(a.stats(), b.stats());
  EXPECT_EQ(a.committed_seq(), b.committed_seq());
  EXPECT_EQ(a.epoch(), b.epoch());
  EXPECT_EQ(a.partition(), b.partition());
}

class ShardStateByMode : public ::testing::TestWithParam<DedupMode> {};

TEST_P(ShardStateByMode, ReplayingTheCommittedBatchesRebuildsTheSameState) {
  auto active = NewShard(GetParam());
  ASSERT_NE(active, nullptr);
  Stream stream(1234);
  const std::vector<BatchRecord> batches = RunAndCommit(*active, stream, 12, 250, 1);
  ASSERT_EQ(batches.size(), 12u);
  if (GetParam() == DedupMode::kFbf) {
    // The stream outlasts several refreshes, so replay must reproduce them.
    const int64_t refresh_ms = active->filter().Summary().refresh_ms;
    ASSERT_GT(refresh_ms, 0);
    EXPECT_GE(stream.elapsed_ms(), 5 * refresh_ms);
  }
  EXPECT_GT(active->stats().duplicates, 0u);
  EXPECT_GT(active->stats().dead_lettered_total(), 0u);
  EXPECT_GT(active->stats().dead_lettered[Reason(DlqReason::kOverflow)], 0u);

  auto replica = NewShard(GetParam());
  ASSERT_NE(replica, nullptr);
  for (const BatchRecord& b : batches) {
    // Through the changelog's encoding, as a restore reads them.
    std::string bytes;
    changelog::EncodeRecord(b, bytes);
    auto decoded = changelog::DecodeRecord(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    replica->Replay(std::get<BatchRecord>(decoded.value()));
  }
  ExpectSameState(*active, *replica);
  EXPECT_EQ(replica->committed_seq().value(), 12u);
  EXPECT_EQ(replica->epoch().value(), 1u);

  // And they keep deciding alike.
  for (int i = 0; i < 300; ++i) {
    const Stream::Message m = stream.Next();
    const Decision a = ApplyMessage(*active, m);
    const Decision r = ApplyMessage(*replica, m);
    ASSERT_EQ(a.outcome, r.outcome) << "message " << i;
    ASSERT_EQ(a.reason, r.reason) << "message " << i;
  }
  EXPECT_EQ(OnlyBatch(active->PendingBatches(base::Epoch(1))),
            OnlyBatch(replica->PendingBatches(base::Epoch(1))));
}

TEST_P(ShardStateByMode, SnapshotRoundTripsTheCommittedState) {
  auto active = NewShard(GetParam());
  Stream stream(99);
  RunAndCommit(*active, stream, 3, 200, 2);
  const std::string snapshot = active->EncodeSnapshot(base::Epoch(2));
  auto restored = Restored(snapshot);
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*active, *restored);
  EXPECT_EQ(restored->committed_seq().value(), 3u);
  EXPECT_EQ(restored->epoch().value(), 2u);
  EXPECT_EQ(restored->filter().mode(), GetParam());
  EXPECT_EQ(restored->EncodeSnapshot(base::Epoch(2)), snapshot);
}

TEST_P(ShardStateByMode, SnapshotWithAPendingBatchStandsForTheNextSeq) {
  auto active = NewShard(GetParam());
  Stream stream(7);
  RunAndCommit(*active, stream, 2, 200, 1);
  for (int i = 0; i < 150; ++i) ApplyMessage(*active, stream.Next());
  const std::optional<BatchRecord> pending = OnlyBatch(active->PendingBatches(base::Epoch(3)));
  ASSERT_TRUE(pending.has_value());
  ASSERT_EQ(pending->seq.value(), 3u);

  auto restored = Restored(active->EncodeSnapshot(base::Epoch(3)));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->committed_seq().value(), 3u);
  EXPECT_EQ(restored->epoch().value(), 3u);
  EXPECT_EQ(restored->position(), active->position());
  EXPECT_EQ(restored->filter().Digest(), active->filter().Digest());
  EXPECT_EQ(restored->counters(), active->counters());
  ShardStats stats = active->stats();
  stats.Add(pending->stats);
  EXPECT_EQ(restored->stats(), stats);
  EXPECT_FALSE(OnlyBatch(restored->PendingBatches(base::Epoch(3))).has_value());

  // It is the state the active has once the pending batch commits.
  active->MarkCommitted(base::Epoch(3));
  ExpectSameState(*active, *restored);
}

TEST(ShardState, AFilterWithoutAMemoryBoundTakesTheServicesOnRestore) {
  // A snapshot written before filters had bounds (state format 2) holds a filter that
  // would grow without limit; restored, it takes dedup.max_filter_mib as a filter made
  // now would. A filter with a bound of its own keeps it (docs/operations.md).
  filter::DedupSpec unbounded_spec = Spec(DedupMode::kExact);
  unbounded_spec.memory_limit_bytes = 0;
  auto unbounded = filter::MakeDedupFilter(unbounded_spec, Millis{0});
  ASSERT_TRUE(unbounded.ok()) << unbounded.error();
  auto active = ShardState::WithFilter(kPartition, std::move(unbounded).value());
  const std::string snapshot = active->EncodeSnapshot(base::Epoch(1));
  filter::DedupSpec service = Spec(DedupMode::kExact);
  service.memory_limit_bytes = uint64_t{1} << 20;

  auto restored = ShardState::FromSnapshot(snapshot, filter::DecodeLimitsFor(service));
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value()->filter().Summary().memory_limit_bytes, uint64_t{1} << 20);

  // What holds more than the bound already is read as written, and says so once the
  // rules say filters are bounded.
  ShardState& big = *active;
  const std::string event = Event("n", 1);
  for (int i = 0; i < 5'000; ++i) {
    const std::string id = "c/" + std::to_string(i);
    big.Apply(InputMessage{base::Offset(i), id, event, kT0}, Millis{kT0});
  }
  big.MarkCommitted(base::Epoch(1));
  filter::DedupSpec small = service;
  small.memory_limit_bytes = uint64_t{1} << 16;  // 2,048 ids
  auto unbounded_still =
      ShardState::FromSnapshot(big.EncodeSnapshot(base::Epoch(1)), filter::DecodeLimitsFor(small));
  ASSERT_TRUE(unbounded_still.ok()) << unbounded_still.error();
  ShardState& kept_whole = *unbounded_still.value();
  EXPECT_EQ(kept_whole.filter().Summary().memory_limit_bytes, 0u);
  EXPECT_FALSE(kept_whole.MakeView({}, 0)->filter_unbounded) << "no rules: nothing bounds filters";
  ShardRules rules;
  rules.bounds_filters = true;
  kept_whole.set_rules(rules);
  EXPECT_TRUE(kept_whole.MakeView({}, 0)->filter_unbounded);
  restored.value()->set_rules(rules);
  EXPECT_FALSE(restored.value()->MakeView({}, 0)->filter_unbounded);

  auto bounded = NewShardWithBound(DedupMode::kExact, uint64_t{2} << 20);
  ASSERT_NE(bounded, nullptr);
  auto kept = ShardState::FromSnapshot(bounded->EncodeSnapshot(base::Epoch(1)),
                                       filter::DecodeLimitsFor(service));
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ(kept.value()->filter().Summary().memory_limit_bytes, uint64_t{2} << 20);
}

TEST_P(ShardStateByMode, RestoringFromASnapshotAndLaterBatchesStillCatchesEarlierRetries) {
  auto active = NewShard(GetParam());
  // Batch 1, with a snapshot written in its transaction.
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) {
    keys.push_back("early/" + std::to_string(i));
    ASSERT_EQ(active->Apply({base::Offset(i), keys.back(), Event("c", 1)}, At(i * 10)).outcome,
              Outcome::kApplied);
  }
  const std::string snapshot = active->EncodeSnapshot(base::Epoch(1));
  active->MarkCommitted(base::Epoch(1));
  // Batches 2 and 3.
  std::vector<BatchRecord> later;
  int64_t offset = 100;
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 100; ++i, ++offset) {
      ASSERT_EQ(active
                    ->Apply({base::Offset(offset), "late/" + std::to_string(offset), Event("c", 1)},
                            At(1000 + offset * 10))
                    .outcome,
                Outcome::kApplied);
    }
    later.push_back(*OnlyBatch(active->PendingBatches(base::Epoch(1))));
    active->MarkCommitted(base::Epoch(1));
  }

  // The active crashes; a new owner restores from the snapshot and batches 2, 3.
  auto restored = Restored(snapshot);
  ASSERT_NE(restored, nullptr);
  for (const BatchRecord& b : later) restored->Replay(b);
  ExpectSameState(*active, *restored);
  restored->SetClaim(base::Epoch(2), 0x2c1a, filter::IdHashKey{0x5eed});  // keeps its key

  // Retries of events applied before the snapshot, within the window.
  const int64_t retry_at = 1000 + offset * 10 + 500;
  ASSERT_LT(retry_at, Spec().window.count());
  for (size_t i = 0; i < keys.size(); ++i) {
    const Decision d =
        restored->Apply({base::Offset(offset++), keys[i], Event("c", 1)}, At(retry_at));
    EXPECT_EQ(d.outcome, Outcome::kDuplicate) << keys[i];
  }
  EXPECT_EQ(CounterOf(*restored, "c"), 300);
  const std::optional<BatchRecord> batch = OnlyBatch(restored->PendingBatches(base::Epoch(2)));
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->seq.value(), 4u);
  EXPECT_EQ(batch->epoch.value(), 2u);
  EXPECT_EQ(batch->stats.duplicates, keys.size());
  EXPECT_EQ(batch->input_from.value(), 300);
}

// ApplyAll is Apply one message after another, with the filter tested in one batch:
// same decisions, same counters, same batch (filter calls in the same order) and a
// bit-identical filter, including retries inside one call and overflows.
TEST_P(ShardStateByMode, ApplyingInBatchesDecidesExactlyAsApplyingOneByOne) {
  auto one_by_one = NewShard(GetParam());
  auto batched = NewShard(GetParam());
  ASSERT_NE(one_by_one, nullptr);
  ASSERT_NE(batched, nullptr);
  Stream stream(4242);
  std::mt19937 sizes(5);
  for (int call = 0; call < 200; ++call) {
    // One ApplyAll call takes messages that share a clock reading, as the processor
    // hands them over.
    const size_t count = 1 + sizes() % 64;
    std::vector<Stream::Message> messages;
    for (size_t i = 0; i < count; ++i) messages.push_back(stream.Next());
    const Millis now{messages.back().now_ms};
    std::vector<InputMessage> inputs;
    for (const Stream::Message& m : messages) {
      std::optional<std::string_view> key;
      if (m.key) key = *m.key;
      inputs.push_back({base::Offset(m.offset), key, m.value});
    }
    std::vector<Decision> decisions(count);
    batched->ApplyAll(inputs, now, decisions);
    for (size_t i = 0; i < count; ++i) {
      const Decision expected = one_by_one->Apply(inputs[i], now);
      ASSERT_EQ(decisions[i].outcome, expected.outcome) << "call " << call << ", message " << i;
      ASSERT_EQ(decisions[i].reason, expected.reason) << "call " << call << ", message " << i;
    }
    if (call % 20 == 19) {
      ASSERT_EQ(OnlyBatch(batched->PendingBatches(base::Epoch(1))),
                OnlyBatch(one_by_one->PendingBatches(base::Epoch(1))));
      batched->MarkCommitted(base::Epoch(1));
      one_by_one->MarkCommitted(base::Epoch(1));
    }
  }
  ExpectSameState(*one_by_one, *batched);
  EXPECT_GT(batched->stats().duplicates, 0u);
  EXPECT_GT(batched->stats().dead_lettered[Reason(DlqReason::kOverflow)], 0u);
}

// The processor seals a batch, commits it while the shard goes on applying, then
// marks it committed: the next batch holds only what came after the seal.
TEST_P(ShardStateByMode, KeepsApplyingIntoTheNextBatchWhileOneIsInFlight) {
  auto s = NewShard(GetParam());
  Stream stream(31);
  for (int i = 0; i < 100; ++i) ApplyMessage(*s, stream.Next());
  const std::optional<BatchRecord> first = OnlyBatch(s->Seal(base::Epoch(2)));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->seq.value(), 1u);
  EXPECT_EQ(first->epoch.value(), 2u);
  EXPECT_TRUE(s->has_batch_in_flight());
  EXPECT_EQ(s->pending_events(), 0u);
  EXPECT_FALSE(OnlyBatch(s->PendingBatches(base::Epoch(2))).has_value());
  EXPECT_EQ(s->sealed_seq().value(), 1u);
  EXPECT_EQ(s->committed_seq().value(), 0u);

  // A view taken now describes the sealed batch, to be published once committed.
  const auto view = s->MakeView({}, kT0);
  EXPECT_EQ(view->changelog_seq.value(), 1u);
  EXPECT_EQ(view->digest_seq.value(), 1u);
  EXPECT_EQ(view->events_applied, first->stats.applied);
  EXPECT_EQ(view->input_offset, first->input_to);

  // A snapshot taken right after the seal stands for the sealed batch.
  auto restored = Restored(s->EncodeSnapshot(base::Epoch(2)));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->committed_seq().value(), 1u);
  EXPECT_EQ(restored->position(), first->input_to);
  EXPECT_EQ(restored->filter().Digest(), s->filter().Digest());

  for (int i = 0; i < 50; ++i) ApplyMessage(*s, stream.Next());
  const std::optional<BatchRecord> second = OnlyBatch(s->PendingBatches(base::Epoch(2)));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->seq.value(), 2u);
  EXPECT_GE(second->input_from, first->input_to);  // the stream skips marker offsets

  s->MarkCommitted(base::Epoch(2));
  EXPECT_FALSE(s->has_batch_in_flight());
  EXPECT_EQ(s->committed_seq().value(), 1u);
  EXPECT_EQ(s->stats(), first->stats);
  EXPECT_EQ(OnlyBatch(s->PendingBatches(base::Epoch(2))), second)
      << "the pending batch is untouched by the commit";

  // Replaying both batches reaches the live state.
  auto replica = NewShard(GetParam());
  replica->Replay(*first);
  ASSERT_EQ(OnlyBatch(s->Seal(base::Epoch(2))), second);
  s->MarkCommitted(base::Epoch(2));
  replica->Replay(*second);
  ExpectSameState(*s, *replica);
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardStateByMode,
                         ::testing::Values(DedupMode::kFbf, DedupMode::kExact, DedupMode::kBloom),
                         [](const ::testing::TestParamInfo<DedupMode>& param) {
                           return std::string(filter::ModeName(param.param));
                         });

TEST(ShardState, ShardWithGaussianConstituentFiltersReplaysAndRestoresToTheSameState) {
  filter::DedupSpec spec = Spec();
  spec.constituent = filter::Constituent::kGaussian;
  spec.cell_bits = 4;
  auto made = ShardState::Create(kPartition, spec, Millis{0});
  ASSERT_TRUE(made.ok()) << made.error();
  std::unique_ptr<ShardState> active = std::move(made).value();
  Stream stream(99);
  const std::vector<BatchRecord> batches = RunAndCommit(*active, stream, 6, 250, 1);
  EXPECT_GT(active->stats().duplicates, 0u);
  // Replay through the changelog's encoding.
  auto replica_made = ShardState::Create(kPartition, spec, Millis{0});
  ASSERT_TRUE(replica_made.ok());
  std::unique_ptr<ShardState> replica = std::move(replica_made).value();
  for (const BatchRecord& b : batches) {
    std::string bytes;
    changelog::EncodeRecord(b, bytes);
    auto decoded = changelog::DecodeRecord(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    replica->Replay(std::get<BatchRecord>(decoded.value()));
  }
  ExpectSameState(*active, *replica);
  // And through a snapshot.
  auto restored = Restored(active->EncodeSnapshot(base::Epoch(1)));
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*active, *restored);
  EXPECT_EQ(restored->filter().Digest(), active->filter().Digest());
}

TEST(ShardState, SnapshotOfAFreshShardRoundTrips) {
  auto fresh = NewShard();
  auto restored = Restored(fresh->EncodeSnapshot(base::Epoch(1)));
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*fresh, *restored);
  EXPECT_EQ(restored->position(), kUnknownOffset);
}

// A restore hands over the snapshot it joined: the bytes are let go of once
// decompressed, so that they are not held beside the decoded state.
TEST(ShardState, RestoresTheSameStateFromSnapshotBytesItOwnsAndLetsGoOfThem) {
  auto s = NewShard();
  Stream stream(5);
  RunAndCommit(*s, stream, 1, 100, 1);
  std::string bytes = s->EncodeSnapshot(base::Epoch(1));
  auto from_view = ShardState::FromSnapshot(std::string_view(bytes), {});
  ASSERT_TRUE(from_view.ok()) << from_view.error();
  auto from_owned = ShardState::FromSnapshot(std::move(bytes), {});
  ASSERT_TRUE(from_owned.ok()) << from_owned.error();
  ExpectSameState(*from_view.value(), *from_owned.value());
  EXPECT_TRUE(bytes.empty());                             // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(bytes.capacity(), std::string().capacity());  // NOLINT(bugprone-use-after-move)
}

TEST(ShardState, RejectsACorruptedSnapshot) {
  auto s = NewShard();
  Stream stream(5);
  RunAndCommit(*s, stream, 1, 100, 1);
  const std::string good = s->EncodeSnapshot(base::Epoch(1));
  ASSERT_TRUE(ShardState::FromSnapshot(good, {}).ok());
  // Every byte, so that magic, header, counters, filter state and checksum are all
  // covered.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    EXPECT_FALSE(ShardState::FromSnapshot(bad, {}).ok()) << "byte " << i << " of " << good.size();
  }
}

TEST(ShardState, RejectsATruncatedOrExtendedSnapshot) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(0), "k", Event("c", 1)}, At(0)).outcome, Outcome::kApplied);
  const std::string good = s->EncodeSnapshot(base::Epoch(1));
  for (size_t n :
       {size_t{0}, size_t{3}, size_t{11}, size_t{40}, good.size() / 2, good.size() - 1}) {
    EXPECT_FALSE(ShardState::FromSnapshot(std::string_view(good).substr(0, n), {}).ok()) << n;
  }
  EXPECT_FALSE(ShardState::FromSnapshot(good + "x", {}).ok());
}

TEST(ShardState, RejectsAChangelogRecordAsASnapshot) {
  std::string record;
  changelog::EncodeRecord(changelog::ClaimRecord{kPartition, base::Epoch(1), base::Seq(0)}, record);
  EXPECT_FALSE(ShardState::FromSnapshot(record, {}).ok());
}

TEST(ShardState, MakeViewReflectsTheCommittedCountersAndStats) {
  auto s = NewShard();
  ASSERT_EQ(s->Apply({base::Offset(40), "k1", Event("b", 2)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(41), "k2", Event("a", 7)}, At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply({base::Offset(42), "k1", Event("b", 2)}, At(0)).outcome, Outcome::kDuplicate);
  ASSERT_EQ(s->Apply({base::Offset(43), "k3", "[]"}, At(0)).outcome, Outcome::kDeadLetter);
  ASSERT_EQ(s->Apply({base::Offset(44), std::nullopt, "{}"}, At(0)).outcome, Outcome::kDeadLetter);
  s->MarkCommitted(base::Epoch(5));

  ShardView base;
  base.partition = base::Partition(99);  // the state's own partition wins
  base.role = ShardRole::kStandby;
  base.phase = ShardPhase::kRunning;
  base.high_watermark = base::Offset(60);
  base.transactions_committed = 8;
  base.target_fpp = 1e-6;
  const std::shared_ptr<const ShardView> view = s->MakeView(base, 123456);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->partition, kPartition);
  EXPECT_EQ(view->role, ShardRole::kStandby);
  EXPECT_EQ(view->phase, ShardPhase::kRunning);
  EXPECT_EQ(view->high_watermark.value(), 60);
  EXPECT_EQ(view->transactions_committed, 8u);
  EXPECT_EQ(view->target_fpp, 1e-6);
  EXPECT_EQ(view->input_offset.value(), 45);
  EXPECT_EQ(view->lag(), 15);
  EXPECT_EQ(view->epoch.value(), 5u);
  EXPECT_EQ(view->changelog_seq.value(), 1u);
  EXPECT_EQ(view->events_applied, 2u);
  EXPECT_EQ(view->duplicates_dropped, 1u);
  EXPECT_EQ(view->dead_lettered, 2u);
  std::array<uint64_t, kDlqReasonCount> by_reason{};
  by_reason[Reason(DlqReason::kMissingKey)] = 1;
  by_reason[Reason(DlqReason::kInvalidJson)] = 1;
  EXPECT_EQ(view->dead_lettered_by_reason, by_reason);
  EXPECT_EQ(view->digest, s->filter().Digest());
  EXPECT_EQ(view->filter.mode, DedupMode::kFbf);
  EXPECT_EQ(view->filter.inserted, 2u);
  EXPECT_EQ(view->published_at_ms, 123456);
  ASSERT_NE(view->counters, nullptr);
  EXPECT_EQ(view->counters->counters(), (std::vector<CounterValue>{{"a", 7}, {"b", 2}}));
  EXPECT_EQ(view->counters->Find("a"), 7);

  // The view is a copy: later changes to the state do not reach it.
  ASSERT_EQ(s->Apply({base::Offset(45), "k4", Event("a", 1)}, At(1)).outcome, Outcome::kApplied);
  s->MarkCommitted(base::Epoch(5));
  EXPECT_EQ(view->counters->Find("a"), 7);
  EXPECT_EQ(view->events_applied, 2u);
  EXPECT_EQ(s->MakeView(base, 123457)->counters->Find("a"), 8);
}

// A view names the counters changed most recently (GET /v1/counters?order=recent):
// newest first, each once, at most kRecentCounters; a replica replaying the batches
// names the same.
TEST(ShardState, NamesTheCountersChangedMostRecentlyNewestFirstEachOnce) {
  auto s = NewShard();
  int64_t offset = 0;
  std::vector<BatchRecord> batches;
  auto apply = [&](const std::string& counter) {
    const std::string key = "k" + std::to_string(offset);
    EXPECT_EQ(s->Apply({base::Offset(offset++), key, Event(counter, 1)}, At(0)).outcome,
              Outcome::kApplied);
  };
  auto commit = [&] {
    for (BatchRecord& b : s->PendingBatches(base::Epoch(1))) batches.push_back(std::move(b));
    s->MarkCommitted(base::Epoch(1));
  };
  EXPECT_EQ(s->MakeView({}, 0)->recent_counters, nullptr);
  apply("a");
  apply("b");
  commit();
  apply("c");
  apply("a");
  apply("c");
  commit();
  const auto view = s->MakeView({}, 0);
  ASSERT_NE(view->recent_counters, nullptr);
  EXPECT_EQ(*view->recent_counters, (std::vector<std::string>{"a", "c", "b"}));
  EXPECT_EQ(s->MakeView({}, 0)->recent_counters, view->recent_counters)
      << "shared until it changes";

  for (int i = 0; i < 150; ++i) apply("n" + std::to_string(i));
  commit();
  const auto many = s->MakeView({}, 0)->recent_counters;
  ASSERT_EQ(many->size(), kRecentCounters);
  EXPECT_EQ(many->front(), "n149");
  EXPECT_EQ(many->back(), "n50");

  auto replica = NewShard();
  for (const BatchRecord& b : batches) replica->Replay(b);
  EXPECT_EQ(*replica->MakeView({}, 0)->recent_counters, *many);
}

// --- Batches bounded in bytes ---------------------------------------------------------

// A counter name of `bytes` bytes, distinct per `i`.
std::string LongName(int i, size_t bytes = 200) {
  std::string name = "counter-" + std::to_string(i) + "-";
  name.resize(bytes, 'x');
  return name;
}

ShardRules SmallRecords(size_t bytes = changelog::kMinRecordBytes) {
  ShardRules rules;
  rules.max_record_bytes = bytes;
  return rules;
}

TEST(ShardState, CutsTheBatchWhereTheNextEventMightNotFitAndEveryPieceFitsAndDecodes) {
  auto s = NewShard();
  s->set_rules(SmallRecords());
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(
        s->Apply({base::Offset(i), "k" + std::to_string(i), Event(LongName(i), 1)}, At(i)).outcome,
        Outcome::kApplied);
  }
  const std::vector<BatchRecord> batches = s->Seal(base::Epoch(2), kT0);
  ASSERT_GT(batches.size(), 10u) << "300 counters of 200 bytes take about 65 KB";
  int64_t next_input = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    std::string bytes;
    changelog::EncodeRecord(batches[i], bytes);
    EXPECT_LE(bytes.size(), changelog::kMinRecordBytes);
    if (i + 1 < batches.size()) {
      EXPECT_GT(bytes.size(), changelog::kMinRecordBytes - changelog::kMaxEventBatchBytes)
          << "a batch is cut only when the next event might not fit";
    }
    auto decoded = changelog::DecodeRecord(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    EXPECT_EQ(std::get<BatchRecord>(decoded.value()), batches[i]);
    EXPECT_EQ(batches[i].seq.value(), i + 1);
    EXPECT_EQ(batches[i].epoch.value(), 2u);
    EXPECT_EQ(batches[i].input_from.value(), next_input) << "the batches cover the input in order";
    next_input = batches[i].input_to.value();
  }
  EXPECT_EQ(next_input, 300);
  EXPECT_EQ(s->sealed_seq().value(), batches.size());
  s->MarkCommitted(base::Epoch(2));
  EXPECT_EQ(s->committed_seq().value(), batches.size());
  EXPECT_EQ(s->stats().applied, 300u);

  // Each piece is a whole batch: replaying them rebuilds the state.
  auto replica = NewShard();
  for (const BatchRecord& b : batches) replica->Replay(b);
  EXPECT_EQ(replica->counters(), s->counters());
  EXPECT_EQ(replica->filter().Digest(), s->filter().Digest());
  EXPECT_EQ(replica->stats(), s->stats());
  EXPECT_EQ(replica->committed_seq(), s->committed_seq());
}

TEST(ShardState, ACounterTouchedInTwoPiecesCarriesItsValueAtTheEndOfEach) {
  auto s = NewShard();
  s->set_rules(SmallRecords());
  int64_t offset = 0;
  ASSERT_EQ(s->Apply({base::Offset(offset++), "first", Event("shared", 5)}, At(0)).outcome,
            Outcome::kApplied);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(
        s->Apply({base::Offset(offset++), "f" + std::to_string(i), Event(LongName(i), 1)}, At(0))
            .outcome,
        Outcome::kApplied);
  }
  ASSERT_EQ(s->Apply({base::Offset(offset++), "last", Event("shared", 7)}, At(0)).outcome,
            Outcome::kApplied);
  const std::vector<BatchRecord> batches = s->PendingBatches(base::Epoch(1));
  ASSERT_GE(batches.size(), 2u);
  auto value_in = [](const BatchRecord& b) -> std::optional<int64_t> {
    for (const auto& c : b.counters) {
      if (c.name == "shared") return c.value;
    }
    return std::nullopt;
  };
  EXPECT_EQ(value_in(batches.front()), 5);
  EXPECT_EQ(value_in(batches.back()), 12);
}

TEST(ShardState, ApplyingInBatchesCutsWhereApplyingOneByOneCuts) {
  auto batched = NewShard();
  auto one_by_one = NewShard();
  batched->set_rules(SmallRecords());
  one_by_one->set_rules(SmallRecords());
  std::vector<std::string> keys, values;
  for (int i = 0; i < 500; ++i) {
    keys.push_back("k" + std::to_string(i % 450));  // some retries
    values.push_back(i % 7 == 0 ? "not json" : Event(LongName(i % 60, 10 + i % 200), 1));
  }
  std::vector<InputMessage> messages;
  for (int i = 0; i < 500; ++i) {
    messages.push_back({base::Offset(i), keys[i], values[i], kT0 + i / 10});
  }
  std::vector<Decision> decisions(messages.size());
  batched->ApplyAll(messages, At(0), decisions);
  for (size_t i = 0; i < messages.size(); ++i) {
    const Decision d = one_by_one->Apply(messages[i], At(0));
    EXPECT_EQ(d.outcome, decisions[i].outcome) << i;
  }
  const std::vector<BatchRecord> a = batched->PendingBatches(base::Epoch(1));
  EXPECT_GT(a.size(), 3u);
  EXPECT_EQ(a, one_by_one->PendingBatches(base::Epoch(1)));
}

TEST(ShardState, ASnapshotTakenWithCutBatchesPendingStandsForTheLastOfThem) {
  auto s = NewShard();
  s->set_rules(SmallRecords());
  for (int i = 0; i < 100; ++i)
    s->Apply({base::Offset(i), "k" + std::to_string(i), Event(LongName(i), 1)}, At(0));
  const size_t pending = s->PendingBatches(base::Epoch(1)).size();
  ASSERT_GT(pending, 1u);
  auto restored = Restored(s->EncodeSnapshot(base::Epoch(1)));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->committed_seq().value(), pending);
  EXPECT_EQ(restored->position().value(), 100);
  EXPECT_EQ(restored->stats().applied, 100u);
  EXPECT_EQ(restored->counters(), s->counters());
}

TEST(ShardState, KeepsTheRecordLimitWithinWhatWritersAndReadersAccept) {
  auto s = NewShard();
  s->set_rules(SmallRecords(10));
  EXPECT_EQ(s->rules().max_record_bytes, changelog::kMinRecordBytes);
  s->set_rules(SmallRecords(size_t{1} << 30));
  EXPECT_EQ(s->rules().max_record_bytes, changelog::kMaxRecordBytes);
}

// --- Event time ------------------------------------------------------------------------

// A message with a record timestamp `ts_after_t0` ms after kT0.
InputMessage Stamped(base::Offset offset, std::string_view key, const std::string& value,
                     int64_t ts_after_t0) {
  return {offset, key, value, kT0 + ts_after_t0};
}

constexpr int64_t kHour = 3'600'000;

TEST(ShardState, MeasuresTheWindowOnRecordTimestampsWhateverTheProcessingDelay) {
  auto s = NewShard();  // window 10 s
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  // An outage: the retry, sent 5 s after the original, is processed an hour later,
  // behind a backlog whose timestamps run up to its own.
  for (int i = 1; i <= 50; ++i) {
    ASSERT_EQ(
        s->Apply(Stamped(base::Offset(i), "b" + std::to_string(i), e, i * 100), At(kHour)).outcome,
        Outcome::kApplied);
  }
  EXPECT_EQ(s->Apply(Stamped(base::Offset(51), "k1", e, 5000), At(kHour)).outcome,
            Outcome::kDuplicate);
  EXPECT_EQ(s->clock().clock_ms, kT0 + 5000);
  EXPECT_EQ(s->clock().late, 0u);
}

TEST(ShardState, ForgetsOnlyWhenRecordTimestampsMovePastTheWindow) {
  auto s = NewShard();
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  // Processing time alone moves nothing.
  EXPECT_EQ(s->Apply(Stamped(base::Offset(1), "k1", e, 1), At(10 * kHour)).outcome,
            Outcome::kDuplicate);
  // Record time a whole hour later: the id is long forgotten.
  ASSERT_EQ(s->Apply(Stamped(base::Offset(2), "k2", e, kHour), At(10 * kHour)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->Apply(Stamped(base::Offset(3), "k1", e, 2), At(10 * kHour)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->clock().clock_ms, kT0 + kHour) << "the clock never moves back";
}

TEST(ShardState, CountsRecordsOlderThanTheClockByMoreThanTheLateBound) {
  auto s = NewShard();
  ShardRules rules;
  rules.late_after = Millis{10'000};
  s->set_rules(rules);
  const std::string e = Event("a", 1);
  s->Apply(Stamped(base::Offset(0), "k1", e, 60'000), At(60'000));
  s->Apply(Stamped(base::Offset(1), "k2", e, 55'000), At(60'000));  // 5 s behind: within the bound
  s->Apply(Stamped(base::Offset(2), "k3", e, 40'000), At(60'000));  // 20 s behind
  EXPECT_EQ(s->clock().late, 1u);
  EXPECT_EQ(s->clock().clock_ms, kT0 + 60'000);
}

TEST(ShardState, WithNoToleranceEveryRecordBehindTheClockIsLate) {
  auto s = NewShard();
  ShardRules rules;
  rules.late_after = Millis{0};
  s->set_rules(rules);
  const std::string e = Event("a", 1);
  s->Apply(Stamped(base::Offset(0), "k1", e, 60'000), At(60'000));
  s->Apply(Stamped(base::Offset(1), "k2", e, 60'000), At(60'000));  // level with the clock
  EXPECT_EQ(s->clock().late, 0u);
  s->Apply(Stamped(base::Offset(2), "k3", e, 59'999), At(60'000));  // 1 ms behind
  EXPECT_EQ(s->clock().late, 1u);
}

// dedup.late_records: dead_letter. A late record goes to the dead letters with reason
// late, neither tested against the filter (its id is not remembered) nor counted,
// whether or not it is a retry.
TEST(ShardState, UnderDeadLetterALateRecordGoesToTheDeadLettersUntestedAndUncounted) {
  auto s = NewShard();
  ShardRules rules;
  rules.late_after = Millis{10'000};
  rules.late_records = LatePolicy::kDeadLetter;
  s->set_rules(rules);
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 60'000), At(60'000)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, 55'000), At(60'000)).outcome,
            Outcome::kApplied)
      << "5 s behind: within the tolerance";
  const Decision fresh_late = s->Apply(Stamped(base::Offset(2), "k3", e, 40'000), At(60'000));
  EXPECT_EQ(fresh_late.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(fresh_late.reason, DlqReason::kLate);
  const Decision late_retry = s->Apply(Stamped(base::Offset(3), "k1", e, 40'000), At(60'000));
  EXPECT_EQ(late_retry.outcome, Outcome::kDeadLetter) << "a late retry is not tested either";
  EXPECT_EQ(late_retry.reason, DlqReason::kLate);
  EXPECT_EQ(CounterOf(*s, "a"), 2);
  EXPECT_EQ(s->clock().late, 2u);
  EXPECT_EQ(s->position(), base::Offset(4));
  const std::optional<BatchRecord> batch = OnlyBatch(s->Seal(base::Epoch(1)));
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->stats.dead_lettered[Reason(DlqReason::kLate)], 2u);
  EXPECT_EQ(batch->stats.applied, 2u);
  size_t filter_calls = 0;
  for (const auto& segment : batch->segments) filter_calls += segment.hashes.size();
  EXPECT_EQ(filter_calls, 2u) << "dead-lettered late records make no filter call";
  s->MarkCommitted(base::Epoch(1));
  EXPECT_EQ(s->Apply(Stamped(base::Offset(4), "k3", e, 60'000), At(60'000)).outcome,
            Outcome::kApplied)
      << "the dead-lettered id was not remembered: produced again, it counts";
}

TEST(ShardState, UnderApplyALateRecordIsTestedAppliedAndCounted) {
  auto s = NewShard();
  ShardRules rules;
  rules.late_after = Millis{10'000};
  s->set_rules(rules);
  const std::string e = Event("a", 1);
  s->Apply(Stamped(base::Offset(0), "k1", e, 60'000), At(60'000));
  EXPECT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, 40'000), At(60'000)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->Apply(Stamped(base::Offset(2), "k1", e, 40'000), At(60'000)).outcome,
            Outcome::kDuplicate)
      << "still caught while the filter remembers it";
  EXPECT_EQ(s->clock().late, 2u);
  EXPECT_EQ(CounterOf(*s, "a"), 2);
}

TEST(ShardState, ApplyAllDeadLettersLateRecordsAsApplyOneByOneDoes) {
  ShardRules rules;
  rules.late_after = Millis{1'000};
  rules.late_records = LatePolicy::kDeadLetter;
  rules.max_record_bytes = changelog::kMinRecordBytes;  // batches cut among the dead letters
  auto one_by_one = NewShard();
  auto batched = NewShard();
  one_by_one->set_rules(rules);
  batched->set_rules(rules);
  std::mt19937 rng(5);
  std::vector<std::string> keys;
  std::vector<InputMessage> messages;
  const std::string e = Event("a", 1);
  for (int i = 0; i < 3000; ++i) keys.push_back("k" + std::to_string(i % 700));
  for (int i = 0; i < 3000; ++i) {
    // Mostly in order, one in ten up to 5 s behind.
    const int64_t ts =
        i * 10 - (i % 10 == 0 ? std::uniform_int_distribution<int>(0, 5000)(rng) : 0);
    messages.push_back(Stamped(base::Offset(i), keys[i], e, ts));
  }
  std::vector<Decision> expected;
  for (const InputMessage& m : messages) expected.push_back(one_by_one->Apply(m, At(30'000)));
  std::vector<Decision> decisions(messages.size());
  batched->ApplyAll(messages, At(30'000), decisions);
  size_t late = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(decisions[i].outcome, expected[i].outcome) << i;
    if (expected[i].outcome == Outcome::kDeadLetter) {
      EXPECT_EQ(decisions[i].reason, DlqReason::kLate) << i;
      ++late;
    }
  }
  EXPECT_GT(late, 100u);
  const std::vector<BatchRecord> batches = one_by_one->Seal(base::Epoch(1));
  EXPECT_GT(batches.size(), 3u);
  EXPECT_EQ(batched->Seal(base::Epoch(1)), batches);
}

// Guarantee 1 across restores: the shard's clock is in the snapshot, so a restored
// shard judges a late record as its last owner would have (a clock restarted at 0
// would take it for on time).
TEST(ShardState, ASnapshotKeepsTheShardsClockSoARestoredShardJudgesLatenessTheSame) {
  auto s = NewShard();
  const std::string e = Event("a", 1);
  s->Apply(Stamped(base::Offset(0), "k1", e, 60'000), At(60'000));
  s->MarkCommitted(base::Epoch(1));
  auto restored = Restored(s->EncodeSnapshot(base::Epoch(1)));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->clock().clock_ms, kT0 + 60'000);
  ShardRules rules;
  rules.late_after = Millis{10'000};
  rules.late_records = LatePolicy::kDeadLetter;
  restored->set_rules(rules);
  EXPECT_EQ(restored->Apply(Stamped(base::Offset(1), "k2", e, 40'000), At(60'000)).outcome,
            Outcome::kDeadLetter);
  EXPECT_EQ(restored->clock().late, 1u);
}

TEST(ShardState, ATimestampTooFarAheadOfTheWallClockDoesNotMoveTheClock) {
  auto s = NewShard();  // max_clock_ahead 1 s by default
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  // A producer whose clock runs a day ahead: counted, the clock stays.
  ASSERT_EQ(s->Apply(Stamped(base::Offset(1), "skewed", e, 24 * kHour), At(100)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->clock().ahead_of_wall, 1u);
  EXPECT_EQ(s->clock().clock_ms, kT0);
  EXPECT_EQ(s->Apply(Stamped(base::Offset(2), "k1", e, 5000), At(5000)).outcome,
            Outcome::kDuplicate)
      << "the skewed record did not make the filter forget";
  // Its own retry is still caught: it was remembered at the shard's clock.
  EXPECT_EQ(s->Apply(Stamped(base::Offset(3), "skewed", e, 24 * kHour), At(6000)).outcome,
            Outcome::kDuplicate);
  // A timestamp ahead by less than the bound moves the clock.
  s->Apply(Stamped(base::Offset(4), "k4", e, 6900), At(6000));
  EXPECT_EQ(s->clock().clock_ms, kT0 + 6900);
  EXPECT_EQ(s->clock().ahead_of_wall, 2u);
}

TEST(ShardState, ARecordWithoutATimestampTakesTheShardsClockAndIsCounted) {
  auto s = NewShard();  // window 10 s
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(kHour)).outcome, Outcome::kApplied);
  // An old backlog replayed an hour later; one record in it has no timestamp.
  const InputMessage unstamped{base::Offset(1), "k2", e, -1};
  ASSERT_EQ(s->Apply(unstamped, At(kHour)).outcome, Outcome::kApplied);
  EXPECT_EQ(s->clock().without_timestamp, 1u);
  EXPECT_EQ(s->clock().clock_ms, kT0) << "the wall clock would have moved it an hour on";
  EXPECT_EQ(s->Apply(Stamped(base::Offset(2), "k1", e, 5000), At(kHour)).outcome,
            Outcome::kDuplicate)
      << "the backlog's window is still remembered";
  EXPECT_EQ(s->Apply(InputMessage{base::Offset(3), "k2", e, -1}, At(kHour)).outcome,
            Outcome::kDuplicate)
      << "its own retry, remembered at the shard's clock";
  EXPECT_EQ(s->MakeView({}, 0)->timestamps_missing, 2u);
}

TEST(ShardState, AStepOfTheHostClockChangesNothingButTheBoundOnTimestamps) {
  auto s = NewShard();
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  // The host clock jumps a day forward: record time goes on; nothing is forgotten.
  EXPECT_EQ(s->Apply(Stamped(base::Offset(1), "k1", e, 3000), At(24 * kHour)).outcome,
            Outcome::kDuplicate);
  // And then a day back, behind the records: they stop moving the clock (counted),
  // and retries are still caught.
  EXPECT_EQ(s->Apply(Stamped(base::Offset(2), "k1", e, 4000), At(-24 * kHour)).outcome,
            Outcome::kDuplicate);
  EXPECT_EQ(s->clock().ahead_of_wall, 1u);
  EXPECT_EQ(s->clock().clock_ms, kT0 + 3000);
}

// Regression: a record ahead of the wall clock was never judged late. After the host
// clock stepped back (NTP, a failover to an instance whose clock is behind), a late
// retry whose first copy was forgotten skipped dead_letter and was counted again.
TEST(ShardState, ARecordLateAndAheadOfAWallClockThatSteppedBackIsLate) {
  auto s = NewShard(DedupMode::kExact);  // window 10 s
  ShardRules rules;
  rules.late_after = Millis{1000};
  rules.late_records = LatePolicy::kDeadLetter;
  s->set_rules(rules);
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, 100'000), At(100'000)).outcome,
            Outcome::kApplied);
  // The wall clock steps back to the start; k1's retry, stamped 50 s, is 50 s late.
  const Decision retry = s->Apply(Stamped(base::Offset(2), "k1", e, 50'000), At(0));
  EXPECT_EQ(retry.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(retry.reason, DlqReason::kLate);
  EXPECT_EQ(CounterOf(*s, "a"), 2);
  EXPECT_EQ(s->clock().late, 1u);
  EXPECT_EQ(s->clock().ahead_of_wall, 1u);
}

// Regression: the tolerance reached the late check from the configuration, but a
// filter restored from a state made under a smaller tolerance keeps the window it
// was made with. A retry later than that filter holds, and not later than the new
// tolerance, was neither late nor caught: counted twice, with nothing said.
TEST(ShardState, ALateBoundBeyondWhatItsFilterHoldsIsLoweredToIt) {
  auto s = NewShard(DedupMode::kExact);
  const int64_t held = s->filter().Summary().window_ms_configured;
  ASSERT_GE(held, 2000);
  ShardRules rules;
  rules.late_after = Millis{5000};            // the configured tolerance, raised
  rules.record_window = Millis{held - 1000};  // the filter was made for a 1 s one
  rules.late_records = LatePolicy::kDeadLetter;
  s->set_rules(rules);
  EXPECT_EQ(s->rules().late_after, Millis{1000});
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 0), At(0)).outcome, Outcome::kApplied);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, held + 2000), At(held + 2000)).outcome,
            Outcome::kApplied);
  // Inside the record window of k1's first copy, 3.5 s behind the clock: within the
  // configured 5 s, but k1 is past what the filter holds.
  const Decision retry = s->Apply(Stamped(base::Offset(2), "k1", e, held - 1500), At(held + 2000));
  EXPECT_EQ(retry.outcome, Outcome::kDeadLetter);
  EXPECT_EQ(retry.reason, DlqReason::kLate);
  EXPECT_EQ(CounterOf(*s, "a"), 2);

  // A filter that holds the whole tolerance keeps it.
  auto fresh = NewShard(DedupMode::kExact);
  rules.record_window = Millis{held - 5000};
  fresh->set_rules(rules);
  EXPECT_EQ(fresh->rules().late_after, Millis{5000});
}

// Regression: a filter made for a shorter window than dedup.window_ms (the setting
// raised since) lowered the late bound to 0: every record a moment behind the clock
// was late, while a retry a whole old window after its first copy, moving the
// clock, was counted twice with nothing said. The tolerance stays, and the shard
// says how much of the window its filter holds (readiness lists it).
TEST(ShardState, AFilterMadeForAShorterWindowSaysSoAndKeepsTheTolerance) {
  auto s = NewShard(DedupMode::kExact);
  const int64_t held = s->filter().Summary().window_ms_configured;
  ASSERT_GE(held, 2000);
  ShardRules rules;
  rules.late_after = Millis{1000};
  rules.record_window = Millis{held + 240'000};  // raised since the filter was made
  s->set_rules(rules);
  EXPECT_EQ(s->rules().late_after, Millis{1000});
  // A retry up to the tolerance behind the clock is on time: held less the tolerance.
  EXPECT_EQ(s->rules().record_window_held, Millis{held - 1000});
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 10'000), At(10'000)).outcome,
            Outcome::kApplied);
  // 500 ms behind the clock: within the tolerance, not late.
  ASSERT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, 9'500), At(10'000)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->clock().late, 0u);
  shard::ShardView base;
  const auto view = s->MakeView(std::move(base), 0);
  EXPECT_EQ(view->record_window_held_ms, held - 1000);
  EXPECT_EQ(view->record_window_ms, held + 240'000);

  // Raised by exactly what the filter held beyond it: no tolerance left to lower to
  // (a bound of 0 would call every record behind the clock late); said the same way.
  auto exact_fit = NewShard(DedupMode::kExact);
  rules.record_window = Millis{held};
  exact_fit->set_rules(rules);
  EXPECT_EQ(exact_fit->rules().late_after, Millis{1000});
  EXPECT_EQ(exact_fit->rules().record_window_held, Millis{held - 1000});

  // A filter that holds the window: nothing to say.
  auto fresh = NewShard(DedupMode::kExact);
  rules.record_window = Millis{held - 1000};
  fresh->set_rules(rules);
  EXPECT_EQ(fresh->rules().record_window_held, std::nullopt);
  shard::ShardView fresh_base;
  EXPECT_EQ(fresh->MakeView(std::move(fresh_base), 0)->record_window_held_ms, -1);
}

// Regression: with dedup.timestamp_tolerance_ms 0 (LogAppendTime input), a filter
// holds exactly the window, and every shard said it held less than the window
// (readiness degraded, the alert firing) while it held all of it.
TEST(ShardState, AFilterThatHoldsExactlyTheWindowUnderNoToleranceSaysNothing) {
  auto s = NewShard(DedupMode::kExact);
  const int64_t held = s->filter().Summary().window_ms_configured;
  ShardRules rules;
  rules.late_after = Millis{0};
  rules.record_window = Millis{held};
  s->set_rules(rules);
  EXPECT_EQ(s->rules().late_after, Millis{0});
  EXPECT_EQ(s->rules().record_window_held, std::nullopt);
  shard::ShardView base;
  EXPECT_EQ(s->MakeView(std::move(base), 0)->record_window_held_ms, -1);
}

// Regression: without a filter (dedup.mode none) the late bound fell to 0, so every
// record a moment behind the clock was counted late (and dead-lettered under
// late_records: dead_letter). Late is more than the tolerance behind the clock.
TEST(ShardState, WithoutAFilterARecordWithinTheToleranceIsNotLate) {
  auto s = NewShard(DedupMode::kNone);
  ShardRules rules;
  rules.late_after = Millis{1000};
  rules.record_window = Millis{60'000};
  rules.late_records = LatePolicy::kDeadLetter;
  rules.dedups = false;  // dedup.mode none
  s->set_rules(rules);
  EXPECT_EQ(s->rules().late_after, Millis{1000});
  EXPECT_EQ(s->rules().record_window_held, std::nullopt);
  const std::string e = Event("a", 1);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(0), "k1", e, 10'000), At(10'000)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->Apply(Stamped(base::Offset(1), "k2", e, 9'500), At(10'000)).outcome,
            Outcome::kApplied);
  EXPECT_EQ(s->clock().late, 0u);

  // Made under dedup.mode none, configured to dedup since: it holds no window at all,
  // and says so (every retry would be counted twice).
  auto kept = NewShard(DedupMode::kNone);
  rules.dedups = true;
  kept->set_rules(rules);
  EXPECT_EQ(kept->rules().late_after, Millis{1000});
  EXPECT_EQ(kept->rules().record_window_held, Millis{0});
}

TEST(ShardState, RecordsTheClockOfEveryFilterCallSoThatReplaysReachTheSameFilter) {
  auto active = NewShard();
  const std::string e = Event("a", 1);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    // Timestamps that wander (several producers), some a day ahead.
    int64_t ts = i * 20 + std::uniform_int_distribution<int>(-500, 500)(rng);
    if (i % 97 == 0) ts += 24 * kHour;
    active->Apply(Stamped(base::Offset(i), "k" + std::to_string(i % 1500), e, ts),
                  At(i * 20 + 2000));
  }
  const std::vector<BatchRecord> batches = active->PendingBatches(base::Epoch(1));
  active->MarkCommitted(base::Epoch(1));
  auto replica = NewShard();
  for (const BatchRecord& b : batches) replica->Replay(b);
  EXPECT_EQ(replica->filter().Digest(), active->filter().Digest());
  EXPECT_EQ(replica->clock().clock_ms, active->clock().clock_ms);
  EXPECT_EQ(replica->counters(), active->counters());
}

TEST(ShardState, ViewsMadeFromThePreviousViewHoldTheSameCountersAsACopyOfTheState) {
  auto active = NewShard();
  auto replica = NewShard();
  std::mt19937 rng(11);
  int64_t offset = 0;
  for (int commit = 0; commit < 30; ++commit) {
    // Some commits touch a few counters, some many, some add new names.
    const int events = commit % 5 == 0 ? 3000 : 50;
    for (int i = 0; i < events; ++i) {
      const int counter = std::uniform_int_distribution<int>(0, 400 + commit * 50)(rng);
      active->Apply({base::Offset(offset), "k" + std::to_string(offset),
                     Event("c" + std::to_string(counter), 1)},
                    At(offset));
      ++offset;
    }
    const std::vector<BatchRecord> batches = active->Seal(base::Epoch(1));
    const auto view = active->MakeView({}, 0);
    active->MarkCommitted(base::Epoch(1));
    EXPECT_EQ(view->counters->counters(), CounterSnapshot::FromMap(Live(*active)).counters())
        << "commit " << commit;
    EXPECT_EQ(view->counters->size(), active->counters().size()) << "commit " << commit;
    for (const BatchRecord& b : batches) replica->Replay(b);
    EXPECT_EQ(replica->MakeView({}, 0)->counters->counters(), view->counters->counters());
    EXPECT_EQ(replica->MakeView({}, 0)->counters->size(), view->counters->size());
  }
}

// --- The snapshot format ---------------------------------------------------------

// The body of a version-2 snapshot (its zstd frame decompressed).
std::string SnapshotBody(std::string_view snapshot) {
  constexpr size_t kEnvelope = 4 + 2 + 1 + 8;
  const std::string_view packed = snapshot.substr(kEnvelope, snapshot.size() - kEnvelope - 8);
  std::string body(ZSTD_getFrameContentSize(packed.data(), packed.size()), '\0');
  EXPECT_EQ(ZSTD_decompress(body.data(), body.size(), packed.data(), packed.size()), body.size());
  return body;
}

std::string LittleEndian(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

// A version-4 body as version 3 wrote it: without the id hash key (8 bytes after the
// shard's clock).
std::string UnkeyedBody(std::string body) {
  constexpr size_t kKeyAt = 4 + 8 + 8 + 8 + 8;
  body.erase(kKeyAt, 8);
  return body;
}

// A version-4 body as versions 1 and 2 wrote it: also without the shard's clock (8
// bytes after the input offset) and the dead letters of reason late (the last stats
// field).
std::string ClocklessBody(std::string body) {
  body = UnkeyedBody(std::move(body));
  constexpr size_t kClockAt = 4 + 8 + 8 + 8;
  constexpr size_t kLateAt = kClockAt + 8 + (3 + 7) * 8;
  body.erase(kLateAt, 8);
  body.erase(kClockAt, 8);
  return body;
}

std::string Packed(std::string_view body) {
  std::string frame(ZSTD_compressBound(body.size()), '\0');
  frame.resize(ZSTD_compress(frame.data(), frame.size(), body.data(), body.size(), 1));
  return frame;
}

std::string Sealed(std::string bytes) {
  bytes += LittleEndian(XXH3_64bits(bytes.data(), bytes.size()), 8);
  return bytes;
}

TEST(ShardState, PinsTheBytesOfASnapshot) {
  auto s = NewShard(DedupMode::kNone);
  ASSERT_EQ(s->SetClaim(base::Epoch(4), 0xc1, filter::IdHashKey{0x0102030405060708}),
            filter::IdHashKey{0x0102030405060708});
  ASSERT_EQ(s->Apply(Stamped(base::Offset(7), "k1", Event("b", 5), 0), At(0)).outcome,
            Outcome::kApplied);
  ASSERT_EQ(s->Apply(Stamped(base::Offset(8), "k2", Event("a", -2), 1), At(1)).outcome,
            Outcome::kApplied);
  ASSERT_EQ(s->Seal(base::Epoch(4)).size(), 1u);
  s->MarkCommitted(base::Epoch(4));
  const std::string snapshot = s->EncodeSnapshot(base::Epoch(4));

  std::string filter_state;
  s->filter().Serialize(filter_state);
  const std::string body = LittleEndian(kPartition.value(), 4) + LittleEndian(4, 8)  // epoch
                           + LittleEndian(1, 8)                       // committed seq
                           + LittleEndian(9, 8)                       // next input offset
                           + LittleEndian(kT0 + 1, 8)                 // the shard's clock
                           + LittleEndian(0x0102030405060708, 8)      // id hash key
                           + LittleEndian(2, 8)                       // applied
                           + LittleEndian(0, 8) + LittleEndian(0, 8)  // duplicates, near edge
                           + std::string(8 * 8, '\0')                 // dead letters by reason
                           + LittleEndian(2, 4)                       // counters, by name:
                           + LittleEndian(1, 4) + "a" + LittleEndian(uint64_t(-2), 8) +
                           LittleEndian(1, 4) + "b" + LittleEndian(5, 8) +
                           LittleEndian(filter_state.size(), 4) + filter_state;
  EXPECT_EQ(snapshot.substr(0, 15),
            std::string("OCSS\x04\x00\x01", 7) + LittleEndian(body.size(), 8));  // version 4, zstd
  EXPECT_EQ(SnapshotBody(snapshot), body);
  const std::string_view covered = std::string_view(snapshot).substr(0, snapshot.size() - 8);
  EXPECT_EQ(snapshot.substr(covered.size()),
            LittleEndian(XXH3_64bits(covered.data(), covered.size()), 8));
}

// A batch of `counters` at `seq`, as a restore replays it.
BatchRecord CountersBatch(uint64_t seq, std::vector<changelog::CounterUpdate> counters) {
  BatchRecord batch;
  batch.partition = kPartition;
  batch.seq = base::Seq(seq);
  batch.input_from = base::Offset(static_cast<int64_t>(seq) - 1);
  batch.input_to = base::Offset(static_cast<int64_t>(seq));
  batch.counters = std::move(counters);
  return batch;
}

// A restored shard's first view costs the processor thread what the batches replayed
// after the snapshot changed, not a copy and sort of every counter: the view decoded
// with the snapshot has the batches' names on top, in a run of their own (a view
// copied from every counter has no run).
TEST(ShardState, BuildsARestoredShardsFirstViewFromTheSnapshotsOrderAndTheReplayedBatches) {
  auto s = NewShard(DedupMode::kNone);
  std::vector<changelog::CounterUpdate> all;
  for (int i = 0; i < 5000; ++i) all.push_back({"c" + std::to_string(i), i});
  s->Replay(CountersBatch(1, all));
  const std::string snapshot = s->EncodeSnapshot(base::Epoch(1));

  auto fresh = Restored(snapshot);
  ASSERT_NE(fresh, nullptr);
  const auto first = fresh->MakeView({}, 0)->counters;
  EXPECT_EQ(first->counters(), CounterSnapshot::FromMap(Live(*s)).counters());
  EXPECT_EQ(CounterSnapshot::ChunkCount(*first), 5000 / CounterSnapshot::kChunk + 1);

  auto restored = Restored(snapshot);
  ASSERT_NE(restored, nullptr);
  const BatchRecord later = CountersBatch(2, {{"c17", -1}, {"c4242", -2}, {"new", 3}});
  restored->Replay(later);
  s->Replay(later);
  const auto view = restored->MakeView({}, 0)->counters;
  EXPECT_EQ(view->counters(), CounterSnapshot::FromMap(Live(*s)).counters());
  EXPECT_EQ(view->size(), 5001u);
  EXPECT_EQ(CounterSnapshot::RunSizes(*view), std::vector<size_t>{3});
  EXPECT_EQ(CounterSnapshot::CopiedByWith(*view), 3u);
}

// No snapshot is written so, but a decoder must not trust its input's order.
TEST(ShardState, CopiesEveryCounterForTheFirstViewOfASnapshotWhoseCountersAreOutOfOrder) {
  auto s = NewShard(DedupMode::kNone);
  std::string filter_state;
  s->filter().Serialize(filter_state);
  const std::string body = LittleEndian(kPartition.value(), 4) + LittleEndian(1, 8)  // epoch
                           + LittleEndian(1, 8)                // committed seq
                           + LittleEndian(1, 8)                // next input offset
                           + LittleEndian(0, 8)                // the shard's clock
                           + LittleEndian(0, 8)                // id hash key
                           + std::string(3 * 8 + 8 * 8, '\0')  // stats
                           + LittleEndian(3, 4)                // counters, "b" first:
                           + LittleEndian(1, 4) + "b" + LittleEndian(5, 8) + LittleEndian(1, 4) +
                           "a" + LittleEndian(uint64_t(-2), 8) + LittleEndian(1, 4) + "c" +
                           LittleEndian(7, 8) + LittleEndian(filter_state.size(), 4) + filter_state;
  auto restored = Restored(
      Sealed(std::string("OCSS\x04\x00\x01", 7) + LittleEndian(body.size(), 8) + Packed(body)));
  ASSERT_NE(restored, nullptr);
  restored->Replay(CountersBatch(2, {{"d", 1}}));
  const auto view = restored->MakeView({}, 0)->counters;
  EXPECT_EQ(view->counters(), (std::vector<CounterValue>{{"a", -2}, {"b", 5}, {"c", 7}, {"d", 1}}));
  EXPECT_TRUE(CounterSnapshot::RunSizes(*view).empty()) << "a copy of every counter";
}

TEST(ShardState, ReadsSnapshotsOfTheUncompressedFirstVersion) {
  auto s = NewShard();
  Stream stream(11);
  RunAndCommit(*s, stream, 1, 200, 1);
  const std::string v1 = Sealed(std::string("OCSS\x01\x00", 6) +
                                ClocklessBody(SnapshotBody(s->EncodeSnapshot(base::Epoch(1)))));
  auto restored = Restored(v1);
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*s, *restored);
  EXPECT_EQ(restored->filter().Digest(), s->filter().Digest());
  EXPECT_EQ(restored->clock().clock_ms, 0) << "set by the next record or batch";
}

TEST(ShardState, ReadsSnapshotsOfTheSecondVersionWithoutAClock) {
  auto s = NewShard();
  Stream stream(12);
  RunAndCommit(*s, stream, 1, 200, 1);
  const std::string body = ClocklessBody(SnapshotBody(s->EncodeSnapshot(base::Epoch(1))));
  const std::string v2 =
      Sealed(std::string("OCSS\x02\x00\x01", 7) + LittleEndian(body.size(), 8) + Packed(body));
  auto restored = Restored(v2);
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*s, *restored);
  EXPECT_EQ(restored->filter().Digest(), s->filter().Digest());
  EXPECT_EQ(restored->clock().clock_ms, 0);
}

// Shards snapshotted before keys existed hashed their ids unkeyed: a version-3
// snapshot restores with kUnkeyed, which every later claim then carries, so retries
// of ids it holds are still caught.
TEST(ShardState, ReadsSnapshotsOfTheThirdVersionAsUnkeyed) {
  auto s = NewShard();
  Stream stream(13);
  RunAndCommit(*s, stream, 1, 200, 1);
  ASSERT_EQ(s->hash_key(), filter::kUnkeyed) << "applied with no claim: unkeyed";
  const std::string body = UnkeyedBody(SnapshotBody(s->EncodeSnapshot(base::Epoch(1))));
  const std::string v3 =
      Sealed(std::string("OCSS\x03\x00\x01", 7) + LittleEndian(body.size(), 8) + Packed(body));
  auto restored = Restored(v3);
  ASSERT_NE(restored, nullptr);
  ExpectSameState(*s, *restored);
  EXPECT_EQ(restored->filter().Digest(), s->filter().Digest());
  EXPECT_EQ(restored->clock().clock_ms, s->clock().clock_ms);
  EXPECT_EQ(restored->hash_key(), filter::kUnkeyed);
  EXPECT_EQ(restored->SetClaim(base::Epoch(2), 0xc2, filter::IdHashKey{0x5eed}), filter::kUnkeyed);
}

// The key is drawn once, by the shard's first claim; a snapshot carries it, and a
// later owner's claim keeps it whatever key that owner drew, so that it hashes the
// retry of an id exactly as the owner that first saw the id did.
TEST(ShardState, KeepsTheKeyOfItsFirstClaimThroughSnapshotsAndLaterClaims) {
  auto first = NewShard();
  EXPECT_EQ(first->hash_key(), std::nullopt);
  ASSERT_EQ(first->SetClaim(base::Epoch(1), 0xc1, filter::IdHashKey{0xfeed}),
            filter::IdHashKey{0xfeed});
  ASSERT_EQ(first->Apply(Stamped(base::Offset(0), "client/1", Event("c", 1), 0), At(0)).outcome,
            Outcome::kApplied);
  const std::vector<BatchRecord> batches = first->Seal(base::Epoch(1));
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].segments.size(), 1u);
  EXPECT_EQ(batches[0].segments[0].hashes,
            (std::vector<uint64_t>{
                filter::HashIdempotencyId("client/1", filter::IdHashKey{0xfeed}).value}));
  EXPECT_NE(batches[0].segments[0].hashes[0],
            filter::HashIdempotencyId("client/1", filter::kUnkeyed).value);
  first->MarkCommitted(base::Epoch(1));

  auto restored = Restored(first->EncodeSnapshot(base::Epoch(1)));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->hash_key(), filter::IdHashKey{0xfeed});
  EXPECT_EQ(restored->SetClaim(base::Epoch(2), 0xc2, filter::IdHashKey{0xbeef}),
            filter::IdHashKey{0xfeed});
  EXPECT_EQ(restored->Apply(Stamped(base::Offset(1), "client/1", Event("c", 1), 1), At(1)).outcome,
            Outcome::kDuplicate);

  // Batches carry the key too: a state rebuilt from batches alone (their claim
  // deleted by retention before any snapshot) learns it from them.
  EXPECT_EQ(batches[0].hash_key, 0xfeedu);
  auto replayed = NewShard();
  replayed->Replay(batches[0]);
  EXPECT_EQ(replayed->SetClaim(base::Epoch(2), 0xc2, filter::IdHashKey{0xbeef}),
            filter::IdHashKey{0xfeed});
  EXPECT_EQ(replayed->Apply(Stamped(base::Offset(1), "client/1", Event("c", 1), 1), At(1)).outcome,
            Outcome::kDuplicate);
}

// Records of one shard that disagree on its key leave its filter's hashes unknown:
// the state says so, and restores refuse to claim it (restore_test.cc).
TEST(ShardState, ReportsRecordsThatDisagreeOnItsKey) {
  auto first = NewShard();
  first->SetClaim(base::Epoch(1), 0xc1, filter::IdHashKey{0xfeed});
  ASSERT_EQ(first->Apply(Stamped(base::Offset(0), "client/1", Event("c", 1), 0), At(0)).outcome,
            Outcome::kApplied);
  std::vector<BatchRecord> batches = first->Seal(base::Epoch(1));
  ASSERT_EQ(batches.size(), 1u);
  auto replica = NewShard();
  replica->AdoptHashKey(filter::IdHashKey{0xfeed});
  replica->Replay(batches[0]);
  EXPECT_EQ(replica->hash_key_conflict(), std::nullopt);
  batches[0].hash_key = 0xbad;
  replica->Replay(batches[0]);
  EXPECT_EQ(replica->hash_key_conflict(), filter::IdHashKey{0xbad});
  EXPECT_EQ(replica->hash_key(), filter::IdHashKey{0xfeed});
}

TEST(ShardState, SnapshotOfAFilterFarFromFullIsSeveralTimesSmallerThanTheFilter) {
  auto s = NewShard();
  Stream stream(12);
  RunAndCommit(*s, stream, 1, 200, 1);  // 200 ids in a filter sized for 10,000
  const uint64_t filter_bytes = s->filter().Summary().bits_total / 8;
  EXPECT_LT(s->EncodeSnapshot(base::Epoch(1)).size() * 4, filter_bytes);
}

TEST(ShardState, RejectsASnapshotWhoseBodyLengthDisagreesWithItsFrame) {
  auto s = NewShard(DedupMode::kNone);
  ASSERT_EQ(s->Apply({base::Offset(0), "k", Event("c", 1)}, At(0)).outcome, Outcome::kApplied);
  std::string bad = s->EncodeSnapshot(base::Epoch(1));
  bad[7] = static_cast<char>(bad[7] + 1);  // the body length's low byte
  bad.resize(bad.size() - 8);
  bad += LittleEndian(XXH3_64bits(bad.data(), bad.size()), 8);
  auto made = ShardState::FromSnapshot(bad, {});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.message().find("body length"), std::string::npos) << made.error();
}

// A frame whose header claims 4e9 bytes but holds 10: the decoder must fail
// without first making room for what the header claims (it grows its buffer as
// bytes come out), and must say it cannot decompress.
TEST(ShardState, RejectsASnapshotWhoseFrameClaimsFarMoreThanItHolds) {
  constexpr uint64_t kClaimed = 4'000'000'000;
  std::string frame = LittleEndian(0xFD2FB528, 4);  // zstd magic
  frame += '\xE0';                                  // 8-byte content size, single segment
  frame += LittleEndian(kClaimed, 8);
  frame += LittleEndian(1 | (1 << 1) | (10 << 3), 3);  // last block, RLE, 10 bytes
  frame += 'x';
  std::string bad = "OCSS" + LittleEndian(2, 2) + LittleEndian(1, 1) + LittleEndian(kClaimed, 8);
  bad += frame;
  bad += LittleEndian(XXH3_64bits(bad.data(), bad.size()), 8);
  auto made = ShardState::FromSnapshot(bad, {});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.message().find("cannot decompress"), std::string::npos) << made.error();
}

}  // namespace
}  // namespace oncecount::shard
