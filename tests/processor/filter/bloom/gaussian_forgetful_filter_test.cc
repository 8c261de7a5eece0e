// The FBF with Gaussian constituents (dedup.filter: gaussian): the window logic is
// the blocked FBF's, so the same hard invariant must hold — an id applied at most
// the guaranteed window ago is always found.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>

#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/filter_factory.h"

namespace oncecount::filter {
namespace {

struct GaussianWindowCase {
  MembershipCheck check;
  bool adaptive;
  uint32_t past_filters;
  uint32_t cell_bits;
  uint64_t slice_capacity;
};

class GaussianFbfWindow : public ::testing::TestWithParam<GaussianWindowCase> {};

TEST_P(GaussianFbfWindow, NeverForgetsAnIdInsideTheWindow) {
  const GaussianWindowCase wc = GetParam();
  const uint64_t seed = 1000 * wc.past_filters + 10 * static_cast<uint64_t>(wc.check) +
                        wc.cell_bits + (wc.adaptive ? 5 : 0) + wc.slice_capacity;
  std::mt19937_64 rng(seed);
  FbfConfig c;
  c.check = wc.check;
  c.past_filters = wc.past_filters;
  c.hashes = 4;
  c.refresh = Millis{100};
  c.adaptive = wc.adaptive;
  c.bits_per_filter = wc.adaptive ? 1024 : 4096;
  c.target_fpp = 1e-4;
  c.cell_bits = wc.cell_bits;
  c.slice_capacity = wc.slice_capacity;
  c.seed = seed;
  auto created = GaussianForgetfulFilter::Create(c, Millis{0});
  ASSERT_TRUE(created.ok()) << created.error();
  GaussianForgetfulFilter f = std::move(created).value();

  struct Applied {
    IdHash id;
    Millis at;
  };
  std::deque<Applied> applied;
  uint64_t next = 0, accepted = 0, checked = 0;
  Millis now{0};
  for (int step = 0; step < 3000; ++step) {
    // Mostly small steps, sometimes a jump of up to a whole window.
    const int64_t jump = rng() % 50 == 0 ? static_cast<int64_t>(rng() % 1000) + 1
                                         : static_cast<int64_t>(rng() % 20) + 1;
    now += Millis{jump};
    f.AdvanceTo(now);
    // The hard invariant is the configured window (forgetful_bloom_filter.h).
    // GuaranteedWindow() may exceed it after a shape change and is not what is
    // checked here: blocked constituents show the same.
    const Millis window = f.window();
    while (!applied.empty() && now - applied.front().at > window) applied.pop_front();
    // Every id still inside the window is found, including those at its very edge.
    for (const Applied& a : applied) {
      ASSERT_TRUE(f.Contains(a.id)) << "age " << (now - a.at).count() << " ms, window "
                                    << window.count() << " ms, step " << step;
      ++checked;
    }
    // Bursts and quiet stretches, so that adaptation has work to do.
    const uint64_t fresh = (step / 200) % 2 == 0 ? rng() % 40 : rng() % 3;
    for (uint64_t i = 0; i < fresh; ++i) {
      const IdHash id{SeededMix(IdHash{next++}, seed)};
      if (f.TestAndInsert(id) == Verdict::kNew) {
        applied.push_back({id, now});
        ++accepted;
      }
    }
    // A retry of an applied id inside the window is a duplicate.
    if (!applied.empty()) {
      const Applied& a = applied[rng() % applied.size()];
      ASSERT_TRUE(IsDuplicate(f.TestAndInsert(a.id)));
    }
  }
  EXPECT_GE(accepted, 10000u);
  EXPECT_GE(checked, 100000u);
}

std::vector<GaussianWindowCase> Cases() {
  std::vector<GaussianWindowCase> cases;
  for (MembershipCheck check : {MembershipCheck::kPaper, MembershipCheck::kPairs}) {
    for (bool adaptive : {false, true}) {
      for (uint32_t bits : {4u, 8u, 64u}) {
        for (uint32_t n : {1u, 3u, 8u}) cases.push_back({check, adaptive, n, bits, 0});
        cases.push_back({check, adaptive, 4, bits, 30});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ChecksCellsAndShapes, GaussianFbfWindow, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<GaussianWindowCase>& p) {
                           return std::string(CheckName(p.param.check)) +
                                  (p.param.adaptive ? "_adaptive" : "_fixed") + "_N" +
                                  std::to_string(p.param.past_filters) + "_B" +
                                  std::to_string(p.param.cell_bits) +
                                  (p.param.slice_capacity > 0 ? "_early" : "");
                         });

TEST(GaussianFbf, IsBuiltByTheFactoryWithAsManyCellsAsTheBloomSizingHasBits) {
  DedupSpec spec;
  spec.expected_rate = 1000;
  spec.window = Millis{10000};
  spec.target_fpp = 1e-4;
  auto bloom = MakeDedupFilter(spec, Millis{0});
  spec.constituent = Constituent::kGaussian;
  spec.cell_bits = 4;
  auto gaussian = MakeDedupFilter(spec, Millis{0});
  ASSERT_TRUE(bloom.ok() && gaussian.ok());
  auto* g = dynamic_cast<GaussianForgetfulFilter*>(gaussian.value().get());
  auto* b = dynamic_cast<ForgetfulBloomFilter*>(bloom.value().get());
  ASSERT_NE(g, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(g->config().bits_per_filter, b->config().bits_per_filter);
  EXPECT_EQ(g->config().hashes, b->config().hashes);
  EXPECT_EQ(g->config().cell_bits, 4u);
  EXPECT_EQ(gaussian.value()->mode(), DedupMode::kFbf);
}

TEST(GaussianFbf, EstimatesWithTheUnderlyingClassicFilterWhichBoundsItsFalsePositives) {
  FbfConfig c;
  c.bits_per_filter = 4096;
  c.hashes = 4;
  c.past_filters = 2;
  c.refresh = Millis{1000};
  c.cell_bits = 8;
  auto created = GaussianForgetfulFilter::Create(c, Millis{0});
  ASSERT_TRUE(created.ok());
  GaussianForgetfulFilter f = std::move(created).value();
  for (uint64_t i = 0; i < 600; ++i) f.TestAndInsert(IdHash{SeededMix(IdHash{i}, 1)});
  uint64_t positives = 0;
  const uint64_t queries = 200000;
  for (uint64_t i = 0; i < queries; ++i) positives += f.Contains(IdHash{SeededMix(IdHash{i}, 2)});
  const double measured = static_cast<double>(positives) / static_cast<double>(queries);
  EXPECT_GT(f.Summary().estimated_fpp, 0.0);
  EXPECT_LE(measured, f.Summary().estimated_fpp * 1.2);
}

TEST(GaussianFbf, RejectsCellBitsOtherThanFourEightOrSixtyFour) {
  FbfConfig c;
  c.bits_per_filter = 4096;
  c.hashes = 4;
  c.past_filters = 2;
  c.refresh = Millis{1000};
  c.cell_bits = 16;
  auto created = GaussianForgetfulFilter::Create(c, Millis{0});
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.message().find("cell bits"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::filter
