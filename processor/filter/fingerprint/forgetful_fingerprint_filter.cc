#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "processor/filter/fingerprint/fingerprint_state_codec.h"

namespace oncecount::filter {
namespace {

// Ids hashed ahead in a batch, their two lines prefetched (as the Bloom FBF does).
// dedup_benchmark measured 16 and 32 alike at every window.
constexpr size_t kPrefetchDistance = 16;
constexpr int64_t kFastForwardRefreshes = 4096;
// A present full before this fraction of its period has outgrown its size. It fills
// on past its capacity, by up to kOverfill and short of where kicks fail, when that
// holds the rest of its period at its pace (one slice in N + 1 a tenth fuller takes
// the sizing's 0.95 of the target to at most 0.975); otherwise the slices to come
// grow and a new present follows at once.
constexpr double kFullEarly = 0.95;
constexpr double kOverfill = 1.10;
// The overfill stays this far below the load where kicks start to fail.
constexpr double kOverfillBelowFailing = 0.03;
// Sizes are aimed at kGrowthBudget of the target, as the first one is, and change
// only when the target itself would be passed (growth) or a size kShrinkAtMost
// times the present one holds the pace kRateMargin higher (shrinking): a load that
// hovers near a size does not flap around it.
constexpr double kGrowthBudget = 0.95;
constexpr double kRateMargin = 1.25;
constexpr double kShrinkAtMost = 0.75;
// A pace is taken to rise once more by what it rose over the period before (at an
// early fill without that period, by what it outgrew the present), at most
// kGrowthRateMargin times. Each step grows by at least
// 1/kSmallestStep of the size (so that slices of nearly one size do not each open a
// plane) and at most kMaxGrowth times (a pace measured over a batch at one instant says
// little). The slices held while a new size fills in are allowed to take the estimate
// up to kTransitionMargin times the size the pace needs once they are gone.
constexpr double kGrowthRateMargin = 2.0;
constexpr uint64_t kSmallestStep = 16;
constexpr uint64_t kMaxGrowth = 16;
constexpr double kTransitionMargin = 2.0;

std::string Str(int64_t v) {
  return std::to_string(v);
}

base::Status CheckShape(const FingerprintFilterConfig& c) {
  if (c.fingerprint_bits < kMinFingerprintBits || c.fingerprint_bits > kMaxFingerprintBits) {
    return base::InvalidArgument("fingerprint bits must be in " + Str(kMinFingerprintBits) + ".." +
                                 Str(kMaxFingerprintBits) + " (got " + Str(c.fingerprint_bits) +
                                 ")");
  }
  if (c.bucket_bits != 64 && c.bucket_bits != 128) {
    return base::InvalidArgument("bucket bits must be 64 or 128 (got " + Str(c.bucket_bits) + ")");
  }
  if (c.groups == 0 || c.groups > FingerprintPlane<uint64_t>::kMaxGroups) {
    return base::InvalidArgument("groups must be in 1..2^32 (got " + std::to_string(c.groups) +
                                 ")");
  }
  // Far below a tenth a slice's capacity stops growing with its size (it is at least
  // one id), and adaptation's growth at each full present would compound; the sizing
  // picks loads of at least a tenth (a tenth and a bit at 1e-9, where even 32-bit
  // fingerprints fill a bucket sparsely).
  if (!(c.max_load >= 0.1 && c.max_load <= 1)) {
    return base::InvalidArgument("max load must be in [0.1, 1] (got " + std::to_string(c.max_load) +
                                 ")");
  }
  if (c.window_slices < 1) return base::InvalidArgument("window slices must be at least 1 (got 0)");
  if (c.max_slices > 4096 || uint64_t{c.window_slices} + 1 > c.max_slices) {
    return base::InvalidArgument("max slices must be in window slices + 1 .. 4096 (got " +
                                 Str(c.max_slices) + ")");
  }
  if (c.refresh.count() <= 0 || c.refresh > kMaxPeriod) {
    return base::InvalidArgument("refresh period must be in 1.." + Str(kMaxPeriod.count()) +
                                 " ms (got " + Str(c.refresh.count()) + " ms)");
  }
  if (c.window.count() < 0 || c.window > c.window_slices * c.refresh) {
    return base::InvalidArgument("window must be in 0..window slices x refresh period = " +
                                 Str((c.window_slices * c.refresh).count()) + " ms (got " +
                                 Str(c.window.count()) + " ms)");
  }
  return {};
}

base::Status CheckAdaptation(const FingerprintFilterConfig& c) {
  if (!(c.target_fpp > 0 && c.target_fpp < 1)) {
    return base::InvalidArgument("target fpp must be in (0, 1) (got " +
                                 std::to_string(c.target_fpp) + ")");
  }
  return {};
}

}  // namespace

base::Status CheckFingerprintConfig(const FingerprintFilterConfig& config) {
  if (base::Status s = CheckShape(config); !s) return s;
  // A whole plane of the first size: the ring of the sizing's load.
  if (config.memory_limit_bytes != 0 && config.groups * 64 > config.memory_limit_bytes) {
    return base::InvalidArgument("a memory bound of " + std::to_string(config.memory_limit_bytes) +
                                 " bytes is below the first slices' plane of " +
                                 std::to_string(config.groups * 64) + " bytes");
  }
  return CheckAdaptation(config);
}

template <class W>
base::Result<BasicFingerprintFilter<W>> BasicFingerprintFilter<W>::Create(
    const FingerprintFilterConfig& config, Millis start) {
  if (base::Status s = CheckFingerprintConfig(config); !s) return std::move(s).error();
  if (config.bucket_bits != kWordBits<W>) {
    return base::InvalidArgument("this filter has " + Str(kWordBits<W>) + "-bit buckets (got " +
                                 Str(config.bucket_bits) + ")");
  }
  if (start > kMaxFilterTime || start < -kMaxFilterTime) {
    return base::InvalidArgument("start time must be within +-2^61 ms");
  }
  // One slice: a plane one slot wide, widened as slices come (AcquireSlice).
  auto plane = Plane::Create(config.groups, 1);
  if (!plane) return plane.error();
  BasicFingerprintFilter filter(config, start);
  filter.planes_.push_back(PlaneSlots{std::move(plane).value(), 1});
  filter.slices_.push_back(Slice{0, 0, 0, filter.CapacityOf(config.groups), start});
  filter.RebuildMasks();
  return filter;
}

template <class W>
BasicFingerprintFilter<W>::BasicFingerprintFilter(FingerprintFilterConfig config, Millis start)
    : config_(config),
      fields_(config.fingerprint_bits),
      window_(config.window.count() > 0 ? config.window : config.window_slices * config.refresh),
      now_(start),
      next_refresh_(start + config.refresh),
      next_groups_(config.groups),
      advancing_to_(start) {}

template <class W>
uint64_t BasicFingerprintFilter<W>::CapacityOf(uint64_t groups) const {
  const double fields = static_cast<double>(groups) * fields_.count();
  return std::max<uint64_t>(1, static_cast<uint64_t>(config_.max_load * fields));
}

template <class W>
typename BasicFingerprintFilter<W>::Probe BasicFingerprintFilter<W>::ProbeOf(IdHash hash) const {
  // Most lookups see one plane: the present's.
  return ProbeIn(planes_[slices_.front().plane].memory, fields_, hash);
}

template <class W>
typename BasicFingerprintFilter<W>::Probe BasicFingerprintFilter<W>::ProbeIn(
    const Plane& plane, const FingerprintFields<W>& fields, IdHash hash) const {
  Probe p;
  p.mixed = FilterMix(hash, config_.seed);
  p.fingerprint = fields.FingerprintOf(static_cast<uint32_t>(p.mixed));
  p.pattern = fields.Pattern(p.fingerprint);
  p.groups = plane.groups();
  p.buckets = plane.BucketsOf(p.mixed, p.fingerprint);
  return p;
}

template <class W>
typename BasicFingerprintFilter<W>::Plane::Buckets BasicFingerprintFilter<W>::BucketsIn(
    const Plane& plane, const Probe& probe) const {
  if (plane.groups() == probe.groups) [[likely]] {
    return probe.buckets;
  }
  return OtherBuckets(plane, probe);
}

template <class W>
__attribute__((noinline)) typename BasicFingerprintFilter<W>::Plane::Buckets
BasicFingerprintFilter<W>::OtherBuckets(const Plane& plane, const Probe& probe) const {
  return plane.BucketsOf(probe.mixed, probe.fingerprint);
}

template <class W>
void BasicFingerprintFilter<W>::Prefetch(const Probe& probe) const {
  for (const PlaneSlots& plane : planes_) {
    plane.memory.Prefetch(BucketsIn(plane.memory, probe));
  }
}

template <class W>
template <int kLanes>
Verdict BasicFingerprintFilter<W>::Lookup(const Probe& probe, const KnownSlots& known) const {
  bool oldest_only = false;
  for (uint32_t i = 0; i < planes_.size(); ++i) {
    const Plane& plane = planes_[i].memory;
    const uint32_t slots = i == known.plane ? known.slots
                                            : plane.template MatchingSlots<kLanes>(
                                                  BucketsIn(plane, probe), probe.pattern, fields_);
    const uint32_t hits = slots & planes_[i].live;
    if (hits == 0) continue;
    if (DuplicateIn(i, hits) == Verdict::kDuplicate) return Verdict::kDuplicate;
    oldest_only = true;
  }
  return oldest_only ? Verdict::kDuplicateNearEdge : Verdict::kNew;
}

template <class W>
Verdict BasicFingerprintFilter<W>::DuplicateIn(uint32_t plane, uint32_t hits) const {
  return plane != oldest_plane_ || (hits & ~oldest_bit_) != 0 ? Verdict::kDuplicate
                                                              : Verdict::kDuplicateNearEdge;
}

template <class W>
Verdict BasicFingerprintFilter<W>::CountDuplicate(Verdict verdict) {
  ++duplicates_;
  if (verdict == Verdict::kDuplicateNearEdge) ++near_edge_;
  return verdict;
}

template <class W>
void BasicFingerprintFilter<W>::Insert(const Probe& probe) {
  if (slices_.front().ids >= slices_.front().capacity) [[unlikely]] {
    MakeRoom();
  }
  Plane& plane = planes_[slices_.front().plane].memory;
  PlaceInPresent(plane, BucketsIn(plane, probe), probe.fingerprint);
}

template <class W>
typename BasicFingerprintFilter<W>::FreshRun BasicFingerprintFilter<W>::BeginFreshRun() {
  // One plane a whole line wide: its groups are found without its stride.
  if (planes_.size() != 1 || planes_.front().memory.width() != Plane::kSlots) return {};
  const Slice& present = slices_.front();
  Plane& plane = planes_.front().memory;
  const uint64_t room = present.ids < present.capacity ? present.capacity - present.ids : 0;
  return {&plane, planes_.front().live, present.slot, plane.groups(), room, 0, inserted_};
}

template <class W>
void BasicFingerprintFilter<W>::EndFreshRun(FreshRun& run) {
  if (run.placed == 0) return;
  Slice& present = slices_.front();
  present.ids += run.placed;
  present.newest = now_;
  inserted_ += run.placed;
  run.placed = 0;
}

template <class W>
void BasicFingerprintFilter<W>::PlaceInPresent(Plane& plane, const typename Plane::Buckets& buckets,
                                               uint32_t fingerprint) {
  const auto homeless = plane.Place(slices_.front().slot, buckets, fingerprint, fields_, inserted_);
  CountPlaced(homeless, plane.groups());
}

template <class W>
void BasicFingerprintFilter<W>::CountPlaced(const std::optional<typename Plane::Homeless>& homeless,
                                            uint64_t groups) {
  Slice& present = slices_.front();
  present.newest = now_;
  ++inserted_;
  if (!homeless) [[likely]] {
    ++present.ids;
    return;
  }
  KeepHomeless(*homeless, groups);
}

template <class W>
__attribute__((noinline)) void BasicFingerprintFilter<W>::MakeRoom() {
  const Slice& present = slices_.front();
  if (present.ids == present.capacity ||
      present.ids == OverfillOf(planes_[present.plane].memory.groups())) {
    GrowIfEarly();
  }
  if (ShouldPushEarly()) {
    PushSlice(next_groups_);
    ++early_refreshes_;
  }
}

template <class W>
__attribute__((noinline)) void BasicFingerprintFilter<W>::KeepHomeless(
    const typename Plane::Homeless& homeless, uint64_t groups) {
  // The slot is as full as cuckoo hashing gets it. The fingerprint in hand goes into
  // a new present of the same size, where its bucket means the same.
  ++kicks_failed_;
  ++early_refreshes_;
  PushSlice(groups);
  Slice& fresh = slices_.front();
  Plane& plane = planes_[fresh.plane].memory;
  const typename Plane::Buckets buckets{homeless.bucket,
                                        plane.Alternate(homeless.bucket, homeless.fingerprint)};
  // An empty slot has room in either bucket.
  (void)plane.Place(fresh.slot, buckets, homeless.fingerprint, fields_, 0);
  fresh.ids = 1;
  fresh.newest = now_;
}

template <class W>
bool BasicFingerprintFilter<W>::Contains(IdHash hash) const {
  return Lookup(ProbeOf(hash)) != Verdict::kNew;
}

template <class W>
Verdict BasicFingerprintFilter<W>::TestAndInsert(IdHash hash) {
  return Decide(ProbeOf(hash));
}

template <class W>
template <int kLanes>
Verdict BasicFingerprintFilter<W>::Decide(const Probe& probe, const KnownSlots& known) {
  const Verdict verdict = Lookup<kLanes>(probe, known);
  if (verdict == Verdict::kNew) {
    Insert(probe);
    return verdict;
  }
  return CountDuplicate(verdict);
}

template <class W>
bool BasicFingerprintFilter<W>::CpuHas(Isa isa) {
#if defined(__x86_64__)
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kAvx2:
      return avx2;
    case Isa::kAvx512:
      return avx512;
  }
  return false;
#else
  return isa == Isa::kPortable;
#endif
}

