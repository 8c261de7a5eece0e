// The Gaussian Bloom filter's experiments (docs/gaussian-bloom-filter.md): the
// false-positive rate of random sets against the classic Bloom filter, as the
// paper's Figs. 3, 5 and 2(a) plot it, and the comparisons the paper leaves out —
// at equal memory, and as the constituents of a sliding window of filters.
//
// usage: gaussian_experiments OUT_DIR [SETS]
// Writes whitespace-separated .dat files for gnuplot into OUT_DIR.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "processor/filter/gaussian_bloom.h"

using namespace oncecount::filter;

namespace {

constexpr uint64_t kQueries = 1000;  // non-members per set, as in the paper's 100, x10

IdHash Member(uint64_t set, uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, 2 * set + 1)};
}
IdHash Stranger(uint64_t set, uint64_t q) {
  return IdHash{SeededMix(IdHash{q + (uint64_t{1} << 40)}, 2 * set + 1)};
}

struct Quartiles {
  double q1, median, q3;
};

Quartiles Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double p) { return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))]; };
  return {at(0.25), at(0.5), at(0.75)};
}

// A filter under test: insert, then query.
struct Probe {
  std::function<void(IdHash)> insert;
  std::function<bool(IdHash)> query;
};
using Factory = std::function<Probe(uint64_t seed)>;

Factory Gaussian(uint32_t cells, int k, CellCoding coding) {
  return [=](uint64_t seed) {
    auto f = std::make_shared<GaussianBloom>(GaussianBloom::Create(cells, k, coding, seed).value());
    return Probe{[f](IdHash h) { f->Insert(h); }, [f](IdHash h) { return f->MayContain(h); }};
  };
}

Factory Classic(uint32_t bits, int k) {
  return [=](uint64_t seed) {
    auto f = std::make_shared<ClassicBloom>(bits, k, seed);
    return Probe{[f](IdHash h) { f->Insert(h); }, [f](IdHash h) { return f->MayContain(h); }};
  };
}

// For n = 1..max_n: the false-positive rate's quartiles over `sets` random sets.
// One filter per set grows id by id; it is queried after each insert.
std::vector<Quartiles> Sweep(const Factory& make, int max_n, uint64_t sets) {
  std::vector<std::vector<double>> rates(max_n);
  for (uint64_t s = 0; s < sets; ++s) {
    Probe p = make(s);
    for (int n = 1; n <= max_n; ++n) {
      p.insert(Member(s, static_cast<uint64_t>(n)));
      uint64_t fp = 0;
      for (uint64_t q = 0; q < kQueries; ++q) fp += p.query(Stranger(s, q));
      rates[n - 1].push_back(static_cast<double>(fp) / kQueries);
    }
  }
  std::vector<Quartiles> out;
  for (auto& r : rates) out.push_back(Of(std::move(r)));
  return out;
}

void Write(const std::string& path, const std::vector<std::string>& names,
           const std::vector<std::vector<Quartiles>>& columns) {
  std::ofstream f(path);
  f << "# n";
  for (const auto& name : names) f << " " << name << "_q1 " << name << "_median " << name << "_q3";
  f << "\n";
  for (size_t n = 0; n < columns[0].size(); ++n) {
    f << n + 1;
    for (const auto& c : columns) f << " " << c[n].q1 << " " << c[n].median << " " << c[n].q3;
    f << "\n";
  }
  std::printf("wrote %s\n", path.c_str());
}

