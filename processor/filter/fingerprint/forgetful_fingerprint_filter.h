// BasicFingerprintFilter: the forgetful filter with fingerprint slices — a ring
// of slices that slides over time, each slice a cuckoo table of short fingerprints
// of the ids inserted during one refresh period.
//
// An id goes into the newest slice (the present) only, and a lookup asks every live
// slice. The slices of one size share a FingerprintPlane, which keeps one id's two
// buckets of all its slices in two cache lines: a lookup reads two lines, however
// many slices hold the window. Buckets are 64-bit (eight slices a plane) or 128-bit
// (four): the sizing picks the one that holds the window in less memory at the
// target (fingerprint_sizing.h); Word is the bucket's type. Its false-positive rate is linear in
// the fingerprints held, without the variance of Bloom blocks: a fresh id matches a slice holding
// `ids` fingerprints in `groups` groups with probability 2 * ids / groups /
// (2^bits - 1), so the estimate is exact, not a model.
//
// Window. A slice is dropped only when its newest id is older than the window
// (newest < now - window), so an id is kept at least `window` after its insert in
// every state, whatever the load did. With window_slices = N and refresh period
// t = window / N, N + 1 slices are live at the worst point of a steady load: the
// sizing takes N + 1 = the slots of one plane.
//
// Load. A slice is sized to hold one period at the expected rate at max_load of its
// fields. Each slice adds its rate to the estimate, and that share is fixed once the
// slice is no longer the present: what adaptation controls is the size of the slices
// to come, so that the estimate stays within the target once the slices held now have
// left, and within it before each of them leaves (GroupsForTheBudget). It acts at two
// moments:
//  - the present reaches its capacity before 95% of its period has passed: the load
//    outgrew the sizing. If the rest of the period fits in up to 10% more (kicks still
//    short, the estimate within the target) it fills on; otherwise the slices to come
//    grow for the present's pace, taken to rise once more as it rose over the period
//    before, and a new present of that size follows at once;
//  - a regular refresh, with the slice that held the whole period: the size grows when
//    that pace, extrapolated alike, would take the estimate past the target, and
//    shrinks (never below the first slice's) to what holds the pace 25% higher when
//    that is at most three quarters of the size. A slice pushed early holds a
//    period's tail and does not count as a pace.
// Sizes are any number of groups from the first slice's up, a step at least a
// sixteenth. Otherwise a full present fills further (cuckoo hashing has room above
// max_load, MaxLoadFor) rather than pushing a new slice early: an early slice is one
// more live slice for a whole window. A cuckoo insert that finds no place pushes a new
// present of the same size and puts the fingerprint left in hand there: nothing is
// lost.
//
// Memory. Slices of one size share a plane, which is only as wide as the slices it
// holds: a slice of a new size opens a plane one slot wide, the next ones widen it, and
// a plane not of the size to come is compacted when slices leave it (FingerprintPlane::
// Widen, Compact). So while the load moves from one size to another, the old size's
// memory goes a slot a period as the new one's comes, and a plane goes with its last
// slice.
//
// Bounds. With a memory bound (the service always sets one), at most max_slices slices
// are live and the planes take at most memory_limit_bytes together. Sizes to come stay
// within FittingGroups; a push that would pass either bound drops the oldest slices,
// even ones that still hold ids of the window, until it fits; what they held is
// recorded (early_forgetting.h) and the guaranteed window reports what the ring really
// holds. So every state the filter reaches is within both bounds, and the decoder can
// refuse any state beyond them.
//
// Determinism: slices, kicks and sizes follow from the calls only, so replicas fed
// the same calls hold bit-identical state.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/early_forgetting.h"
#include "processor/filter/fingerprint/fingerprint_fields.h"
#include "processor/filter/fingerprint/fingerprint_plane.h"

