#include "processor/filter/dedup_filter.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/bloom/plain_bloom_dedup.h"
#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/filter_factory.h"
#include "processor/filter/no_dedup.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xBA7C)};
}

struct ModeCase {
  std::string name;
  std::function<std::unique_ptr<DedupFilter>()> make;
};

std::unique_ptr<DedupFilter> Fbf(MembershipCheck check, bool adaptive, uint32_t block) {
  FbfConfig c;
  c.check = check;
  c.adaptive = adaptive;
  c.past_filters = 4;
  c.bits_per_filter = adaptive ? 1024 : 8192;
  c.block_bits = block;
  c.hashes = 3;
  c.refresh = Millis{50};
  c.target_fpp = 1e-4;
  auto f = ForgetfulBloomFilter::Create(c, Millis{0});
  if (!f.ok()) ADD_FAILURE() << f.error();
  return std::make_unique<ForgetfulBloomFilter>(std::move(f).value());
}

std::vector<ModeCase> EveryMode() {
  std::vector<ModeCase> modes;
  for (MembershipCheck check :
       {MembershipCheck::kPaper, MembershipCheck::kPairs, MembershipCheck::kAny}) {
    for (bool adaptive : {false, true}) {
      for (uint32_t block : {512u, 1024u}) {
        modes.push_back({std::string("fbf ") + CheckName(check) + (adaptive ? " adaptive" : "") +
                             " block " + std::to_string(block),
                         [=] { return Fbf(check, adaptive, block); }});
      }
    }
  }
  modes.push_back({"bloom", [] {
                     return std::unique_ptr<DedupFilter>(std::make_unique<PlainBloomDedup>(
                         std::move(PlainBloomDedup::Create(1 << 15, 4, 3)).value()));
                   }});
  modes.push_back({"exact", [] {
                     return std::unique_ptr<DedupFilter>(std::make_unique<ExactWindowDedup>(
                         std::move(ExactWindowDedup::Create(Millis{300}, 10, Millis{0})).value()));
                   }});
  modes.push_back(
      {"none", [] { return std::unique_ptr<DedupFilter>(std::make_unique<NoDedup>()); }});
  return modes;
}

// Batches hold fresh ids, an id twice within the batch, and retries of earlier ids.
TEST(DedupFilter, BatchGivesTheVerdictsOfOneByOneCallsInEveryMode) {
  for (const ModeCase& mode : EveryMode()) {
    SCOPED_TRACE(mode.name);
    std::unique_ptr<DedupFilter> batched = mode.make();
    std::unique_ptr<DedupFilter> single = mode.make();
    std::mt19937_64 rng(17);
    uint64_t next = 0;
    int64_t now = 0;
    uint64_t in_batch_repeats = 0;
    for (int step = 0; step < 300; ++step) {
      now += static_cast<int64_t>(rng() % 40);
      batched->AdvanceTo(Millis{now});
      single->AdvanceTo(Millis{now});
      std::vector<IdHash> ids;
      const size_t size = rng() % 40;
      std::vector<size_t> repeats_at;
      for (size_t i = 0; i < size; ++i) {
        const uint64_t kind = rng() % 10;
        if (kind < 2 && !ids.empty()) {
          repeats_at.push_back(ids.size());
          ids.push_back(ids[rng() % ids.size()]);  // again, inside this batch
        } else if (kind < 4 && next > 0) {
          ids.push_back(Id(rng() % next));  // a retry of an earlier batch
        } else {
          ids.push_back(Id(next++));
        }
      }
      std::vector<Verdict> verdicts(ids.size(), Verdict::kDuplicateNearEdge);
      batched->TestAndInsertBatch(ids, verdicts);
      for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(verdicts[i], single->TestAndInsert(ids[i])) << "step " << step << ", item " << i;
      }
      if (mode.name != "none") {
        for (size_t i : repeats_at) {
          ASSERT_TRUE(IsDuplicate(verdicts[i])) << "an id repeated inside a batch was missed";
          ++in_batch_repeats;
        }
      }
    }
    EXPECT_EQ(batched->Digest(), single->Digest());
    if (mode.name != "none") {
      EXPECT_GT(in_batch_repeats, 100u);
    }
  }
}

TEST(DedupFilter, BatchOfNothingChangesNothing) {
  for (const ModeCase& mode : EveryMode()) {
    std::unique_ptr<DedupFilter> f = mode.make();
    const std::string before = f->Digest();
    f->TestAndInsertBatch({}, {});
    EXPECT_EQ(f->Digest(), before) << mode.name;
  }
}