template <class W>
void BasicFingerprintFilter<W>::TestAndInsertBatch(std::span<const IdHash> hashes,
                                                   std::span<Verdict> verdicts) {
  static const Isa widest = CpuHas(Isa::kAvx512) ? Isa::kAvx512
                            : CpuHas(Isa::kAvx2) ? Isa::kAvx2
                                                 : Isa::kPortable;
  TestAndInsertBatchWith(widest, hashes, verdicts);
}

template <class W>
void BasicFingerprintFilter<W>::TestAndInsertBatchWith(Isa isa, std::span<const IdHash> hashes,
                                                       std::span<Verdict> verdicts) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return RunBatchAvx512(hashes, verdicts);
  if (isa == Isa::kAvx2) return RunBatchAvx2(hashes, verdicts);
#endif
  RunBatchPortable(hashes, verdicts);
}

#if defined(__x86_64__)
template <class W>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"), flatten)) void
BasicFingerprintFilter<W>::RunBatchAvx512(std::span<const IdHash> hashes,
                                          std::span<Verdict> verdicts) {
  RunBatch<8>(hashes, verdicts);
}

template <class W>
__attribute__((target("avx2"), flatten)) void BasicFingerprintFilter<W>::RunBatchAvx2(
    std::span<const IdHash> hashes, std::span<Verdict> verdicts) {
  RunBatch<4>(hashes, verdicts);
}
#endif

