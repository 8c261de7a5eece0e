// `oncecount filter-eval`, in process: Gaussian filters (the single filter, --mode
// gaussian, and Gaussian constituents of the FBF, --filter gaussian), the rate a
// self-sized filter is sized for, and the options it rejects.
#include "processor/cmd/filter_eval.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace oncecount::cmd {
namespace {

struct EvalRun {
  int code = 0;
  std::string out;
  std::string err;
};

EvalRun Eval(const FilterEvalOptions& o) {
  std::ostringstream out, err;
  EvalRun r;
  r.code = RunFilterEval(o, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool Has(const std::string& json, const std::string& fragment) {
  return json.find(fragment) != std::string::npos;
}

TEST(FilterEval, RunsASingleGaussianFilterWithBitsCountingCells) {
  FilterEvalOptions o;
  o.mode = "gaussian";
  o.bits = 256;
  o.hashes = 3;
  o.cell_bits = 4;
  o.rate = 30;
  o.duration_ms = 1000;
  o.queries = 10000;
  const EvalRun r = Eval(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "\"mode\":\"gaussian\"")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"cells\":256")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"cell_bits\":4")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"bits_total\":1024")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"inserted\":30")) << r.out;
}

TEST(FilterEval, RunsAnFbfWithGaussianConstituentsWithoutFalseNegatives) {
  FilterEvalOptions o;
  o.mode = "fbf";
  o.filter = "gaussian";
  o.cell_bits = 8;
  o.rate = 2000;
  o.window_ms = 2000;
  o.target_fpp = 1e-3;
  o.duration_ms = 6000;
  o.queries = 20000;
  o.adaptive = true;
  const EvalRun r = Eval(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "\"filter\":\"gaussian\"")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"false_negatives\":0,")) << r.out;
  EXPECT_FALSE(Has(r.out, "\"rechecked\":0,")) << r.out;
}

TEST(FilterEval, RejectsCellBitsOtherThanFourEightOrSixtyFour) {
  FilterEvalOptions o;
  o.mode = "gaussian";
  o.bits = 256;
  o.hashes = 3;
  o.cell_bits = 16;
  o.rate = 10;
  const EvalRun r = Eval(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--cell-bits")) << r.err;
}

TEST(FilterEval, RejectsCellBitsWhereThereAreNoCells) {
  FilterEvalOptions o;
  o.mode = "fbf";
  o.cell_bits = 8;
  o.rate = 10;
  o.window_ms = 1000;
  const EvalRun r = Eval(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--cell-bits")) << r.err;
}

TEST(FilterEval, RejectsAnUnknownConstituentFilter) {
  FilterEvalOptions o;
  o.filter = "cuckoo";
  o.rate = 10;
  o.window_ms = 1000;
  const EvalRun r = Eval(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--filter")) << r.err;
}

// The "bits_total" of the final summary (the last one in the output: trace rows
// come first).
uint64_t FinalBits(const std::string& json) {
  const std::string key = "\"bits_total\":";
  const size_t at = json.rfind(key);
  return at == std::string::npos ? 0 : std::stoull(json.substr(at + key.size()));
}

TEST(FilterEval, SizesASelfSizedFilterForTheExpectedRateWhenGivenOne) {
  FilterEvalOptions o;
  o.mode = "fbf";
  o.filter = "fingerprint";
  o.rate = 50;
  o.window_ms = 7000;
  o.target_fpp = 1e-3;
  o.duration_ms = 2000;
  o.queries = 1000;
  o.trace = true;
  o.trace_queries = 100;
  const EvalRun first_rate = Eval(o);
  ASSERT_EQ(first_rate.code, 0) << first_rate.err;
  o.expected_rate = 5000;
  const EvalRun expected = Eval(o);
  ASSERT_EQ(expected.code, 0) << expected.err;
  // A hundred times the rate: about a hundred times the memory, from the start (the
  // trace rows carry it too).
  EXPECT_GT(FinalBits(expected.out), 50 * FinalBits(first_rate.out));
  EXPECT_TRUE(Has(expected.out, "\"t_s\":1,\"filters\"")) << expected.out;
  EXPECT_TRUE(Has(expected.out, "\"bits_total\":" + std::to_string(FinalBits(expected.out)) +
                                    ",\"measured_fpp\""))
      << expected.out;
}

TEST(FilterEval, RejectsAnExpectedRateThatIsNotPositive) {
  FilterEvalOptions o;
  o.mode = "fbf";
  o.filter = "fingerprint";
  o.rate = 10;
  o.window_ms = 1000;
  o.expected_rate = 0;
  const EvalRun r = Eval(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--expected-rate")) << r.err;
}

}  // namespace
}  // namespace oncecount::cmd