TEST(DedupFilter, DigestIsSixteenHexDigitsThatFollowTheState) {
  for (const ModeCase& mode : EveryMode()) {
    SCOPED_TRACE(mode.name);
    std::unique_ptr<DedupFilter> a = mode.make();
    std::unique_ptr<DedupFilter> b = mode.make();
    const std::string empty = a->Digest();
    ASSERT_EQ(empty.size(), 16u);
    for (char ch : empty) {
      EXPECT_TRUE((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')) << empty;
    }
    EXPECT_EQ(b->Digest(), empty);  // built the same way: the same state
    (void)a->TestAndInsert(Id(1));
    EXPECT_NE(a->Digest(), empty);
    (void)b->TestAndInsert(Id(1));
    EXPECT_EQ(a->Digest(), b->Digest());
  }
}

TEST(DedupFilter, NamesItsModesAsTheConfigFileDoes) {
  EXPECT_STREQ(ModeName(DedupMode::kNone), "none");
  EXPECT_STREQ(ModeName(DedupMode::kBloom), "bloom");
  EXPECT_STREQ(ModeName(DedupMode::kExact), "exact");
  EXPECT_STREQ(ModeName(DedupMode::kFbf), "fbf");
}

TEST(DedupFilter, CountsEveryVerdictButNewAsADuplicate) {
  EXPECT_FALSE(IsDuplicate(Verdict::kNew));
  EXPECT_TRUE(IsDuplicate(Verdict::kDuplicate));
  EXPECT_TRUE(IsDuplicate(Verdict::kDuplicateNearEdge));
}

// ---------------------------------------------------------------------------------
// The memory bound (SPEC §2.1): a clock that stops moving while ids keep coming. Every
// bounded service mode stays within its bound, keeps its false-positive estimate
// within reach of the target instead of overfilling, decodes in every state it
// reaches, and reports the window it really holds: none while the forgotten ids are
// as new as the clock, then as much as the clock has moved past them.

struct BoundedCase {
  std::string name;
  DedupSpec spec;
};

std::vector<BoundedCase> EveryBoundedMode() {
  DedupSpec base;
  base.expected_rate = 2000;
  base.window = Millis{5000};
  base.target_fpp = 1e-4;
  base.memory_limit_bytes = uint64_t{1} << 20;
  std::vector<BoundedCase> cases;
  DedupSpec bloom = base;
  cases.push_back({"fbf bloom", bloom});
  for (bool adaptive : {true, false}) {
    DedupSpec fingerprint = base;
    fingerprint.constituent = Constituent::kFingerprint;
    fingerprint.adaptive = adaptive;
    cases.push_back({adaptive ? "fbf fingerprint adaptive" : "fbf fingerprint fixed", fingerprint});
  }
  DedupSpec exact = base;
  exact.mode = DedupMode::kExact;
  cases.push_back({"exact", exact});
  return cases;
}

TEST(DedupFilter, AtItsMemoryBoundForgetsEarlyAndReportsTheWindowItReallyHolds) {
  constexpr Millis kFrozen{1000};
  for (const BoundedCase& c : EveryBoundedMode()) {
    SCOPED_TRACE(c.name);
    auto made = MakeDedupFilter(c.spec, Millis{0});
    ASSERT_TRUE(made.ok()) << made.error();
    std::unique_ptr<DedupFilter> f = std::move(made).value();
    f->AdvanceTo(kFrozen);
    const int64_t configured = f->Summary().window_ms_configured;
    ASSERT_GE(configured, c.spec.window.count());
    // Far more ids at one instant than the bound holds for the window.
    std::vector<IdHash> batch(1000);
    std::vector<Verdict> verdicts(batch.size());
    uint64_t next = 0;
    for (int round = 0; round < 400; ++round) {
      for (IdHash& id : batch) id = Id(next++);
      f->TestAndInsertBatch(batch, verdicts);
      const FilterSummary s = f->Summary();
      ASSERT_LE(s.bits_total / 8, c.spec.memory_limit_bytes) << "round " << round;
      ASSERT_LE(s.estimated_fpp, 0.05) << "round " << round;
      std::string state;
      f->Serialize(state);
      auto decoded = DecodeDedupFilter(state);
      ASSERT_TRUE(decoded.ok()) << "round " << round << ": " << decoded.error();
      ASSERT_EQ((*decoded)->Digest(), f->Digest());
    }
    FilterSummary s = f->Summary();
    EXPECT_GT(s.forgotten_early, 0u);
    EXPECT_EQ(s.memory_limit_bytes, c.spec.memory_limit_bytes);
    EXPECT_EQ(s.window_ms_guaranteed, 0) << "ids as new as the frozen clock were forgotten";
    // The newest ids are held.
    for (uint64_t n = next - 100; n < next; ++n) EXPECT_TRUE(f->Contains(Id(n))) << n;
    // The clock moves again: the window held grows back with it, and ids inserted
    // since are held for it.
    f->AdvanceTo(kFrozen + Millis{1000});
    for (IdHash& id : batch) id = Id(next++);
    f->TestAndInsertBatch(batch, verdicts);
    f->AdvanceTo(kFrozen + Millis{3000});
    s = f->Summary();
    // Ids of kFrozen may be lost, and they are 3000 ms old: 2999 ms are held whole.
    EXPECT_EQ(s.window_ms_guaranteed, 2999);
    for (const IdHash& id : batch) EXPECT_TRUE(f->Contains(id));
    f->AdvanceTo(kFrozen + Millis{configured} + Millis{1});
    EXPECT_EQ(f->Summary().window_ms_guaranteed, configured);
  }
}

}  // namespace
}  // namespace oncecount::filter