template <class W>
__attribute__((flatten)) void BasicFingerprintFilter<W>::RunBatchPortable(
    std::span<const IdHash> hashes, std::span<Verdict> verdicts) {
  RunBatch<4>(hashes, verdicts);
}

template <class W>
template <int kLanes>
void BasicFingerprintFilter<W>::RunBatch(std::span<const IdHash> hashes,
                                         std::span<Verdict> verdicts) {
  const size_t count = std::min(hashes.size(), verdicts.size());
  Probe ahead[kPrefetchDistance];
  const size_t first = std::min(count, kPrefetchDistance);
  for (size_t i = 0; i < first; ++i) {
    ahead[i] = ProbeOf(hashes[i]);
    Prefetch(ahead[i]);
  }
  // The common case: one plane, the present has room, and no slice holds the id. It
  // does what Decide does (the same kicks, from the same seeds), with the fields and
  // the counts in locals.
  const FingerprintFields<W> fields = fields_;
  FreshRun run = BeginFreshRun();
  for (size_t i = 0; i < count; ++i) {
    Probe& probe = ahead[i % kPrefetchDistance];
    const bool in_run = run.room > run.placed && probe.groups == run.groups;
    const uint32_t slots = in_run ? run.plane->template MatchingSlots<kLanes, true>(
                                        probe.buckets, probe.pattern, fields)
                                  : 0;
    if (in_run && slots == 0) {
      const auto homeless = run.plane->template Place<true>(
          run.slot, probe.buckets, probe.fingerprint, fields, run.seed + run.placed);
      verdicts[i] = Verdict::kNew;
      if (homeless) [[unlikely]] {
        EndFreshRun(run);
        CountPlaced(homeless, run.groups);
        run = BeginFreshRun();
      } else {
        ++run.placed;
      }
    } else if (in_run && (slots & run.live) != 0) {
      // A retry (most matches): its verdict needs nothing the run holds back.
      verdicts[i] = CountDuplicate(DuplicateIn(0, slots & run.live));
    } else {
      EndFreshRun(run);
      // In a run the only plane's slots are known: an id is not tested twice.
      verdicts[i] = Decide<kLanes>(probe, in_run ? KnownSlots{0, slots} : KnownSlots{});
      run = BeginFreshRun();
    }
    // The slot is free again: the id kPrefetchDistance ahead takes it.
    if (i + kPrefetchDistance < count) {
      if (run.plane != nullptr) {
        // In a run the only plane is the present's.
        probe = ProbeIn(*run.plane, fields, hashes[i + kPrefetchDistance]);
        run.plane->template Prefetch<true>(probe.buckets);
      } else {
        probe = ProbeOf(hashes[i + kPrefetchDistance]);
        Prefetch(probe);
      }
    }
  }
  EndFreshRun(run);
}

