#include "processor/cmd/filter_eval.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <queue>

#include "processor/base/enum_names.h"
#include "processor/cmd/rate_schedule.h"
#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/experiments/experiment_filters.h"
#include "processor/filter/experiments/gaussian_dedup.h"
#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

using filter::DedupFilter;
using filter::DedupMode;
using filter::IdHash;
using filter::Millis;

constexpr uint64_t kInsertStream = 0x1D5;
constexpr uint64_t kQueryStream = 0x9E7;

// filter-eval's --mode: the service's filters and the single Gaussian filter.
constexpr auto kEvalModes =
    base::Subset(filter::kDedupModeNames,
                 {DedupMode::kFbf, DedupMode::kBloom, DedupMode::kExact, DedupMode::kGaussian});

// Ids are drawn from two disjoint-in-practice 64-bit streams: inserted ids and
// never-inserted query ids.
IdHash StreamId(uint64_t seed, uint64_t stream, uint64_t index) {
  return IdHash{filter::SeededMix(IdHash{index}, seed * 1000003 + stream)};
}

template <typename E, size_t N>
base::Status ParseChoice(const char* flag, const std::string& text,
                         const std::array<base::EnumName<E>, N>& names, E& out) {
  const std::optional<E> value = base::ParseName(names, text);
  if (!value) {
    return base::UsageError(std::string(flag) + ": " + base::ExpectedOneOf(names, text));
  }
  out = *value;
  return {};
}

// The options that name a mode, a check, a constituent, a policy, a model or a kernel.
base::Status ParseChoices(const FilterEvalOptions& o, filter::DedupSpec& spec) {
  filter::ExperimentOverrides& x = spec.experiment;
  for (const base::Status& s :
       {ParseChoice("--mode", o.mode, kEvalModes, spec.mode),
        ParseChoice("--check", o.check, filter::kMembershipCheckNames, spec.check),
        ParseChoice("--filter", o.filter, filter::kConstituentNames, spec.constituent),
        ParseChoice("--policy", o.policy, filter::kResizePolicyNames, x.policy),
        ParseChoice("--model", o.model, filter::kConstituentModelNames, x.model),
        ParseChoice("--exp", o.exp, filter::kExpKindNames, x.exp)}) {
    if (!s.ok()) return s;
  }
  return {};
}

base::Status SetCellBits(const FilterEvalOptions& o, filter::DedupSpec& spec) {
  if (!o.cell_bits) return {};
  if (spec.mode != DedupMode::kGaussian && spec.constituent != filter::Constituent::kGaussian) {
    return base::UsageError("--cell-bits applies to --mode gaussian and --filter gaussian only");
  }
  if (*o.cell_bits != 4 && *o.cell_bits != 8 && *o.cell_bits != 64) {
    return base::UsageError("--cell-bits: expected 4, 8 or 64, got " +
                            std::to_string(*o.cell_bits));
  }
  spec.cell_bits = static_cast<uint32_t>(*o.cell_bits);
  return {};
}

// The shape is given outright (--bits, --hashes, and for fbf --past and
// --refresh-ms), or sized from the first rate, --window-ms and --target-fpp as the
// service sizes its filters.
base::Status SetShape(const FilterEvalOptions& o, filter::DedupSpec& spec) {
  filter::ExperimentOverrides& x = spec.experiment;
  spec.window = Millis{o.window_ms.value_or(0)};
  switch (spec.mode) {
    case DedupMode::kFbf:
      if (o.bits || o.hashes || o.past || o.refresh_ms) {
        if (!o.bits || !o.hashes || !o.past || !o.refresh_ms) {
          return base::UsageError(
              "--bits, --hashes, --past and --refresh-ms go together (or give none and let "
              "--rate, --window-ms and --target-fpp size the filter)");
        }
        x.fbf_shape = filter::FbfShape{*o.bits, *o.hashes, *o.past, Millis{*o.refresh_ms}};
      } else if (!o.window_ms) {
        return base::UsageError("--window-ms is required when the filter sizes itself");
      }
      x.max_filters = o.max_filters;
      if (o.refresh_step_ms) x.refresh_step = Millis{*o.refresh_step_ms};
      return {};
    case DedupMode::kBloom:
    case DedupMode::kGaussian:
      if (o.bits) {
        if (!o.hashes) return base::UsageError("--hashes is required with --bits");
        x.bloom_shape = filter::BloomShape{*o.bits, *o.hashes};
      } else if (!o.window_ms) {
        return base::UsageError("--window-ms or --bits is required for --mode " + o.mode);
      }
      return {};
    case DedupMode::kExact:
      if (!o.window_ms) return base::UsageError("--window-ms is required for --mode exact");
      return {};
    case DedupMode::kNone:
      break;
  }
  return {};
}

