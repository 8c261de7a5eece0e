#include "processor/filter/filter_factory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "processor/filter/bloom/sizing.h"
#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/experiments/experiment_filters.h"

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xFAC7)};
}

DedupSpec Spec(DedupMode mode) {
  DedupSpec spec;
  spec.mode = mode;
  spec.expected_rate = 1000;
  spec.window = Millis{10000};
  spec.target_fpp = 1e-6;
  spec.seed = 123;
  return spec;
}

std::unique_ptr<DedupFilter> Make(const DedupSpec& spec, Millis start = Millis{0}) {
  auto made = MakeDedupFilter(spec, start);
  if (!made.ok()) {
    ADD_FAILURE() << made.error();
    return nullptr;
  }
  return std::move(made).value();
}

// Inserts ids at the expected rate for two windows and retries each at exactly the
// window's end: every retry must be caught.
void ExpectRetriesInsideTheWindowCaught(DedupFilter& f, Millis window) {
  for (uint64_t i = 0; i < 20000; ++i) {  // 1000 per second for 20 s
    const Millis now{static_cast<int64_t>(i)};
    f.AdvanceTo(now);
    const auto w = static_cast<uint64_t>(window.count());
    if (i >= w) {
      ASSERT_TRUE(IsDuplicate(f.TestAndInsert(Id(i - w)))) << "retry of id " << i - w;
    }
    ASSERT_EQ(f.TestAndInsert(Id(i)), Verdict::kNew) << "a false positive on id " << i;
  }
}

TEST(MakeDedupFilter, BuildsAnFbfSizedFromRateWindowAndTarget) {
  for (MembershipCheck check : {MembershipCheck::kPaper, MembershipCheck::kPairs}) {
    for (bool adaptive : {false, true}) {
      DedupSpec spec = Spec(DedupMode::kFbf);
      spec.check = check;
      spec.adaptive = adaptive;
      std::unique_ptr<DedupFilter> f = Make(spec, Millis{0});
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(f->mode(), DedupMode::kFbf);
      auto* fbf = dynamic_cast<ForgetfulBloomFilter*>(f.get());
      ASSERT_NE(fbf, nullptr);
      auto sized = SizeFbf({spec.expected_rate, spec.window, spec.target_fpp, check});
      ASSERT_TRUE(sized.ok());
      const FbfConfig& c = fbf->config();
      EXPECT_EQ(c.bits_per_filter, sized->bits_per_filter);
      EXPECT_EQ(c.hashes, sized->hashes);
      EXPECT_EQ(c.past_filters, sized->past_filters);
      EXPECT_EQ(c.refresh, sized->refresh);
      EXPECT_EQ(c.check, check);
      EXPECT_EQ(c.adaptive, adaptive);
      EXPECT_EQ(c.seed, spec.seed);
      EXPECT_EQ(c.target_fpp, spec.target_fpp);
      EXPECT_EQ(fbf->window(), spec.window);
      EXPECT_GE(f->Summary().window_ms_guaranteed, spec.window.count());
      ExpectRetriesInsideTheWindowCaught(*f, spec.window);
    }
  }
}

TEST(MakeDedupFilter, BuildsABloomFilterForTheIdsOfOneWindow) {
  const DedupSpec spec = Spec(DedupMode::kBloom);
  std::unique_ptr<DedupFilter> f = Make(spec);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->mode(), DedupMode::kBloom);
  auto size = SizeBloom(10000, spec.target_fpp);  // 1000 ids/s for 10 s
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(f->Summary().bits_total, size->bits);
  for (uint64_t i = 0; i < 10000; ++i) ASSERT_EQ(f->TestAndInsert(Id(i)), Verdict::kNew);
  EXPECT_LE(f->Summary().estimated_fpp, spec.target_fpp);
}

TEST(MakeDedupFilter, BuildsAnExactWindow) {
  const DedupSpec spec = Spec(DedupMode::kExact);
  std::unique_ptr<DedupFilter> f = Make(spec, Millis{500});
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->mode(), DedupMode::kExact);
  EXPECT_EQ(f->Summary().window_ms_guaranteed, 10000);
  EXPECT_EQ(f->TestAndInsert(Id(1)), Verdict::kNew);
  f->AdvanceTo(Millis{10500});
  EXPECT_TRUE(f->Contains(Id(1)));
  f->AdvanceTo(Millis{10501});
  EXPECT_FALSE(f->Contains(Id(1)));
}

TEST(MakeDedupFilter, BuildsNoDedup) {
  std::unique_ptr<DedupFilter> f = Make(Spec(DedupMode::kNone));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->mode(), DedupMode::kNone);
  EXPECT_EQ(f->TestAndInsert(Id(1)), Verdict::kNew);
  EXPECT_EQ(f->TestAndInsert(Id(1)), Verdict::kNew);
}

void ExpectRejected(const DedupSpec& spec, const std::string& word) {
  auto made = MakeDedupFilter(spec, Millis{0});
  ASSERT_FALSE(made.ok()) << "mode " << ModeName(spec.mode);
  EXPECT_NE(made.message().find(word), std::string::npos) << made.error();
}

TEST(MakeDedupFilter, LeavesTheSingleGaussianFilterToTheExperiments) {
  DedupSpec spec;
  spec.mode = DedupMode::kGaussian;
  spec.expected_rate = 100;
  spec.window = Millis{1000};
  auto refused = MakeDedupFilter(spec, Millis{0});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), base::Errc::kInvalidArgument);
  auto built = MakeExperimentFilter(spec, Millis{0});
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(built.value()->mode(), DedupMode::kGaussian);
  // The same shape as a bloom filter of the spec: as many cells as it has bits.
  spec.mode = DedupMode::kBloom;
  auto bloom = MakeDedupFilter(spec, Millis{0});
  ASSERT_TRUE(bloom.ok()) << bloom.error();
  EXPECT_EQ(built.value()->Summary().bits_total, bloom.value()->Summary().bits_total * 8);
}

TEST(MakeDedupFilter, RejectsBadSpecsNamingTheField) {
  DedupSpec spec = Spec(DedupMode::kFbf);
  spec.target_fpp = 0;
  ExpectRejected(spec, "target fpp");
  spec = Spec(DedupMode::kFbf);
  spec.window = Millis{0};
  ExpectRejected(spec, "window");
  spec = Spec(DedupMode::kFbf);
  spec.expected_rate = -1;
  ExpectRejected(spec, "expected rate");
  spec = Spec(DedupMode::kBloom);
  spec.target_fpp = 1.5;
  ExpectRejected(spec, "target fpp");
  spec = Spec(DedupMode::kExact);
  spec.window = Millis{-1};
  ExpectRejected(spec, "window");
  spec = Spec(static_cast<DedupMode>(9));
  ExpectRejected(spec, "mode");
}

// A spec whose exact window cannot fit in memory (10^12 ids per second for a day) is a
// configuration error to report, not an exception out of the factory.
TEST(MakeDedupFilter, ReportsAnExactWindowTooLargeForMemoryAsAnError) {
  DedupSpec spec = Spec(DedupMode::kExact);
  spec.expected_rate = 1e12;
  spec.window = Millis{86'400'000};
  base::Result<std::unique_ptr<DedupFilter>> made = base::Error(base::Errc::kInternal, "not run");
  EXPECT_NO_THROW(made = MakeDedupFilter(spec, Millis{0}));
  EXPECT_FALSE(made.ok());
}

}  // namespace
}  // namespace oncecount::filter