template <class W>
bool BasicFingerprintFilter<W>::ShouldPushEarly() const {
  // Only when adaptation has sized the slices to come differently. A slice pushed
  // early would be one more live slice for a whole window, one more than a plane
  // has slots: a load above the sizing fills the present past max_load instead
  // (within the room its kicks leave, MaxLoadFor), until a kick fails or
  // adaptation resizes.
  if (slices_.size() >= config_.max_slices) return false;
  return planes_[slices_.front().plane].memory.groups() != next_groups_;
}

template <class W>
typename BasicFingerprintFilter<W>::Slice BasicFingerprintFilter<W>::AcquireSlice(uint64_t groups) {
  // A free slot of a plane of that size, else one more slot in such a plane, else a
  // new plane one slot wide. Sizes were validated (Create, GrowTo): only the
  // allocation can fail, and a filter that cannot hold its window cannot go on. Its
  // owner fails the shard, not the process (ShardWorker::Fail).
  uint32_t widenable = UINT32_MAX;
  for (uint32_t i = 0; i < planes_.size(); ++i) {
    PlaneSlots& plane = planes_[i];
    if (plane.memory.groups() != groups) continue;
    if (plane.live != plane.memory.AllSlots()) {
      const auto slot = static_cast<uint32_t>(std::countr_one(plane.live));
      plane.live |= 1u << slot;
      return Slice{i, slot, 0, CapacityOf(groups), now_};
    }
    if (plane.memory.width() < Plane::kSlots) widenable = i;
  }
  if (widenable != UINT32_MAX) {
    PlaneSlots& plane = planes_[widenable];
    const uint32_t slot = plane.memory.width();
    plane.memory.Widen();  // throws std::bad_alloc
    plane.live |= 1u << slot;
    return Slice{widenable, slot, 0, CapacityOf(groups), now_};
  }
  base::Result<Plane> plane = Plane::Create(groups, 1);
  if (!plane) throw std::bad_alloc();
  planes_.push_back(PlaneSlots{std::move(plane).value(), 1});
  return Slice{static_cast<uint32_t>(planes_.size() - 1), 0, 0, CapacityOf(groups), now_};
}