base::Result<std::unique_ptr<DedupFilter>> Build(const FilterEvalOptions& o, double first_rate) {
  filter::DedupSpec spec;
  spec.expected_rate = first_rate;
  spec.target_fpp = o.target_fpp;
  spec.adaptive = o.adaptive;
  spec.seed = o.seed;
  if (base::Status s = ParseChoices(o, spec); !s.ok()) return std::move(s).error();
  if (base::Status s = SetCellBits(o, spec); !s.ok()) return std::move(s).error();
  if (base::Status s = SetShape(o, spec); !s.ok()) return std::move(s).error();
  auto built = filter::MakeExperimentFilter(spec, Millis{0});
  if (!built) return std::move(built).error().Wrap(filter::ModeName(spec.mode));
  return built;
}

// The age at which an applied id is re-checked: the window the filter guarantees,
// or --window-ms for a filter that never forgets (0: no re-checks).
Millis RecheckWindow(const DedupFilter& f, const FilterEvalOptions& o) {
  const int64_t guaranteed = f.Summary().window_ms_guaranteed;
  return guaranteed >= 0 ? Millis{guaranteed} : Millis{o.window_ms.value_or(0)};
}

double MeasureFpp(const DedupFilter& f, uint64_t seed, uint64_t& next_query, uint64_t queries) {
  if (queries == 0) return 0;
  uint64_t positives = 0;
  for (uint64_t i = 0; i < queries; ++i) {
    positives += f.Contains(StreamId(seed, kQueryStream, next_query++)) ? 1 : 0;
  }
  return static_cast<double>(positives) / static_cast<double>(queries);
}

struct Tally {
  uint64_t inserted = 0;
  uint64_t duplicates = 0;
  uint64_t false_negatives = 0;
  uint64_t rechecked = 0;
  // Inside AdvanceTo and TestAndInsertBatch: what the service pays for a clock reading
  // and the ids tested at it (exact mode's expiry is in AdvanceTo).
  double op_ns = 0;
};

// The workload, one simulated millisecond per Tick: fresh ids at the scheduled rate;
// every applied id is re-checked when its age reaches the window the filter reported
// when it was inserted (read once per simulated second: it changes only at refreshes
// and adaptations).
class Simulation {
 public:
  Simulation(DedupFilter& f, const FilterEvalOptions& o, const RateSchedule& schedule)
      : f_(f), o_(o), schedule_(schedule), window_(RecheckWindow(f, o)), reported_(window_) {}

  void Tick(int64_t ms) {
    const Millis now{ms};
    carry_ += RateAt(ms) / 1000.0;
    const auto due = static_cast<uint64_t>(carry_);
    carry_ -= static_cast<double>(due);
    batch_.resize(due);
    verdicts_.resize(due);
    for (uint64_t i = 0; i < due; ++i) batch_[i] = StreamId(o_.seed, kInsertStream, next_id_ + i);
    // One timer around both calls, every simulated millisecond (AdvanceTo's expiry
    // runs in empty ones too); its own cost, about 40 ns a millisecond, is spread over
    // the millisecond's ids: 4 ns an id at 10,000 ids a second, more below that.
    const auto t0 = std::chrono::steady_clock::now();
    f_.AdvanceTo(now);
    if (due > 0) f_.TestAndInsertBatch(batch_, verdicts_);
    tally_.op_ns +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (window_.count() > 0 && ms % 1000 == 1) {
      const int64_t reported = f_.Summary().window_ms_guaranteed;
      if (reported > 0) reported_ = Millis{reported};
    }
    // After this millisecond's ids: they are fresh, so they can hide a false negative
    // only as a false positive would (at the target's rate).
    Recheck(now);
    if (due > 0) Count(now, due);
  }

  // Ids per second during simulated millisecond `ms`.
  double RateAt(int64_t ms) const { return schedule_.At(static_cast<double>(ms - 1) / 1000.0); }
  const Tally& tally() const { return tally_; }
  double MeasureFpp(uint64_t queries) { return cmd::MeasureFpp(f_, o_.seed, next_query_, queries); }

 private:
  // Applied ids whose age has reached their window must be found.
  void Recheck(Millis now) {
    while (!recheck_.empty() && recheck_.top().due <= now) {
      if (recheck_.top().due == now) {
        ++tally_.rechecked;
        if (!f_.Contains(StreamId(o_.seed, kInsertStream, recheck_.top().index))) {
          ++tally_.false_negatives;
        }
      }
      recheck_.pop();
    }
  }

  // Counts the verdicts of the ids Tick tested and schedules the recheck of the new.
  void Count(Millis now, uint64_t due) {
    for (uint64_t i = 0; i < due; ++i) {
      if (filter::IsDuplicate(verdicts_[i])) {
        ++tally_.duplicates;
      } else {
        ++tally_.inserted;
        if (window_.count() > 0) recheck_.push({now + reported_, next_id_ + i});
      }
    }
    next_id_ += due;
  }

  struct Applied {
    Millis due;
    uint64_t index;
    bool operator>(const Applied& other) const { return due > other.due; }
  };

  DedupFilter& f_;
  const FilterEvalOptions& o_;
  const RateSchedule& schedule_;
  const Millis window_;  // 0: no re-checks
  Millis reported_;
  std::priority_queue<Applied, std::vector<Applied>, std::greater<>> recheck_;
  std::vector<IdHash> batch_;
  std::vector<filter::Verdict> verdicts_;
  uint64_t next_id_ = 0;
  uint64_t next_query_ = 0;
  double carry_ = 0;
  Tally tally_;
};

