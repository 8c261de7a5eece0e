// False-positive rates of the Gaussian Bloom filter against classic Bloom filters
// on small random sets, the experiments of Werner & Schoenfeld's Figs. 2(a), 3 and
// 5, plus the comparison the paper leaves out: a classic filter with the same memory.
//
// For each of --trials independent trials (a fresh filter seed and fresh random ids),
// ids are inserted one at a time up to --max-n; after each insert --queries ids never
// inserted are tested against
//   gaussian   the Gaussian filter, m cells of --cell-bits bits (64: double)
//   bloom      the classic filter over m bits with the same positions
//              (the paper's "equivalent Bloom filter", Definition 3)
//   bloom_mem  a classic filter over B*m bits (the Gaussian filter's memory), same k
// Output, one row per n: n, then median, first quartile, third quartile and mean of
// the per-trial FPR for each of the three filters. Lemma 2 is checked on every
// query (a Gaussian positive that the same-cell classic filter rejects aborts).
//
// Run: build/tests/benchmarks/gaussian_fpr --cells 256 --hashes 3 --cell-bits 64
// (scripts/reproduce-gaussian runs it for every figure).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "processor/filter/bloom/gaussian_bloom.h"
#include "processor/filter/experiments/classic_bloom.h"

namespace {

using oncecount::filter::ClassicBloom;
using oncecount::filter::ExpKind;
using oncecount::filter::GaussianBloom;
using oncecount::filter::IdHash;

struct Options {
  uint64_t cells = 256;
  int hashes = 3;
  int cell_bits = 64;
  int max_n = 100;
  int trials = 1000;
  int queries = 1000;
  ExpKind exp = ExpKind::kFast;
  uint64_t seed = 1;
};

[[noreturn]] void Usage(const char* message) {
  std::fprintf(stderr,
               "gaussian_fpr: %s\nusage: gaussian_fpr [--cells M] [--hashes K] [--cell-bits "
               "4|8|64] [--max-n N] [--trials T] [--queries Q] [--exp fast|exact] [--seed S]\n",
               message);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--cells") {
      o.cells = std::strtoull(v, nullptr, 10);
    } else if (flag == "--hashes") {
      o.hashes = std::atoi(v);
    } else if (flag == "--cell-bits") {
      o.cell_bits = std::atoi(v);
    } else if (flag == "--max-n") {
      o.max_n = std::atoi(v);
    } else if (flag == "--trials") {
      o.trials = std::atoi(v);
    } else if (flag == "--queries") {
      o.queries = std::atoi(v);
    } else if (flag == "--seed") {
      o.seed = std::strtoull(v, nullptr, 10);
    } else if (flag == "--exp") {
      if (std::strcmp(v, "fast") != 0 && std::strcmp(v, "exact") != 0)
        Usage("--exp: fast or exact");
      o.exp = std::strcmp(v, "fast") == 0 ? ExpKind::kFast : ExpKind::kExact;
    } else {
      Usage(("unknown flag " + flag).c_str());
    }
  }
  if (o.max_n < 1 || o.trials < 1 || o.queries < 1) Usage("--max-n, --trials, --queries >= 1");
  return o;
}

// Median and quartiles by linear interpolation between order statistics.
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  // fpr[filter][n - 1][trial]
  std::vector<std::vector<std::vector<double>>> fpr(
      3, std::vector<std::vector<double>>(static_cast<size_t>(o.max_n)));
  std::mt19937_64 rng(o.seed);
  const uint64_t mem_bits = o.cells * static_cast<uint64_t>(o.cell_bits);
  for (int t = 0; t < o.trials; ++t) {
    const uint64_t seed = rng();
    auto g = GaussianBloom::Create({o.cells, o.hashes, o.cell_bits, o.exp, seed});
    auto b = ClassicBloom::Create(o.cells, o.hashes, seed);
    auto bm = ClassicBloom::Create(mem_bits, o.hashes, seed);
    if (!g || !b || !bm)
      Usage(!g ? g.message().c_str() : !b ? b.message().c_str() : bm.message().c_str());
    for (int n = 1; n <= o.max_n; ++n) {
      const IdHash id{rng()};
      g->Insert(id);
      b->Insert(id);
      bm->Insert(id);
      int hits[3] = {0, 0, 0};
      for (int q = 0; q < o.queries; ++q) {
        // 64-bit random ids: a query equal to an inserted id has probability ~2^-57.
        const IdHash query{rng()};
        const bool gp = g->MayContain(query);
        const bool bp = b->MayContain(query);
        if (gp && !bp) {
          std::fprintf(stderr, "gaussian_fpr: Lemma 2 violated (trial %d, n %d)\n", t, n);
          return 1;
        }
        hits[0] += gp;
        hits[1] += bp;
        hits[2] += bm->MayContain(query);
      }
      for (int f = 0; f < 3; ++f) {
        fpr[static_cast<size_t>(f)][static_cast<size_t>(n - 1)].push_back(
            static_cast<double>(hits[f]) / o.queries);
      }
    }
  }
  std::printf(
      "# gaussian_fpr --cells %llu --hashes %d --cell-bits %d --max-n %d --trials %d "
      "--queries %d --exp %s --seed %llu\n",
      static_cast<unsigned long long>(o.cells), o.hashes, o.cell_bits, o.max_n, o.trials, o.queries,
      o.exp == ExpKind::kFast ? "fast" : "exact", static_cast<unsigned long long>(o.seed));
  std::printf("# n");
  for (const char* name : {"gaussian", "bloom", "bloom_mem"}) {
    std::printf(" %s_median %s_q1 %s_q3 %s_mean", name, name, name, name);
  }
  std::printf("\n");
  for (int n = 1; n <= o.max_n; ++n) {
    std::printf("%d", n);
    for (int f = 0; f < 3; ++f) {
      const auto& v = fpr[static_cast<size_t>(f)][static_cast<size_t>(n - 1)];
      std::printf(" %.6g %.6g %.6g %.6g", Quantile(v, 0.5), Quantile(v, 0.25), Quantile(v, 0.75),
                  Mean(v));
    }
    std::printf("\n");
  }
  return 0;
}
