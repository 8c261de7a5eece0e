#include "processor/cmd/filter_eval.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <queue>
#include <sstream>

#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/forgetful_bloom_filter.h"
#include "processor/filter/gaussian_dedup.h"
#include "processor/filter/plain_bloom_dedup.h"
#include "processor/filter/sizing.h"
#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

using filter::DedupFilter;
using filter::IdHash;
using filter::Millis;

constexpr uint64_t kInsertStream = 0x1D5;
constexpr uint64_t kQueryStream = 0x9E7;

// Ids are drawn from two disjoint-in-practice 64-bit streams: inserted ids and
// never-inserted query ids.
IdHash StreamId(uint64_t seed, uint64_t stream, uint64_t index) {
  return IdHash{filter::SeededMix(IdHash{index}, seed * 1000003 + stream)};
}

// Rate schedule: piecewise constant, `second,rate` rows sorted by second.
class RateSchedule {
 public:
  static base::Result<RateSchedule> Load(const std::string& path) {
    std::ifstream in(path);
    if (!in) return base::UsageError("--rate-schedule: cannot open " + path);
    RateSchedule s;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream row(line);
      double second = 0, rate = 0;
      char comma = 0;
      if (!(row >> second >> comma >> rate) || comma != ',') {
        if (number == 1) continue;  // a header row
        return base::UsageError("--rate-schedule: line " + std::to_string(number) +
                                " is not `second,rate`: " + line);
      }
      if (rate < 0 || second < 0 || (!s.rows_.empty() && second <= s.rows_.back().first)) {
        return base::UsageError("--rate-schedule: line " + std::to_string(number) +
                                " needs a non-negative rate and increasing seconds");
      }
      s.rows_.emplace_back(second, rate);
    }
    if (s.rows_.empty()) return base::UsageError("--rate-schedule: " + path + " has no rows");
    return s;
  }
  static RateSchedule Constant(double rate) {
    RateSchedule s;
    s.rows_.emplace_back(0, rate);
    return s;
  }
  double At(double second) const {
    double rate = 0;
    for (const auto& [s, r] : rows_) {
      if (s > second) break;
      rate = r;
    }
    return rate;
  }
  double First() const { return rows_.front().second; }

 private:
  std::vector<std::pair<double, double>> rows_;
};

struct Built {
  std::unique_ptr<DedupFilter> filter;
  Millis window{0};  // re-check age; 0 = no re-check
};

