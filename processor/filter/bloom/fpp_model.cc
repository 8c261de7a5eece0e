#include "processor/filter/bloom/fpp_model.h"

#include <algorithm>
#include <cmath>

namespace oncecount::filter {
namespace {

// x^n for n >= 0 by squaring.
double IntegerPower(double x, int n) {
  double result = 1;
  for (; n > 0; n >>= 1, x *= x) {
    if (n & 1) result *= x;
  }
  return result;
}

// log(x!) for j >= 0. std::lgamma writes the global `signgam`, a data race when
// shards on several threads compute their models at once; lgamma_r does not.
double LogFactorial(double j) {
  int sign = 0;
  return ::lgamma_r(j + 1, &sign);
}

}  // namespace

double ClassicBloomFpp(double bits, int hashes, double inserted) {
  if (inserted <= 0 || bits <= 0) return 0.0;
  const double k = hashes;
  return std::pow(1.0 - std::exp(-k * inserted / bits), k);
}

double BlockedBloomFpp(double bits, int hashes, double inserted, uint32_t block_bits) {
  if (!(inserted > 0) || !(bits > 0)) return 0.0;  // NaN too
  const double blocks = std::max(1.0, std::ceil(bits / block_bits));
  const double lambda = inserted / blocks;  // mean ids per block
  const double k = hashes;
  // Past about 40 / k ids per bit, a block's bits are all set but for e^-40 of them
  // and a test is a false positive: stop there, so that the sum below (about
  // 24 sqrt(lambda) terms) stays small whatever the counts (a decoded state's
  // included) and lambda stays far from the int64 range.
  if (lambda * k / block_bits > 40) return 1.0;
  const double miss_per_bit = std::log1p(-1.0 / block_bits);  // log(1 - 1/B)
  // Sum P(j ids in the block) * (1 - (1 - 1/512)^{jk})^k over j, in log space for
  // the Poisson weights; the sum is cut where the remaining mass is negligible.
  const double sd = std::sqrt(lambda);
  const int64_t lo = static_cast<int64_t>(std::max(0.0, std::floor(lambda - 12 * sd - 10)));
  const int64_t hi = static_cast<int64_t>(std::ceil(lambda + 12 * sd + 20));
  // The Poisson weight and (1 - 1/B)^{jk} follow from one term to the next by a
  // product, so that a term costs a few multiplications rather than lgamma, exp
  // and pow (sizing runs this sum thousands of times).
  const double lo_d = static_cast<double>(lo);
  double weight = std::exp(lo_d * std::log(lambda) - lambda - LogFactorial(lo_d));
  double clear_fraction = std::exp(lo_d * k * miss_per_bit);  // (1 - 1/B)^{jk}
  const double clear_step = std::exp(k * miss_per_bit);
  double total = 0;
  for (int64_t j = lo; j <= hi; ++j) {
    total += weight * IntegerPower(1.0 - clear_fraction, hashes);
    weight *= lambda / static_cast<double>(j + 1);
    clear_fraction *= clear_step;
  }
  return std::clamp(total, 0.0, 1.0);
}

double ConstituentFpp(ConstituentModel model, double bits, int hashes, double inserted,
                      uint32_t block_bits) {
  return model == ConstituentModel::kClassic ? ClassicBloomFpp(bits, hashes, inserted)
                                             : BlockedBloomFpp(bits, hashes, inserted, block_bits);
}

double PaperCheckFpp(std::span<const double> p) {
  const size_t n = p.size();
  if (n == 0) return 0.0;
  if (n == 1) return p[0];
  // Equation 3: the future alone, every adjacent pair from (present, pastNewest) to
  // (second oldest, oldest), and the oldest alone; independent filters.
  // Sums of log1p keep precision where the result is far below 1e-10.
  double log_none = std::log1p(-p[0]);
  for (size_t i = 1; i + 1 < n; ++i) log_none += std::log1p(-p[i] * p[i + 1]);
  log_none += std::log1p(-p[n - 1]);
  return -std::expm1(log_none);
}

double PairsCheckFpp(std::span<const double> p) {
  double log_none = 0.0;
  for (size_t i = 0; i + 1 < p.size(); ++i) log_none += std::log1p(-p[i] * p[i + 1]);
  return -std::expm1(log_none);
}

}  // namespace oncecount::filter

namespace oncecount::filter {

double AnyFilterFpp(std::span<const double> p) {
  double log_none = 0.0;
  for (double x : p) log_none += std::log1p(-x);
  return -std::expm1(log_none);
}

double CheckFpp(MembershipCheck check, std::span<const double> p) {
  switch (check) {
    case MembershipCheck::kPaper:
      return PaperCheckFpp(p);
    case MembershipCheck::kPairs:
      return PairsCheckFpp(p);
    case MembershipCheck::kAny:
      return AnyFilterFpp(p);
  }
  return 1.0;
}

}  // namespace oncecount::filter