template <class W>
void BasicFingerprintFilter<W>::CompactPlanes() {
  for (uint32_t i = 0; i < planes_.size(); ++i) {
    PlaneSlots& plane = planes_[i];
    // A plane of the size to come keeps its free slots for the slices to come.
    if (plane.live == plane.memory.AllSlots() || plane.memory.groups() == next_groups_) continue;
    const uint32_t kept = plane.live;
    plane.memory.Compact(kept);
    plane.live = plane.memory.AllSlots();
    for (Slice& s : slices_) {
      if (s.plane == i) s.slot = static_cast<uint32_t>(std::popcount(kept & ((1u << s.slot) - 1)));
    }
  }
  RebuildMasks();
}

template <class W>
uint64_t BasicFingerprintFilter<W>::plane_bytes() const {
  uint64_t bytes = 0;
  for (const PlaneSlots& plane : planes_) bytes += plane.memory.bytes();
  return bytes;
}

template <class W>
uint64_t BasicFingerprintFilter<W>::FittingGroups(const FingerprintFilterConfig& config) {
  const uint64_t limit = config.memory_limit_bytes;
  if (limit == 0) return Plane::kMaxGroups;
  // Once the slices held now are gone, the slices to come fill a whole plane, and
  // while they come in the held ones leave one a period: one slice more than a plane
  // at most (a present pushed early). Sizes within that fit without forgetting early.
  return std::max(config.groups, limit / (sizeof(W) * (Plane::kSlots + 1)));
}

template <class W>
uint64_t BasicFingerprintFilter<W>::GroupsWithinTheBound(uint64_t groups) const {
  return std::min(groups, FittingGroups(config_));
}

template <class W>
bool BasicFingerprintFilter<W>::FitsTheBound(uint64_t groups) const {
  if (config_.memory_limit_bytes == 0) return true;
  for (const PlaneSlots& plane : planes_) {
    if (plane.memory.groups() == groups && plane.live != plane.memory.AllSlots()) return true;
  }
  // One slot more: a plane widened, or a new one a slot wide.
  return plane_bytes() + groups * sizeof(W) <= config_.memory_limit_bytes;
}