base::Result<Built> Build(const FilterEvalOptions& o, double first_rate) {
  const Millis start{0};
  const int cell_bits = o.cell_bits.value_or(8);
  if (cell_bits != 4 && cell_bits != 8 && cell_bits != 64) {
    return base::UsageError("--cell-bits: expected 4, 8 or 64, got " + std::to_string(cell_bits));
  }
  if (o.exp != "fast" && o.exp != "exact") {
    return base::UsageError("--exp: expected fast or exact, got " + o.exp);
  }
  const filter::ExpKind exp = o.exp == "fast" ? filter::ExpKind::kFast : filter::ExpKind::kExact;
  if (o.filter != "bloom" && o.filter != "gaussian") {
    return base::UsageError("--filter: expected bloom or gaussian, got " + o.filter);
  }
  if (o.cell_bits && o.mode != "gaussian" && o.filter != "gaussian") {
    return base::UsageError("--cell-bits applies to --mode gaussian and --filter gaussian only");
  }
  if (o.mode == "fbf") {
    filter::MembershipCheck check;
    if (o.check == "pairs") {
      check = filter::MembershipCheck::kPairs;
    } else if (o.check == "paper") {
      check = filter::MembershipCheck::kPaper;
    } else if (o.check == "any") {
      check = filter::MembershipCheck::kAny;
    } else {
      return base::UsageError("--check: expected paper, pairs or any, got " + o.check);
    }
    filter::FbfConfig config;
    const bool explicit_shape = o.bits || o.hashes || o.past || o.refresh_ms;
    if (explicit_shape) {
      if (!o.bits || !o.hashes || !o.past || !o.refresh_ms) {
        return base::UsageError(
            "--bits, --hashes, --past and --refresh-ms go together (or give none and let "
            "--rate, --window-ms and --target-fpp size the filter)");
      }
      config.bits_per_filter = *o.bits;
      config.hashes = *o.hashes;
      config.past_filters = *o.past;
      config.refresh = Millis{*o.refresh_ms};
      config.check = check;
      config.window = Millis{o.window_ms.value_or(0)};
      config.target_fpp = o.target_fpp;
    } else {
      if (!o.window_ms)
        return base::UsageError("--window-ms is required when the filter sizes itself");
      auto sized = filter::SizeFbf({first_rate, Millis{*o.window_ms}, o.target_fpp, check});
      if (!sized) return base::UsageError("sizing: " + sized.message());
      config = sized.value();
    }
    config.adaptive = o.adaptive;
    config.seed = o.seed;
    config.max_filters = o.max_filters;
    // A sized filter refreshes early as the service's does, for its own max_filters.
    if (!explicit_shape) config.slice_capacity = filter::SliceCapacity(config);
    if (o.refresh_step_ms) config.refresh_step = Millis{*o.refresh_step_ms};
    if (o.policy == "paper") {
      config.policy = filter::ResizePolicy::kPaper;
    } else if (o.policy != "guarded") {
      return base::UsageError("--policy: expected guarded or paper, got " + o.policy);
    }
    if (o.model == "classic") {
      config.model = filter::ConstituentModel::kClassic;
    } else if (o.model != "blocked") {
      return base::UsageError("--model: expected blocked or classic, got " + o.model);
    }
    if (o.filter == "gaussian") {
      // --bits counts cells, as for --mode gaussian.
      config.cell_bits = static_cast<uint32_t>(cell_bits);
      config.exp = exp;
      auto gaussian = filter::GaussianForgetfulFilter::Create(config, start);
      if (!gaussian) return base::UsageError("fbf: " + gaussian.message());
      const Millis window = gaussian->window();
      return Built{std::make_unique<filter::GaussianForgetfulFilter>(std::move(gaussian).value()),
                   window};
    }
    auto fbf = filter::ForgetfulBloomFilter::Create(config, start);
    if (!fbf) return base::UsageError("fbf: " + fbf.message());
    const Millis window = fbf->window();
    return Built{std::make_unique<filter::ForgetfulBloomFilter>(std::move(fbf).value()), window};
  }
  if (o.mode == "bloom" || o.mode == "gaussian") {
    uint64_t bits = 0;
    int hashes = 0;
    if (o.bits) {
      if (!o.hashes) return base::UsageError("--hashes is required with --bits");
      bits = *o.bits;
      hashes = *o.hashes;
    } else {
      if (!o.window_ms) {
        return base::UsageError("--window-ms or --bits is required for --mode " + o.mode);
      }
      auto size =
          filter::SizeBloom(first_rate * static_cast<double>(*o.window_ms) / 1000.0, o.target_fpp);
      if (!size) return base::UsageError("sizing: " + size.message());
      bits = size->bits;
      hashes = size->hashes;
    }
    if (o.mode == "gaussian") {
      auto gaussian = filter::GaussianDedup::Create({bits, hashes, cell_bits, exp, o.seed});
      if (!gaussian) return base::UsageError("gaussian: " + gaussian.message());
      return Built{std::make_unique<filter::GaussianDedup>(std::move(gaussian).value()),
                   Millis{o.window_ms.value_or(0)}};
    }
    auto bloom = filter::PlainBloomDedup::Create(bits, hashes, o.seed);
    if (!bloom) return base::UsageError("bloom: " + bloom.message());
    return Built{std::make_unique<filter::PlainBloomDedup>(std::move(bloom).value()),
                 Millis{o.window_ms.value_or(0)}};
  }
  if (o.mode == "exact") {
    if (!o.window_ms) return base::UsageError("--window-ms is required for --mode exact");
    const Millis window{*o.window_ms};
    auto exact = filter::ExactWindowDedup::Create(
        window, static_cast<uint64_t>(first_rate * static_cast<double>(window.count()) / 1000.0),
        start);
    if (!exact) return base::UsageError("--window-ms: " + exact.message());
    return Built{std::make_unique<filter::ExactWindowDedup>(std::move(exact).value()), window};
  }
  return base::UsageError("--mode: expected fbf, bloom, exact or gaussian, got " + o.mode);
}

