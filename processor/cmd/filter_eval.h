// `oncecount filter-eval`: runs one dedup filter on a simulated clock and prints
// one JSON object (SPEC §3). Used by the paper reproduction and the benchmarks.
//
// Workload: fresh, unique ids at the scheduled rate, one simulated millisecond at
// a time; every applied id is re-checked (query only) when its age reaches the
// guaranteed window, the hardest moment, and a miss there is a false negative; at
// the end (and once per simulated second with --trace) ids never inserted are
// queried to measure the false-positive rate.
//
// Thread-safety: runs on the calling thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace oncecount::cmd {

struct FilterEvalOptions {
  std::string mode = "fbf";
  std::optional<uint64_t> bits;
  std::optional<int> hashes;
  std::optional<uint32_t> past;
  std::optional<int64_t> refresh_ms;
  std::string check = "pairs";
  std::optional<double> rate;
  std::string rate_schedule;  // CSV file "second,rate"
  int64_t duration_ms = 10000;
  uint64_t queries = 200000;
  bool adaptive = false;
  double target_fpp = 1e-6;
  std::optional<int64_t> window_ms;
  std::optional<double> expected_rate;  // sizing; default: the schedule's first rate
  uint64_t seed = 1;
  bool trace = false;
  uint64_t trace_queries = 20000;  // per simulated second
  std::optional<int64_t> refresh_step_ms;
  uint32_t max_filters = 64;
  std::string model = "blocked";   // the model adaptation follows: blocked | classic
  std::string policy = "guarded";  // resizing decisions: guarded | paper (Algorithm 3)
  std::optional<int> cell_bits;    // gaussian cells and constituents: 4, 8, 64 (default 8)
  std::string filter = "bloom";  // fbf constituents: bloom | gaussian | fingerprint (dedup.filter)
  std::string exp = "fast";      // gaussian kernels: fast (Schraudolph) | exact (std::exp)
};

// Returns the process exit code: 0 ok, 2 bad options (message on `err`).
int RunFilterEval(const FilterEvalOptions& options, std::ostream& out, std::ostream& err);

}  // namespace oncecount::cmd
