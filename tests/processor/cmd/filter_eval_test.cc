// `oncecount filter-eval` with Gaussian filters: the single filter (--mode gaussian)
// and Gaussian constituents of the FBF (--filter gaussian), in process.
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

}  // namespace
}  // namespace oncecount::cmd