namespace oncecount::filter {

struct FingerprintFilterConfig {
  uint32_t bucket_bits = 64;       // 64 or 128
  uint32_t fingerprint_bits = 16;  // 8..32; bucket_bits / bits fingerprints per bucket
  uint64_t groups = 0;             // of the first slices' plane (sizing.h)
  double max_load = 0.9;           // fraction of a slice's fields it fills
  uint32_t window_slices = 7;      // N: the window is N refresh periods
  Millis refresh{0};               // t
  Millis window{0};                // 0: N * t; at most N * t
  bool adaptive = true;
  double target_fpp = 1e-6;
  uint32_t max_slices = 64;
  // Of the planes together; 0: no bound, and failed kicks may push past max_slices.
  uint64_t memory_limit_bytes = 0;
  uint64_t seed = 0x6F6E6365636F756EULL;
};

template <class Word>
class BasicFingerprintFilter final : public DedupFilter {
 public:
  using Plane = FingerprintPlane<Word>;

  // Validates the configuration; errors name the offending field.
  static base::Result<BasicFingerprintFilter> Create(const FingerprintFilterConfig& config,
                                                     Millis start);

  BasicFingerprintFilter(BasicFingerprintFilter&&) noexcept = default;
  BasicFingerprintFilter& operator=(BasicFingerprintFilter&&) noexcept = default;