double MeasureFpp(const DedupFilter& f, uint64_t seed, uint64_t& next_query, uint64_t queries) {
  if (queries == 0) return 0;
  uint64_t positives = 0;
  for (uint64_t i = 0; i < queries; ++i) {
    positives += f.Contains(StreamId(seed, kQueryStream, next_query++)) ? 1 : 0;
  }
  return static_cast<double>(positives) / static_cast<double>(queries);
}

}  // namespace

int RunFilterEval(const FilterEvalOptions& o, std::ostream& out, std::ostream& err) {
  RateSchedule schedule = RateSchedule::Constant(0);
  if (!o.rate_schedule.empty()) {
    auto loaded = RateSchedule::Load(o.rate_schedule);
    if (!loaded) {
      err << "filter-eval: " << loaded.error() << "\n";
      return base::ExitCodeFor(loaded.code());
    }
    schedule = std::move(loaded).value();
  } else if (o.rate) {
    if (*o.rate < 0) {
      err << "filter-eval: --rate must not be negative\n";
      return 2;
    }
    schedule = RateSchedule::Constant(*o.rate);
  } else {
    err << "filter-eval: give --rate or --rate-schedule\n";
    return 2;
  }
  if (o.duration_ms <= 0) {
    err << "filter-eval: --duration-ms must be positive\n";
    return 2;
  }
  auto built_or = Build(o, std::max(schedule.First(), 1.0));
  if (!built_or) {
    err << "filter-eval: " << built_or.error() << "\n";
    return base::ExitCodeFor(built_or.code());
  }
  Built built = std::move(built_or).value();
  DedupFilter& f = *built.filter;

  // Every applied id is re-checked when its age reaches the window the filter
  // reported when it was inserted (read once per simulated second: it changes only
  // at refreshes and adaptations).
  struct Applied {
    Millis due;
    uint64_t index;
    bool operator>(const Applied& other) const { return due > other.due; }
  };
  std::priority_queue<Applied, std::vector<Applied>, std::greater<>> recheck;
  Millis reported_window = built.window;
  std::vector<IdHash> batch;
  std::vector<filter::Verdict> verdicts;
  uint64_t next_id = 0, next_query = 0, inserted = 0, duplicates = 0, false_negatives = 0,
           rechecked = 0;
  double carry = 0, op_ns = 0;
  json::JsonWriter trace;
  trace.BeginArray();

  for (int64_t ms = 1; ms <= o.duration_ms; ++ms) {
    const Millis now{ms};
    f.AdvanceTo(now);
    if (built.window.count() > 0 && ms % 1000 == 1) {
      const int64_t reported = f.Summary().window_ms_guaranteed;
      if (reported > 0) reported_window = Millis{reported};
    }
    // Re-check applied ids whose age has reached their window: they must be found.
    while (!recheck.empty() && recheck.top().due <= now) {
      if (recheck.top().due == now) {
        ++rechecked;
        if (!f.Contains(StreamId(o.seed, kInsertStream, recheck.top().index))) ++false_negatives;
      }
      recheck.pop();
    }
    carry += schedule.At(static_cast<double>(ms - 1) / 1000.0) / 1000.0;
    const auto due = static_cast<uint64_t>(carry);
    carry -= static_cast<double>(due);
    if (due > 0) {
      batch.resize(due);
      verdicts.resize(due);
      for (uint64_t i = 0; i < due; ++i) batch[i] = StreamId(o.seed, kInsertStream, next_id + i);
      const auto t0 = std::chrono::steady_clock::now();
      f.TestAndInsertBatch(batch, verdicts);
      op_ns +=
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      for (uint64_t i = 0; i < due; ++i) {
        if (filter::IsDuplicate(verdicts[i])) {
          ++duplicates;
        } else {
          ++inserted;
          if (built.window.count() > 0) recheck.push({now + reported_window, next_id + i});
        }
      }
      next_id += due;
    }
    if (o.trace && ms % 1000 == 0) {
      const filter::FilterSummary s = f.Summary();
      trace.BeginObject()
          .Key("t_s")
          .Int(ms / 1000)
          .Key("filters")
          .Uint(s.filters)
          .Key("refresh_ms")
          .Int(s.refresh_ms)
          .Key("estimated_fpp")
          .Double(s.estimated_fpp)
          .Key("estimated_fpp_eq1")
          .Double(s.estimated_fpp_eq1)
          .Key("measured_fpp")
          .Double(MeasureFpp(f, o.seed, next_query, o.trace_queries))
          .Key("inserted")
          .Uint(inserted)
          .Key("rate")
          .Double(schedule.At(static_cast<double>(ms - 1) / 1000.0))
          .EndObject();
    }
  }
  trace.EndArray();

  const filter::FilterSummary s = f.Summary();
  const double measured = MeasureFpp(f, o.seed, next_query, o.queries);
  const uint64_t ops = inserted + duplicates;
  json::JsonWriter j;
  j.BeginObject()
      .Key("mode")
      .String(o.mode)
      .Key("check")
      .String(o.mode == "fbf" ? o.check : "")
      .Key("inserted")
      .Uint(inserted)
      .Key("duplicates_detected")
      .Uint(duplicates)
      .Key("false_negatives")
      .Uint(false_negatives)
      .Key("rechecked")
      .Uint(rechecked)
      .Key("false_positive_rate")
      .Double(measured)
      .Key("queries")
      .Uint(o.queries)
      .Key("estimated_fpp")
      .Double(s.estimated_fpp)
      .Key("estimated_fpp_eq1")
      .Double(s.estimated_fpp_eq1)
      .Key("bits_total")
      .Uint(s.bits_total)
      .Key("filters")
      .Uint(s.filters)
      .Key("refresh_ms")
      .Int(s.refresh_ms)
      .Key("window_ms_guaranteed");
  // A filter that never forgets (bloom) has no window: null, not a number.
  if (s.window_ms_guaranteed < 0) {
    j.Null();
  } else {
    j.Int(s.window_ms_guaranteed);
  }
  j.Key("near_edge_duplicates")
      .Uint(s.near_edge_duplicates)
      .Key("early_refreshes")
      .Uint(s.early_refreshes)
      .Key("ns_per_op")
      .Double(ops > 0 ? op_ns / static_cast<double>(ops) : 0.0)
      .Key("digest")
      .String(f.Digest());
  if (auto* fbf = dynamic_cast<filter::ForgetfulBloomFilter*>(&f)) {
    j.Key("bits_per_filter")
        .Uint(fbf->config().bits_per_filter)
        .Key("hashes")
        .Int(fbf->config().hashes);
  }
  if (auto* fbf = dynamic_cast<filter::GaussianForgetfulFilter*>(&f)) {
    j.Key("filter")
        .String("gaussian")
        .Key("cells_per_filter")
        .Uint(fbf->config().bits_per_filter)
        .Key("cell_bits")
        .Uint(fbf->config().cell_bits)
        .Key("hashes")
        .Int(fbf->config().hashes);
  }
  if (auto* gaussian = dynamic_cast<filter::GaussianDedup*>(&f)) {
    j.Key("cells")
        .Uint(gaussian->filter().cells())
        .Key("cell_bits")
        .Int(gaussian->filter().cell_bits())
        .Key("hashes")
        .Int(gaussian->filter().hashes());
  }
  if (o.trace) j.Key("trace").Raw(trace.str());
  j.EndObject();
  out << j.str() << "\n";
  return 0;
}

}  // namespace oncecount::cmd