template <class W>
void BasicFingerprintFilter<W>::ForgetOldest() {
  const Slice oldest = slices_.back();
  if (oldest.ids > 0 && oldest.newest >= advancing_to_ - window_) {
    forgotten_.Record(oldest.newest, oldest.ids);
  }
  slices_.pop_back();
  ReleaseSlice(oldest);
}

template <class W>
void BasicFingerprintFilter<W>::PushSlice(uint64_t groups) {
  // `groups` is the size to come, within the bound already (GrowTo; the decoder checks
  // a decoded one), or the present's for a fingerprint no bucket of it took, whose
  // bucket means nothing in a plane of another size.
  // Planes no longer of the size to come give up their free slots first: nothing is
  // forgotten for room they hold empty.
  CompactPlanes();
  // Without a memory bound (filter-eval's experiments) nothing is forgotten early. With
  // the present alone, its plane is one slot wide (or has a free slot of its size), and
  // one more slot of any size the filter takes fits beside it (FittingGroups).
  const bool bounded = config_.memory_limit_bytes != 0;
  while (bounded && slices_.size() > 1 &&
         (slices_.size() >= config_.max_slices || !FitsTheBound(groups))) {
    ForgetOldest();
    CompactPlanes();
  }
  slices_.insert(slices_.begin(), AcquireSlice(groups));
  CompactPlanes();  // a plane of the size that was to come, say, keeps no free slot now
}

template <class W>
bool BasicFingerprintFilter<W>::OldestDroppable(Millis at) const {
  const Slice& oldest = slices_.back();
  return oldest.ids == 0 || oldest.newest < at - window_;
}

template <class W>
void BasicFingerprintFilter<W>::ReleaseSlice(const Slice& slice) {
  PlaneSlots& plane = planes_[slice.plane];
  if (slice.ids > 0) plane.memory.ClearSlot(slice.slot);
  plane.live &= ~(1u << slice.slot);
  if (plane.live != 0) return;
  planes_.erase(planes_.begin() + slice.plane);
  for (Slice& s : slices_) {
    if (s.plane > slice.plane) --s.plane;
  }
}

template <class W>
void BasicFingerprintFilter<W>::DropDroppable(Millis at) {
  while (slices_.size() > 1 && OldestDroppable(at)) {
    const Slice oldest = slices_.back();
    slices_.pop_back();
    ReleaseSlice(oldest);
  }
  RebuildMasks();
}

template <class W>
void BasicFingerprintFilter<W>::Refresh(Millis at) {
  DropDroppable(at);
  const Slice& present = slices_.front();
  // Only a slice that held a whole period measures the load: one pushed early (by
  // growth) holds the period's tail, and shrinking on it would flap.
  if (present.ids > 0 && config_.adaptive && at - present.started >= config_.refresh) {
    ResizeAtRefresh(at, present);
  }
  const bool reusable = present.ids == 0 && planes_[present.plane].memory.groups() == next_groups_;
  if (reusable) {
    CompactPlanes();  // the drops may have freed slots of planes not of the size to come
  } else {
    PushSlice(next_groups_);  // compacts
  }
  slices_.front().started = at;
}

template <class W>
uint64_t BasicFingerprintFilter<W>::GroupsToHold(double ids) const {
  const double per_group = config_.max_load * fields_.count();
  auto groups = static_cast<uint64_t>(std::ceil(ids / per_group));
  while (static_cast<double>(CapacityOf(groups)) < ids) ++groups;  // CapacityOf rounds down
  return groups;
}

template <class W>
uint64_t BasicFingerprintFilter<W>::OverfillOf(uint64_t groups) const {
  const uint64_t capacity = CapacityOf(groups);
  const double fields = static_cast<double>(groups) * fields_.count();
  const double room = fields * (MaxLoadFor(fields_.count()) + kOverfillBelowFailing);
  return std::max(capacity,
                  static_cast<uint64_t>(std::min(static_cast<double>(capacity) * kOverfill, room)));
}

template <class W>
double BasicFingerprintFilter<W>::PaceBefore(Millis start) const {
  // The slices that started in the period before `start`: a regular one at its
  // start, and any pushed early in it (newest first, after the present).
  const Millis from = start - config_.refresh;
  uint64_t before = 0;
  bool whole = false;
  for (size_t i = 1; i < slices_.size() && slices_[i].started >= from; ++i) {
    if (slices_[i].started >= start) continue;
    before += slices_[i].ids;
    whole = whole || slices_[i].started == from;
  }
  if (!whole) return 0;
  return static_cast<double>(before) / static_cast<double>(config_.refresh.count());
}