  DedupMode mode() const override { return DedupMode::kFbf; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override;
  Verdict TestAndInsert(IdHash hash) override;
  void TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

  // The instruction sets the batch loop is compiled for. TestAndInsertBatch takes
  // the widest the CPU has; TestAndInsertBatchWith runs one of them (the CPU must
  // have it: CpuHas), so that tests can hold the paths to the same results.
  enum class Isa : uint8_t { kPortable, kAvx2, kAvx512 };
  static bool CpuHas(Isa isa);
  void TestAndInsertBatchWith(Isa isa, std::span<const IdHash> hashes, std::span<Verdict> verdicts);

  // The false-positive probability of a fresh id now.
  double EstimatedFpp() const;

  const FingerprintFilterConfig& config() const { return config_; }
  uint32_t slice_count() const { return static_cast<uint32_t>(slices_.size()); }
  uint32_t plane_count() const { return static_cast<uint32_t>(planes_.size()); }
  // Groups of the slices pushed from now on.
  uint64_t next_groups() const { return next_groups_; }
  Millis window() const { return window_; }
  Millis now() const { return now_; }
  uint64_t early_refreshes() const { return early_refreshes_; }
  uint64_t kicks_failed() const { return kicks_failed_; }
  const EarlyForgetting& forgotten_early() const { return forgotten_; }
  // The largest size of the slices to come under `config`'s memory bound (at least the
  // first slices' size): a whole plane of it and a slot more fit the bound.
  static uint64_t FittingGroups(const FingerprintFilterConfig& config);
  // Bytes of the planes (every slice's fields).
  uint64_t plane_bytes() const;
  // Occupied fields of every slice, counted in the planes (O(memory)): a check that
  // the per-slice counts are right.
  std::vector<uint64_t> CountFingerprints() const;

 private:
  friend struct FingerprintStateCodec;

  struct Slice {
    uint32_t plane = 0;  // index into planes_
    uint32_t slot = 0;
    uint64_t ids = 0;
    uint64_t capacity = 0;
    Millis started{0};              // when it became the present
    Millis newest = Millis::min();  // clock time of the newest id; min() when empty
  };
  struct PlaneSlots {
    Plane memory;
    uint32_t live = 0;  // bit s: slot s holds a live slice
  };
  // One id's hash in the filter's terms; its buckets depend on the plane.
  struct Probe {
    uint64_t mixed = 0;
    uint32_t fingerprint = 0;
    Word pattern = 0;
    uint64_t groups = 0;  // of the plane `buckets` are for
    typename Plane::Buckets buckets;
  };

  BasicFingerprintFilter(FingerprintFilterConfig config, Millis start);
  Probe ProbeOf(IdHash hash) const;
  Probe ProbeIn(const Plane& plane, const FingerprintFields<Word>& fields, IdHash hash) const;
  // The probe's buckets in `plane`: computed once per id for the present's plane,
  // and again (out of line: rare) for a plane of another size.
  typename Plane::Buckets BucketsIn(const Plane& plane, const Probe& probe) const;
  typename Plane::Buckets OtherBuckets(const Plane& plane, const Probe& probe) const;
  // The matching slots of one plane, when the caller has them already.
  struct KnownSlots {
    uint32_t plane = UINT32_MAX;  // none
    uint32_t slots = 0;
  };
  template <int kLanes = 4>
  Verdict Lookup(const Probe& probe, const KnownSlots& known = {}) const;
  // Lookup, then Insert a new id or count a duplicate.
  template <int kLanes = 4>
  Verdict Decide(const Probe& probe, const KnownSlots& known = {});
  // The verdict on an id that live slots `hits` of plane `plane` hold: near the edge
  // when only the oldest slice does.
  Verdict DuplicateIn(uint32_t plane, uint32_t hits) const;
  Verdict CountDuplicate(Verdict verdict);
  void Insert(const Probe& probe);
  // The common case of a batch, held in locals for a run of ids: the only plane, the
  // present's slot and the room left in it. Stores into the plane may alias any
  // member of the filter as far as the compiler knows, so what the loop reads in
  // every turn is copied here, and the counts it keeps are written back
  // (EndFreshRun) before anything else reads them.
  struct FreshRun {
    Plane* plane = nullptr;  // null: no run (more than one plane, or a narrow one)
    uint32_t live = 0;       // the plane's live slots
    uint32_t slot = 0;
    uint64_t groups = 0;
    uint64_t room = 0;    // ids the present takes before it is full
    uint64_t placed = 0;  // ids placed in this run
    uint64_t seed = 0;    // inserted_ when the run began: the kicks' seeds go on from it
  };
  FreshRun BeginFreshRun();
  void EndFreshRun(FreshRun& run);
  // Places a new id's fingerprint in the present (of `plane`) and counts it.
  void PlaceInPresent(Plane& plane, const typename Plane::Buckets& buckets, uint32_t fingerprint);
  // Counts a fingerprint the present's Place took, or keeps the one it handed back.
  void CountPlaced(const std::optional<typename Plane::Homeless>& homeless, uint64_t groups);
  // Insert's rare paths: a full present (grow, or push a slice of the new size), and
  // a fingerprint no bucket of the present could take.
  void MakeRoom();
  void KeepHomeless(const typename Plane::Homeless& homeless, uint64_t groups);
  void Prefetch(const Probe& probe) const;
  // The batch loop, compiled three times: for AVX-512 and AVX2 (chosen at run time
  // where the CPU has them) and for the baseline instruction set. All give the same
  // verdicts and state.
  template <int kLanes>
  void RunBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts);
#if defined(__x86_64__)
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"), flatten)) void RunBatchAvx512(
      std::span<const IdHash> hashes, std::span<Verdict> verdicts);
  __attribute__((target("avx2"), flatten)) void RunBatchAvx2(std::span<const IdHash> hashes,
                                                             std::span<Verdict> verdicts);
#endif
  __attribute__((flatten)) void RunBatchPortable(std::span<const IdHash> hashes,
                                                 std::span<Verdict> verdicts);
  uint64_t CapacityOf(uint64_t groups) const;
  // The fewest groups whose capacity is at least `ids`.
  uint64_t GroupsToHold(double ids) const;
  // Whether a full present makes way for a new one now (see Insert).
  bool ShouldPushEarly() const;
  // A free slot in a plane of `groups` groups: a free one, one more in a plane not yet
  // at its full width, or a new plane one slot wide.
  Slice AcquireSlice(uint64_t groups);
  // Narrows every plane not of the size to come to the slices it holds, so that its
  // memory leaves with them (FingerprintPlane::Compact); renumbers their slots.
  void CompactPlanes();
  // The ids a present of `groups` takes when it fills early but would hold the rest
  // of its period within the sizing's headroom.
  uint64_t OverfillOf(uint64_t groups) const;
  // Ids per ms in the period before `start`, from the slices that started in it; 0
  // when the ring does not hold that whole period.
  double PaceBefore(Millis start) const;
  // The refresh that drops `slice` if nothing else does first.
  Millis DepartureOf(const Slice& slice) const;
  // `pace` against the pace before `start` (`otherwise` without one), in 1..2.
  double RiseOf(double pace, Millis start, double otherwise) const;
  void PushSlice(uint64_t groups);
  // `groups`, or the largest size that fits the memory bound (FittingGroups).
  uint64_t GroupsWithinTheBound(uint64_t groups) const;
  // Whether a slice of `groups` can be pushed without passing the memory bound.
  bool FitsTheBound(uint64_t groups) const;
  // Drops the oldest slice, recording what it held if that was inside the window.
  void ForgetOldest();
  bool OldestDroppable(Millis at) const;
  void DropDroppable(Millis at);
  void ReleaseSlice(const Slice& slice);
  void Refresh(Millis at);
  // Adaptation (config.adaptive), in GroupsForTheBudget's terms: the estimate is
  // the sum of the slices' rates, each fixed once its slice is no longer the present.
  // At a full present: whether it filled early, and if so the size to come, for the
  // present's pace with a margin for a load still rising.
  void GrowIfEarly();
  // At a regular refresh, with the slice that held the whole period: grows when its
  // pace, extrapolated, would take the estimate past the target; shrinks to what holds
  // the pace 25% higher when that is at most three quarters of the size.
  void ResizeAtRefresh(Millis at, const Slice& completed);
  // The groups of the slices to come that keep the estimate within `budget` while the
  // slices held at `now` leave and ids arrive at `ids_per_ms` (infinity: none do).
  double GroupsForTheBudget(Millis now, double ids_per_ms, double budget) const;
  // The next sizes to at least `wanted` groups: at least twice the current size.
  void GrowTo(double wanted);
  // A slice's false-positive rate: ids * FppPerIdAndGroup() / groups.
  double SliceFpp(const Slice& slice) const;
  // One id's share of a slice's false-positive rate, times the slice's groups: it
  // lies in one of a fresh id's two buckets with 2 / groups, and its fingerprint
  // matches with 1 / (2^bits - 1).
  double FppPerIdAndGroup() const;
  void RebuildMasks();