base::Result<RateSchedule> ScheduleOf(const FilterEvalOptions& o) {
  if (!o.rate_schedule.empty()) return RateSchedule::Load(o.rate_schedule);
  if (!o.rate) return base::UsageError("give --rate or --rate-schedule");
  if (*o.rate < 0) return base::UsageError("--rate must not be negative");
  return RateSchedule::Constant(*o.rate);
}

void WriteTraceRow(json::JsonWriter& trace, int64_t ms, const filter::FilterSummary& s,
                   double measured_fpp, const Simulation& sim) {
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
      .Key("bits_total")
      .Uint(s.bits_total)
      .Key("measured_fpp")
      .Double(measured_fpp)
      .Key("inserted")
      .Uint(sim.tally().inserted)
      .Key("rate")
      .Double(sim.RateAt(ms))
      .EndObject();
}

void WriteOutcome(json::JsonWriter& j, const FilterEvalOptions& o, const Tally& t,
                  double measured_fpp) {
  const uint64_t ops = t.inserted + t.duplicates;
  // The membership check is the Bloom constituents' (fingerprint slices have none).
  const bool bloom_fbf = o.mode == "fbf" && o.filter != "fingerprint";
  j.Key("mode")
      .String(o.mode)
      .Key("filter")
      .String(o.mode == "fbf" ? o.filter : "")
      .Key("check")
      .String(bloom_fbf ? o.check : "")
      .Key("inserted")
      .Uint(t.inserted)
      .Key("duplicates_detected")
      .Uint(t.duplicates)
      .Key("false_negatives")
      .Uint(t.false_negatives)
      .Key("rechecked")
      .Uint(t.rechecked)
      .Key("false_positive_rate")
      .Double(measured_fpp)
      .Key("queries")
      .Uint(o.queries)
      .Key("ns_per_op")
      .Double(ops > 0 ? t.op_ns / static_cast<double>(ops) : 0.0);
}

void WriteSummary(json::JsonWriter& j, const filter::FilterSummary& s) {
  j.Key("estimated_fpp")
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
      .Uint(s.early_refreshes);
}

// The shape the filter was built with, in the terms of its kind.
void WriteShape(json::JsonWriter& j, const DedupFilter& f) {
  if (const auto* fbf = dynamic_cast<const filter::ForgetfulBloomFilter*>(&f)) {
    j.Key("bits_per_filter").Uint(fbf->config().bits_per_filter);
    j.Key("hashes").Int(fbf->config().hashes);
  }
  if (const auto* fbf = dynamic_cast<const filter::GaussianForgetfulFilter*>(&f)) {
    j.Key("filter").String("gaussian");
    j.Key("cells_per_filter").Uint(fbf->config().bits_per_filter);
    j.Key("cell_bits").Uint(fbf->config().cell_bits);
    j.Key("hashes").Int(fbf->config().hashes);
  }
  if (const auto* gaussian = dynamic_cast<const filter::GaussianDedup*>(&f)) {
    j.Key("cells").Uint(gaussian->filter().cells());
    j.Key("cell_bits").Int(gaussian->filter().cell_bits());
    j.Key("hashes").Int(gaussian->filter().hashes());
  }
}

}  // namespace

int RunFilterEval(const FilterEvalOptions& o, std::ostream& out, std::ostream& err) {
  auto schedule = ScheduleOf(o);
  if (schedule && o.duration_ms <= 0) schedule = base::UsageError("--duration-ms must be positive");
  if (schedule && o.expected_rate && !(*o.expected_rate > 0)) {
    schedule = base::UsageError("--expected-rate must be positive");
  }
  if (!schedule) {
    err << "filter-eval: " << schedule.error() << "\n";
    return base::ExitCodeFor(schedule.code());
  }
  auto built = Build(o, o.expected_rate.value_or(std::max(schedule->First(), 1.0)));
  if (!built) {
    err << "filter-eval: " << built.error() << "\n";
    return base::ExitCodeFor(built.code());
  }
  DedupFilter& f = **built;
  Simulation sim(f, o, *schedule);
  json::JsonWriter trace;
  trace.BeginArray();
  for (int64_t ms = 1; ms <= o.duration_ms; ++ms) {
    sim.Tick(ms);
    if (o.trace && ms % 1000 == 0) {
      WriteTraceRow(trace, ms, f.Summary(), sim.MeasureFpp(o.trace_queries), sim);
    }
  }
  trace.EndArray();

  const double measured = sim.MeasureFpp(o.queries);
  json::JsonWriter j;
  j.BeginObject();
  WriteOutcome(j, o, sim.tally(), measured);
  WriteSummary(j, f.Summary());
  j.Key("digest").String(f.Digest());
  WriteShape(j, f);
  if (o.trace) j.Key("trace").Raw(trace.str());
  j.EndObject();
  out << j.str() << "\n";
  return 0;
}

}  // namespace oncecount::cmd
