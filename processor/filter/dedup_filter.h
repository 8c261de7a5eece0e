// DedupFilter: the interface every dedup mode implements (fbf, bloom, exact, none,
// and gaussian for evaluation).
//
// A shard feeds each event's IdHash to TestAndInsert: kNew means "apply it" (the id
// is now remembered), any other verdict means "drop it as a retry". Time enters only
// through AdvanceTo, which the owner calls with its injected clock's reading before
// a batch; refreshes, adaptive resizing and expiry happen there, never behind the
// owner's back, so a replica fed the same calls reaches bit-identical state.
//
// Thread-safety: a DedupFilter is owned by one thread. Summary/Serialize/Digest are
// const and may be called by that thread only (publish their results to others).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/enum_names.h"
#include "processor/base/result.h"
#include "processor/filter/constituent.h"
#include "processor/filter/id_hash.h"

namespace oncecount::filter {

using base::Millis;

// Filters clamp clock readings to this (2^61 ms, 73 million years), so that time
// arithmetic cannot overflow; periods and windows are at most kMaxPeriod.
inline constexpr Millis kMaxFilterTime{int64_t{1} << 61};
inline constexpr Millis kMaxPeriod{int64_t{1'000'000'000'000}};  // ~31.7 years
// Counts of ids a decoded state may hold: no filter reaches 2^62 (a count near 2^64
// would wrap at the next insert).
inline constexpr uint64_t kMaxFilterCount = uint64_t{1} << 62;
// The largest memory bound a filter may have (dedup.max_filter_mib's most, 16 GiB).
inline constexpr uint64_t kMaxMemoryLimitBytes = uint64_t{16} << 30;

// kGaussian (one Gaussian Bloom filter that never forgets) is filter-eval's
// `--mode gaussian`, an experiment (processor/filter/experiments/); the service's
// modes are the other four.
enum class DedupMode : uint8_t { kNone = 0, kBloom = 1, kExact = 2, kFbf = 3, kGaussian = 4 };

inline constexpr std::array<base::EnumName<DedupMode>, 5> kDedupModeNames = {{
    {DedupMode::kFbf, "fbf"},
    {DedupMode::kBloom, "bloom"},
    {DedupMode::kExact, "exact"},
    {DedupMode::kNone, "none"},
    {DedupMode::kGaussian, "gaussian"},
}};

enum class Verdict : uint8_t {
  kNew = 0,                // not seen: apply it
  kDuplicate = 1,          // seen: drop it
  kDuplicateNearEdge = 2,  // seen, but only the oldest filters still knew it
};

inline bool IsDuplicate(Verdict v) {
  return v != Verdict::kNew;
}

// What one constituent filter looks like, for statistics.
struct ConstituentSummary {
  uint64_t inserted = 0;
  double fill = 0;           // fraction of bits set
  double estimated_fpp = 0;  // Equation 1 with the cache-blocking correction
};

// A point-in-time description of a filter, cheap enough to take once per second.
struct FilterSummary {
  DedupMode mode = DedupMode::kNone;
  std::optional<Constituent> constituent;  // fbf: what its ring is made of
  uint64_t inserted = 0;                   // ids remembered since creation
  uint64_t duplicates = 0;                 // TestAndInsert verdicts other than kNew
  uint64_t near_edge_duplicates = 0;       // kDuplicateNearEdge verdicts
  double estimated_fpp = 0;                // model, constituent filters as built (blocked)
  double estimated_fpp_eq1 = 0;            // the paper's model (Equation 1 per filter)
  uint64_t bits_total = 0;                 // memory of the filter state, in bits
  uint32_t filters = 0;                    // constituent filters (1 for bloom, 0 otherwise)
  int64_t refresh_ms = 0;                  // 0 where the mode never refreshes
  // Every id inserted in this much of the filter clock's past is held; -1: always.
  // Below window_ms_configured while the memory bound has dropped ids of the window.
  int64_t window_ms_guaranteed = 0;
  int64_t window_ms_configured = 0;  // the window the filter was built for; -1: forever
  uint64_t memory_limit_bytes = 0;   // 0: no bound beyond the mode's own
  uint64_t forgotten_early = 0;      // ids dropped at the memory bound before their window
  uint64_t early_refreshes = 0;      // fbf: refreshes forced by a full future (load > sizing)
  std::vector<ConstituentSummary> constituents;  // future first; empty unless fbf

  // The memory bound has dropped ids of the window: the filter holds less than it was
  // built for (SPEC §2.1).
  bool HoldsLessThanItsWindow() const {
    return window_ms_guaranteed >= 0 && window_ms_guaranteed < window_ms_configured;
  }
  // A filter that grows with its load (fbf, exact) without a memory bound: the
  // experiments', or one decoded from a state written before filters had a bound
  // that held more than the bound it would have taken (DecodeLimits).
  bool GrowsWithoutABound() const {
    return memory_limit_bytes == 0 && (mode == DedupMode::kFbf || mode == DedupMode::kExact);
  }
};

class DedupFilter {
 public:
  virtual ~DedupFilter() = default;

  virtual DedupMode mode() const = 0;

  // Moves the filter's clock forward to `now` (never backwards: an earlier time is
  // ignored; a later one is clamped to kMaxFilterTime). Runs every refresh and
  // resizing step that falls due.
  virtual void AdvanceTo(Millis now) = 0;

  // Membership query only; remembers nothing.
  virtual bool Contains(IdHash hash) const = 0;

  virtual Verdict TestAndInsert(IdHash hash) = 0;

  // Same result as calling TestAndInsert on each hash in order; implementations
  // prefetch ahead to hide memory latency.
  virtual void TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts);

  virtual FilterSummary Summary() const = 0;

  // Appends the versioned, checksummed state (see state_codec.h).
  virtual void Serialize(std::string& out) const = 0;

  // A hash of the serialized state, as 16 hex digits: equal digests mean
  // bit-identical filters.
  std::string Digest() const;
};

// A filter a factory created, owned through the interface (or its error).
template <class Filter>
base::Result<std::unique_ptr<DedupFilter>> OwnedFilter(base::Result<Filter> created) {
  if (!created) return created.error();
  return std::unique_ptr<DedupFilter>(new Filter(std::move(created).value()));
}

inline const char* ModeName(DedupMode mode) {
  return base::NameOf(kDedupModeNames, mode);
}

}  // namespace oncecount::filter