template <class W>
double BasicFingerprintFilter<W>::RiseOf(double pace, Millis start, double otherwise) const {
  const double before = PaceBefore(start);
  const double rise = before > 0 ? pace / before : otherwise;
  return std::clamp(rise, 1.0, kGrowthRateMargin);
}

template <class W>
void BasicFingerprintFilter<W>::GrowIfEarly() {
  const Slice& present = slices_.front();
  const Millis elapsed = now_ - present.started;
  const double period = static_cast<double>(config_.refresh.count());
  if (!config_.adaptive || static_cast<double>(elapsed.count()) >= kFullEarly * period) return;
  if (planes_[present.plane].memory.groups() != next_groups_) return;  // grown already
  const double ms = static_cast<double>(std::max<int64_t>(elapsed.count(), 1));
  const double pace = static_cast<double>(present.ids) / ms;
  // The ids the present would hold by its period's end at this pace. It fills on to
  // them if it has the room and the estimate stays within the target.
  const double projected = pace * period;
  const uint64_t groups = planes_[present.plane].memory.groups();
  const double more = (projected - static_cast<double>(present.ids)) * FppPerIdAndGroup() /
                      static_cast<double>(groups);
  if (projected <= static_cast<double>(OverfillOf(groups)) &&
      EstimatedFpp() + more <= config_.target_fpp) {
    return;
  }
  // A load that rose over the period before is taken to rise as much again (without
  // that period, by as much as it outgrew the present).
  const double rise =
      RiseOf(pace, present.started, projected / static_cast<double>(present.capacity));
  GrowTo(GroupsForTheBudget(now_, pace * rise, config_.target_fpp * kGrowthBudget));
}

template <class W>
void BasicFingerprintFilter<W>::ResizeAtRefresh(Millis at, const Slice& completed) {
  const double pace =
      static_cast<double>(completed.ids) / static_cast<double>(config_.refresh.count());
  const double target = config_.target_fpp;
  // A load that rose over the period is taken to rise as much again.
  const double rising = pace * RiseOf(pace, completed.started, 1.0);
  if (GroupsForTheBudget(at, rising, target) > static_cast<double>(next_groups_)) {
    GrowTo(GroupsForTheBudget(at, rising, target * kGrowthBudget));
    return;
  }
  // The size that holds the pace kRateMargin higher, within the budget.
  const double calm = GroupsForTheBudget(at, pace * kRateMargin, target * kGrowthBudget);
  const auto smaller = std::max({config_.groups, static_cast<uint64_t>(std::ceil(calm)),
                                 GroupsToHold(static_cast<double>(completed.ids) * kRateMargin)});
  if (static_cast<double>(smaller) <= kShrinkAtMost * static_cast<double>(next_groups_)) {
    next_groups_ = smaller;
  }
}

template <class W>
void BasicFingerprintFilter<W>::GrowTo(double wanted) {
  const uint64_t present = planes_[slices_.front().plane].memory.groups();
  const uint64_t most = std::min(Plane::kMaxGroups, present * kMaxGrowth);
  const uint64_t step = next_groups_ + std::max<uint64_t>(1, next_groups_ / kSmallestStep);
  uint64_t grown = std::max(step, static_cast<uint64_t>(std::min(
                                      std::ceil(wanted), static_cast<double>(Plane::kMaxGroups))));
  grown = std::max(next_groups_, std::min(grown, most));
  next_groups_ = GroupsWithinTheBound(grown);
}

template <class W>
double BasicFingerprintFilter<W>::FppPerIdAndGroup() const {
  return 2 / static_cast<double>(fields_.max_fingerprint());
}

template <class W>
double BasicFingerprintFilter<W>::SliceFpp(const Slice& slice) const {
  const double groups = static_cast<double>(planes_[slice.plane].memory.groups());
  return std::min(1.0, FppPerIdAndGroup() * static_cast<double>(slice.ids) / groups);
}