// A sliding window of `filters` constituents of `memory_bits` each: ids go into the
// newest, a query asks all of them, and every `per_refresh` ids the oldest is
// cleared and becomes the newest (the FBF's refresh, with the window's memory
// fixed). Returns the false-positive rate at steady state, over `sets` runs.
Quartiles Window(const Factory& make, int filters, uint64_t per_refresh, uint64_t sets) {
  std::vector<double> rates;
  for (uint64_t s = 0; s < sets; ++s) {
    std::deque<Probe> ring;
    for (int i = 0; i < filters; ++i) ring.push_back(make(s * 64 + static_cast<uint64_t>(i)));
    uint64_t next = 0;
    for (int refresh = 0; refresh < filters + 2; ++refresh) {
      ring.pop_front();
      ring.push_back(make(s * 64 + 32 + static_cast<uint64_t>(refresh)));
      for (uint64_t i = 0; i < per_refresh; ++i) ring.back().insert(Member(s, next++));
    }
    uint64_t fp = 0;
    for (uint64_t q = 0; q < kQueries; ++q) {
      const IdHash h = Stranger(s, q);
      fp += std::any_of(ring.begin(), ring.end(), [&](const Probe& p) { return p.query(h); });
    }
    rates.push_back(static_cast<double>(fp) / kQueries);
  }
  return Of(std::move(rates));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gaussian_experiments OUT_DIR [SETS]\n");
    return 2;
  }
  const std::string out = argv[1];
  const uint64_t sets = argc > 2 ? std::stoull(argv[2]) : 200;
  constexpr uint32_t m = 256;
  constexpr int kMaxN = 100;

  // Fig. 3: equal cell count, double cells, k = 3, 5, 10.
  for (const int k : {3, 5, 10}) {
    Write(out + "/fig3_k" + std::to_string(k) + ".dat", {"bloom", "gaussian"},
          {Sweep(Classic(m, k), kMaxN, sets),
           Sweep(Gaussian(m, k, CellCoding::kDouble), kMaxN, sets)});
  }
  // Fig. 5: 4-bit cells, k = 3, 4, 5.
  for (const int k : {3, 4, 5}) {
    Write(out + "/fig5_k" + std::to_string(k) + ".dat", {"bloom", "gaussian4"},
          {Sweep(Classic(m, k), kMaxN, sets),
           Sweep(Gaussian(m, k, CellCoding::kBits4), kMaxN, sets)});
  }
  // Fig. 2(a): double against 8-bit and 4-bit cells. At k = 3 the codes lose almost
  // nothing; wide signatures (k = 10: values near 1 beside the peaks) show the loss.
  for (const int k : {3, 10}) {
    Write(out + "/fig2a_k" + std::to_string(k) + ".dat", {"double", "bits8", "bits4"},
          {Sweep(Gaussian(m, k, CellCoding::kDouble), kMaxN, sets),
           Sweep(Gaussian(m, k, CellCoding::kBits8), kMaxN, sets),
           Sweep(Gaussian(m, k, CellCoding::kBits4), kMaxN, sets)});
  }
  // Equal memory: 256 cells of 4 (8) bits against a classic filter of 1024 (2048)
  // bits, with the same k and with the classic filter's best k for the final n.
  for (const int bits : {4, 8}) {
    const uint32_t classic_bits = m * static_cast<uint32_t>(bits);
    const auto coding = static_cast<CellCoding>(bits);
    for (const int k : {3, 5}) {
      Write(out + "/memory_b" + std::to_string(bits) + "_k" + std::to_string(k) + ".dat",
            {"gaussian", "bloom_same_cells", "bloom_same_memory"},
            {Sweep(Gaussian(m, k, coding), kMaxN, sets), Sweep(Classic(m, k), kMaxN, sets),
             Sweep(Classic(classic_bits, k), kMaxN, sets)});
    }
  }
  // A window of 4 constituents at equal memory (4-bit Gaussian cells against a
  // classic filter with 4x the cells), filled from 10% to 100% of the classic
  // filter's capacity at FPP 1% per constituent (n = bits * ln2^2 / ln(100)).
  {
    std::ofstream f(out + "/window_b4.dat");
    f << "# ids_per_constituent load gaussian_q1 gaussian_median gaussian_q3 bloom_q1 "
         "bloom_median bloom_q3 gaussian_bestk_q1 gaussian_bestk_median gaussian_bestk_q3 "
         "bestk\n";
    constexpr uint32_t cells = 2048;
    const uint32_t bloom_bits = cells * 4;
    const double capacity = bloom_bits * std::log(2) * std::log(2) / std::log(100.0);
    const int k = 7;  // the classic filter's best k at FPP 1%
    for (int load = 1; load <= 10; ++load) {
      const auto per = static_cast<uint64_t>(capacity * load / 10);
      const Quartiles g = Window(Gaussian(cells, k, CellCoding::kBits4), 4, per, sets / 4 + 1);
      const Quartiles b = Window(Classic(bloom_bits, k), 4, per, sets / 4 + 1);
      // The Gaussian filter's own best k: the classic optimum for its cell count.
      const int best_k = std::clamp(
          static_cast<int>(std::lround(std::log(2) * cells / static_cast<double>(per))), 1, 30);
      const Quartiles gb =
          Window(Gaussian(cells, best_k, CellCoding::kBits4), 4, per, sets / 4 + 1);
      f << per << " " << load / 10.0 << " " << g.q1 << " " << g.median << " " << g.q3 << " " << b.q1
        << " " << b.median << " " << b.q3 << " " << gb.q1 << " " << gb.median << " " << gb.q3 << " "
        << best_k << "\n";
    }
    std::printf("wrote %s/window_b4.dat\n", out.c_str());
  }
  return 0;
}