  FingerprintFilterConfig config_;
  FingerprintFields<Word> fields_;
  Millis window_{0};
  Millis now_{0};
  Millis next_refresh_{0};
  uint64_t next_groups_ = 0;
  std::vector<PlaneSlots> planes_;
  std::vector<Slice> slices_;  // newest (the present) first
  uint32_t oldest_plane_ = 0;  // where the oldest slice lives, for near-edge verdicts
  uint32_t oldest_bit_ = 0;
  uint64_t inserted_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t near_edge_ = 0;
  uint64_t early_refreshes_ = 0;
  uint64_t kicks_failed_ = 0;
  EarlyForgetting forgotten_;
  // The clock AdvanceTo is moving to (now_ between calls): a slice dropped at the bound
  // during its refreshes counts as forgotten early only if its ids are still inside
  // the window then. Follows from the calls; not serialized.
  Millis advancing_to_{0};
};

using FingerprintFilter64 = BasicFingerprintFilter<uint64_t>;
using FingerprintFilter128 = BasicFingerprintFilter<Bucket128>;
extern template class BasicFingerprintFilter<uint64_t>;
extern template class BasicFingerprintFilter<Bucket128>;

// The checks of Create, without allocating anything.
base::Status CheckFingerprintConfig(const FingerprintFilterConfig& config);

// The filter `config` describes: its bucket_bits picks the instantiation.
base::Result<std::unique_ptr<DedupFilter>> MakeFingerprintFilter(
    const FingerprintFilterConfig& config, Millis start);

}  // namespace oncecount::filter