template <class W>
double BasicFingerprintFilter<W>::GroupsForTheBudget(Millis now, double ids_per_ms,
                                                     double budget) const {
  // Once the slices held now are gone, the ring holds only new ids: a window and the
  // present's period of them, within `budget`. That size is what the pace needs.
  const double per_id = FppPerIdAndGroup();
  const double steady =
      per_id * ids_per_ms * static_cast<double>((window_ + config_.refresh).count()) / budget;
  // Until then the held slices leave one by one, each at the first refresh after its
  // newest id leaves the window, while the ids to come add to the estimate: the groups
  // that keep the sum within the target just before each departure. A moment the held slices fill
  // alone no size can mend, and a size far beyond what the pace needs would outlive
  // the moment by a window: the transition asks at most kTransitionMargin x steady.
  const double target = config_.target_fpp;
  double held = 0;
  for (const Slice& s : slices_) held += SliceFpp(s);
  double transition = 0;
  for (auto s = slices_.rbegin(); s != slices_.rend(); ++s) {  // oldest first
    if (s->ids == 0) continue;
    const Millis ahead = DepartureOf(*s) - now;
    const double room = target - held;
    if (room > 0) {
      transition =
          std::max(transition, per_id * ids_per_ms * static_cast<double>(ahead.count()) / room);
    } else {
      transition = std::numeric_limits<double>::infinity();
    }
    held -= SliceFpp(*s);
  }
  return std::max(steady, std::min(transition, kTransitionMargin * steady));
}

template <class W>
Millis BasicFingerprintFilter<W>::DepartureOf(const Slice& slice) const {
  // Refreshes fall at next_refresh_ + k * t; a slice goes at the first one past
  // newest + window (OldestDroppable).
  const Millis t = config_.refresh;
  const Millis leaves = slice.newest + window_;
  if (leaves < next_refresh_) return next_refresh_;
  return next_refresh_ + ((leaves - next_refresh_) / t + 1) * t;
}

template <class W>
void BasicFingerprintFilter<W>::AdvanceTo(Millis now) {
  now = std::min(now, kMaxFilterTime);
  if (now <= now_) return;
  advancing_to_ = now;
  const Millis t = config_.refresh;
  if ((now - next_refresh_) / t > kFastForwardRefreshes) {
    // After one refresh the present is empty and further refreshes only drop: go
    // straight to the last one due.
    Refresh(next_refresh_);
    next_refresh_ += (now - next_refresh_) / t * t;
  }
  for (; next_refresh_ <= now; next_refresh_ += t) Refresh(next_refresh_);
  now_ = now;
}

template <class W>
void BasicFingerprintFilter<W>::RebuildMasks() {
  if (slices_.size() <= 1) {
    oldest_plane_ = 0;
    oldest_bit_ = 0;
    return;
  }
  oldest_plane_ = slices_.back().plane;
  oldest_bit_ = 1u << slices_.back().slot;
}

template <class W>
double BasicFingerprintFilter<W>::EstimatedFpp() const {
  double log_none = 0;
  for (const Slice& s : slices_) log_none += std::log1p(-std::min(SliceFpp(s), 1 - 1e-16));
  return -std::expm1(log_none);
}

template <class W>
std::vector<uint64_t> BasicFingerprintFilter<W>::CountFingerprints() const {
  std::vector<uint64_t> counts;
  for (const Slice& s : slices_) {
    counts.push_back(planes_[s.plane].memory.CountOccupied(s.slot, fields_));
  }
  return counts;
}

template <class W>
FilterSummary BasicFingerprintFilter<W>::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kFbf;
  s.constituent = Constituent::kFingerprint;
  s.inserted = inserted_;
  s.duplicates = duplicates_;
  s.near_edge_duplicates = near_edge_;
  s.early_refreshes = early_refreshes_;
  s.estimated_fpp = EstimatedFpp();
  s.estimated_fpp_eq1 = s.estimated_fpp;
  s.filters = slice_count();
  s.bits_total = plane_bytes() * 8;
  for (const Slice& slice : slices_) {
    const double groups = static_cast<double>(planes_[slice.plane].memory.groups());
    ConstituentSummary c;
    c.inserted = slice.ids;
    c.fill = static_cast<double>(slice.ids) / (groups * fields_.count());
    c.estimated_fpp = SliceFpp(slice);
    s.constituents.push_back(c);
  }
  s.refresh_ms = config_.refresh.count();
  s.window_ms_guaranteed = forgotten_.Held(now_, window_).count();
  s.window_ms_configured = window_.count();
  s.memory_limit_bytes = config_.memory_limit_bytes;
  s.forgotten_early = forgotten_.ids;
  return s;
}

template <class W>
void BasicFingerprintFilter<W>::Serialize(std::string& out) const {
  FingerprintStateCodec::Encode(*this, out);
}

template class BasicFingerprintFilter<uint64_t>;
template class BasicFingerprintFilter<Bucket128>;

base::Result<std::unique_ptr<DedupFilter>> MakeFingerprintFilter(
    const FingerprintFilterConfig& config, Millis start) {
  if (config.bucket_bits == 128) return OwnedFilter(FingerprintFilter128::Create(config, start));
  return OwnedFilter(FingerprintFilter64::Create(config, start));
}

}  // namespace oncecount::filter
