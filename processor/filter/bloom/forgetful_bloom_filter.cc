#include "processor/filter/bloom/forgetful_bloom_filter.h"

#include <algorithm>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "processor/filter/bloom/sizing.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {
namespace {

// Hashes this many ids ahead in a batch: enough in-flight cache misses to cover
// DRAM latency, few enough that the prefetched lines are still in L1/L2.
constexpr size_t kPrefetchDistance = 8;
// A clock jump longer than this many refresh periods fast-forwards: after the ring
// has turned over once every filter is empty and further refreshes change nothing.
constexpr int64_t kFastForwardRefreshes = 4096;

std::string Str(int64_t v) {
  return std::to_string(v);
}

// What differs between constituents, chosen by overload on a type tag.
template <class C>
using Tag = std::type_identity<C>;

base::Result<BlockedBloom> MakeConstituent(Tag<BlockedBloom>, const FbfConfig& c, uint64_t seed) {
  return BlockedBloom::Create(c.bits_per_filter, c.hashes, seed, c.block_bits);
}

base::Result<GaussianBloom> MakeConstituent(Tag<GaussianBloom>, const FbfConfig& c, uint64_t seed) {
  return GaussianBloom::Create(
      {c.bits_per_filter, c.hashes, static_cast<int>(c.cell_bits), c.exp, seed});
}

base::Status CheckSize(Tag<BlockedBloom>, const FbfConfig& c) {
  if ((c.bits_per_filter + c.block_bits - 1) / c.block_bits > kMaxBlocks) {
    return base::InvalidArgument("bits per filter must be at most " +
                                 Str(kMaxBlocks * c.block_bits) + " (got " +
                                 Str(static_cast<int64_t>(c.bits_per_filter)) + ")");
  }
  return {};
}

base::Status CheckSize(Tag<GaussianBloom>, const FbfConfig& c) {
  if (c.bits_per_filter > kMaxGaussianCells) {
    return base::InvalidArgument("cells per filter must be at most " + Str(kMaxGaussianCells) +
                                 " (got " + Str(static_cast<int64_t>(c.bits_per_filter)) + ")");
  }
  return {};
}

double ConstituentFppOf(const BlockedBloom& b, ConstituentModel model) {
  return ConstituentFpp(model, static_cast<double>(b.bits()), b.hashes(),
                        static_cast<double>(b.inserted()), b.block_bits());
}

// Lemma 2: a Gaussian filter's false positives are among its underlying classic
// filter's, so Equation 1 on the cells bounds it whatever the model.
double ConstituentFppOf(const GaussianBloom& g, ConstituentModel) {
  return ClassicBloomFpp(static_cast<double>(g.cells()), g.hashes(),
                         static_cast<double>(g.inserted()));
}

uint32_t NonPastFilters(const FbfConfig& config) {
  return config.check == MembershipCheck::kPairs ? 3 : 2;
}

// The filters and their times: counts, hashes, refresh period and window.
base::Status CheckShape(const FbfConfig& config) {
  const uint32_t non_past = NonPastFilters(config);
  if (config.bits_per_filter == 0)
    return base::InvalidArgument("bits per filter must be at least 1 (got 0)");
  if (config.hashes < kMinHashes || config.hashes > kMaxHashes) {
    return base::InvalidArgument("hashes must be in " + Str(kMinHashes) + ".." + Str(kMaxHashes) +
                                 " (got " + Str(config.hashes) + ")");
  }
  if (config.past_filters < 1)
    return base::InvalidArgument("past filters must be at least 1 (got 0)");
  if (config.max_filters > 4096) {
    return base::InvalidArgument("max filters must be at most 4096 (got " +
                                 Str(config.max_filters) + ")");
  }
  // In 64 bits: a past_filters near 2^32 must not wrap around to a small sum.
  if (uint64_t{config.past_filters} + non_past > config.max_filters) {
    return base::InvalidArgument("past filters must be at most max filters - " + Str(non_past) +
                                 " = " + Str(static_cast<int64_t>(config.max_filters) - non_past) +
                                 " (got " + Str(config.past_filters) + ")");
  }
  if (config.refresh.count() <= 0 || config.refresh > kMaxPeriod) {
    return base::InvalidArgument("refresh period must be in 1.." + Str(kMaxPeriod.count()) +
                                 " ms (got " + Str(config.refresh.count()) + " ms)");
  }
  if (config.window.count() < 0 || config.window > kMaxPeriod) {
    return base::InvalidArgument("window must be in 0.." + Str(kMaxPeriod.count()) + " ms (got " +
                                 Str(config.window.count()) + " ms)");
  }
  const Millis nominal = (config.past_filters + 1) * config.refresh;
  if (config.window > nominal) {
    return base::InvalidArgument(
        "window of " + Str(config.window.count()) + " ms exceeds what " + Str(config.past_filters) +
        " past filters at a refresh period of " + Str(config.refresh.count()) +
        " ms hold ((N + 1) * t = " + Str(nominal.count()) + " ms)");
  }
  return {};
}

// What adaptation works with: the target, its steps and intervals, the slices.
base::Status CheckAdaptation(const FbfConfig& config) {
  if (!(config.target_fpp > 0 && config.target_fpp < 1)) {
    return base::InvalidArgument("target fpp must be in (0, 1) (got " +
                                 std::to_string(config.target_fpp) + ")");
  }
  if (config.refresh_step.count() < 0 || config.refresh_step > kMaxPeriod) {
    return base::InvalidArgument("refresh step must be in 0.." + Str(kMaxPeriod.count()) + " ms");
  }
  if (config.adapt_every.count() <= 0 || config.adapt_every > kMaxPeriod) {
    return base::InvalidArgument("adaptation interval must be in 1.." + Str(kMaxPeriod.count()) +
                                 " ms");
  }
  if (config.slice_capacity > (uint64_t{1} << 48)) {
    return base::InvalidArgument("slice capacity must be at most 2^48 ids (got " +
                                 std::to_string(config.slice_capacity) + ")");
  }
  return {};
}

}  // namespace

template <class C>
base::Status CheckConfig(const FbfConfig& config, Millis start) {
  if (base::Status s = CheckShape(config); !s) return s;
  if (base::Status s = CheckAdaptation(config); !s) return s;
  FbfConfig probe_config = config;
  probe_config.bits_per_filter = 1;
  auto probe = MakeConstituent(Tag<C>{}, probe_config, 0);
  if (!probe) return probe.error();
  if (base::Status s = CheckSize(Tag<C>{}, config); !s) return s;
  if (start > kMaxFilterTime || start < -kMaxFilterTime) {
    return base::InvalidArgument("start time must be within +-2^61 ms");
  }
  return {};
}

template <class C>
base::Result<BasicForgetfulFilter<C>> BasicForgetfulFilter<C>::Create(const FbfConfig& config,
                                                                      Millis start) {
  if (base::Status s = CheckConfig<C>(config, start); !s) return std::move(s).error();
  try {
    BasicForgetfulFilter filter(config, start, std::nullopt);
    if (filter.ring_bound_ < filter.target_filters_) {
      return base::InvalidArgument("a memory bound of " +
                                   Str(static_cast<int64_t>(config.memory_limit_bytes)) +
                                   " bytes holds " + Str(filter.ring_bound_) + " filters of " +
                                   Str(static_cast<int64_t>(filter.slots_[0].bloom.bits() / 8)) +
                                   " bytes; the window needs " + Str(filter.target_filters_));
    }
    return filter;
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument(
        "cannot allocate " + Str(config.past_filters + NonPastFilters(config)) + " filters of " +
        Str(static_cast<int64_t>(config.bits_per_filter)) + " bits");
  }
}

template <class C>
base::Result<BasicForgetfulFilter<C>> BasicForgetfulFilter<C>::CreateForDecode(
    const FbfConfig& config) {
  const Millis start{0};  // the state's clock is read after
  if (base::Status s = CheckConfig<C>(config, start); !s) return std::move(s).error();
  try {
    auto one = MakeConstituent(Tag<C>{}, config, 0);
    if (!one) return one.error();
    return BasicForgetfulFilter(config, start, one->bits());
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument("cannot allocate a filter of " +
                                 Str(static_cast<int64_t>(config.bits_per_filter)) + " bits");
  }
}

template <class C>
BasicForgetfulFilter<C>::BasicForgetfulFilter(FbfConfig config, Millis start,
                                              std::optional<uint64_t> ring_filter_bits)
    : config_(config),
      window_(config.window.count() > 0 ? config.window
                                        : (config.past_filters + 1) * config.refresh),
      refresh_(config.refresh),
      refresh_step_(config.refresh_step.count() > 0 ? config.refresh_step
                                                    : std::max(Millis{1}, config.refresh / 10)),
      target_filters_(config.past_filters + non_past_filters()),
      now_(start),
      next_refresh_(start + config.refresh),
      next_adapt_(start + config.adapt_every) {
  if (!ring_filter_bits) {
    TurnOver(start);
    ring_filter_bits = slots_[0].bloom.bits();
  }
  const uint64_t filter_bytes = std::max<uint64_t>(1, *ring_filter_bits / 8);
  ring_bound_ = config.memory_limit_bytes == 0
                    ? UINT32_MAX
                    : static_cast<uint32_t>(std::min<uint64_t>(
                          config.max_filters, config.memory_limit_bytes / filter_bytes));
  advancing_to_ = start;
}

template <class C>
uint32_t BasicForgetfulFilter<C>::non_past_filters() const {
  return config_.check == MembershipCheck::kPairs ? 3 : 2;
}

template <class C>
uint64_t BasicForgetfulFilter<C>::NextSeed() {
  // Deterministic per filter generation, so a replica fed the same calls draws the
  // same seeds.
  return SeededMix(IdHash{config_.seed}, ++seeds_issued_);
}

template <class C>
typename BasicForgetfulFilter<C>::Slot BasicForgetfulFilter<C>::NewSlot() {
  const uint64_t seed = NextSeed();
  if (!spare_.empty()) {
    C bloom = std::move(spare_.back());
    spare_.pop_back();
    bloom.Reset(seed);
    return Slot{std::move(bloom)};
  }
  // Parameters were validated in Create.
  return Slot{std::move(MakeConstituent(Tag<C>{}, config_, seed)).value()};
}

template <class C>
void BasicForgetfulFilter<C>::PushFuture(Millis at) {
  slots_[0].left_future = at;
  slots_[1].left_present = at;
  slots_.insert(slots_.begin(), NewSlot());
}

template <class C>
bool BasicForgetfulFilter<C>::OldestDroppable(Millis at) const {
  const Slot& oldest = slots_.back();
  if (oldest.bloom.inserted() == 0) return true;
  // paper and any: the oldest is the last holder of the ids inserted while it was the
  // future. pairs: the oldest is the partner; dropping it breaks the pair that
  // holds the ids inserted while it was the present.
  const Millis last_needed =
      config_.check == MembershipCheck::kPairs ? oldest.left_present : oldest.left_future;
  return last_needed != Millis::max() && last_needed <= at - window_;
}

template <class C>
void BasicForgetfulFilter<C>::DropDroppable(Millis at, uint32_t keep) {
  keep = std::max(keep, non_past_filters());
  while (slots_.size() > keep && OldestDroppable(at)) {
    if (spare_.empty()) spare_.push_back(std::move(slots_.back().bloom));
    slots_.pop_back();
  }
}

template <class C>
void BasicForgetfulFilter<C>::ForgetOldest(Millis at) {
  const Slot& oldest = slots_.back();
  if (!OldestDroppable(std::max(at, advancing_to_))) {
    // The ids it was the last holder of were inserted before it stopped being the
    // future (the present, for pairs); OldestDroppable says which.
    const Millis last_needed =
        config_.check == MembershipCheck::kPairs ? oldest.left_present : oldest.left_future;
    forgotten_.Record(last_needed == Millis::max() ? at : last_needed - Millis{1},
                      oldest.bloom.inserted());
  }
  if (spare_.empty()) spare_.push_back(std::move(slots_.back().bloom));
  slots_.pop_back();
}

template <class C>
void BasicForgetfulFilter<C>::Refresh(Millis at) {
  // Drop first (down to one below the target) so that the dropped filter's memory
  // becomes the new future.
  DropDroppable(at, target_filters_ - 1);
  if (slots_.size() >= ring_bound_) ForgetOldest(at);
  PushFuture(at);
  RebuildViews();
}

template <class C>
void BasicForgetfulFilter<C>::TurnOver(Millis at) {
  for (Slot& slot : slots_) spare_.push_back(std::move(slot.bloom));
  slots_.clear();
  for (uint32_t i = 0; i < target_filters_; ++i) {
    Slot slot = NewSlot();
    if (i >= 1) slot.left_future = at;
    if (i >= 2) slot.left_present = at;
    slots_.push_back(std::move(slot));
  }
  while (spare_.size() > 1) spare_.pop_back();
  RebuildViews();
}

template <class C>
void BasicForgetfulFilter<C>::RefreshEarlyIfFull() {
  if (config_.slice_capacity == 0 || slots_[0].bloom.inserted() < config_.slice_capacity) return;
  // The full future holds ids of time now_: it stops being the future just after
  // them (a regular refresh at time t comes before any insert at t). At the bound the
  // oldest filter makes way, and what it held is counted as forgotten early.
  if (slots_.size() >= std::min(config_.max_filters, ring_bound_)) {
    // Unbounded, the future overfills (and the estimate shows it).
    if (config_.memory_limit_bytes == 0) return;
    ForgetOldest(now_);
  }
  PushFuture(now_ + Millis{1});
  // The new slice gets a whole period: at a steady load above the sizing, slices end
  // when full rather than alternating between full and nearly empty ones.
  next_refresh_ = now_ + refresh_;
  RebuildViews();
  ++early_refreshes_;
}

template <class C>
void BasicForgetfulFilter<C>::Adapt(Millis at) {
  if (!config_.adaptive) return;
  AdaptiveLimits limits;
  limits.target_fpp = config_.target_fpp;
  limits.window = window_;
  limits.refresh_step = refresh_step_;
  limits.min_filters = non_past_filters() + 1;
  limits.max_filters = std::min(config_.max_filters, ring_bound_);
  limits.non_past_filters = non_past_filters();
  // The recent insert rate, per ms, from the inserts since the last adaptation.
  const double rate_per_ms = static_cast<double>(inserted_ - inserted_at_last_adapt_) /
                             static_cast<double>(config_.adapt_every.count());
  inserted_at_last_adapt_ = inserted_;
  const auto projected = [&](const AdaptiveShape& shape) {
    FbfConfig c = config_;
    c.past_filters = shape.filters - non_past_filters();
    return SteadyStateWorstFpp(c, rate_per_ms * static_cast<double>(shape.refresh.count()),
                               config_.model);
  };
  const AdaptiveShape current{target_filters_, refresh_};
  const double estimate = EstimatedFpp(config_.model);
  AdaptiveDecision decision;
  if (config_.policy == ResizePolicy::kPaper) {
    decision = DecideResize(current, estimate, limits);
  } else {
    limits.max_refresh = config_.refresh;
    decision = DecideGuardedResize(current, estimate, projected, limits);
  }
  if (decision.action != AdaptiveAction::kScaleUp &&
      decision.action != AdaptiveAction::kScaleDown) {
    return;
  }
  Millis last_refresh = next_refresh_ - refresh_;
  refresh_ = decision.shape.refresh;
  target_filters_ = decision.shape.filters;
  if (decision.action == AdaptiveAction::kScaleUp) {
    // New filters enter as empty futures at once: ids already held move to older
    // positions together, so every pair that held an id still holds it. A push is
    // a refresh without the drop.
    if (slots_.size() < target_filters_) last_refresh = at;
    while (slots_.size() < target_filters_) PushFuture(at);
  } else {
    DropDroppable(at, target_filters_);
  }
  // The next refresh follows the last one by the new period; a shape change alone
  // never postpones it.
  next_refresh_ = std::max(at, last_refresh + refresh_);
  RebuildViews();
}

template <class C>
void BasicForgetfulFilter<C>::AdvanceTo(Millis now) {
  now = std::min(now, kMaxFilterTime);
  if (now <= now_) return;
  advancing_to_ = now;
  while (true) {
    // Checked at every step: an adaptation that shortens the period in the middle of a
    // long jump would otherwise leave billions of refreshes to run.
    if ((now - next_refresh_) / refresh_ > kFastForwardRefreshes) {
      // Every id was inserted before next_refresh_, more than kFastForwardRefreshes
      // periods before `now`, and the window is shorter than that (the shape covers
      // it with at most 4096 filters: Adapt and the decoder keep it so). Refreshing
      // period by period would turn the ring over into empty filters at O(filters) a
      // period; build that ring at once, as of the last refresh due. Adaptations due
      // before it would act on a ring that is gone.
      const Millis at = next_refresh_ + (now - next_refresh_) / refresh_ * refresh_;
      TurnOver(at);
      next_refresh_ = at + refresh_;
      if (next_adapt_ < at) {
        next_adapt_ += ((at - next_adapt_) / config_.adapt_every + 1) * config_.adapt_every;
      }
    }
    if ((now - next_adapt_) / config_.adapt_every > kFastForwardRefreshes) {
      next_adapt_ += (now - next_adapt_) / config_.adapt_every * config_.adapt_every;
    }
    const bool refresh_due = next_refresh_ <= now;
    const bool adapt_due = config_.adaptive && next_adapt_ <= now;
    if (!refresh_due && !adapt_due) break;
    if (refresh_due && (!adapt_due || next_refresh_ <= next_adapt_)) {
      Refresh(next_refresh_);
      next_refresh_ += refresh_;
    } else {
      const Millis at = next_adapt_;
      next_adapt_ += config_.adapt_every;
      Adapt(at);
    }
  }
  if (!config_.adaptive) next_adapt_ = std::max(next_adapt_, now);
  now_ = now;
}

template <class C>
void BasicForgetfulFilter<C>::RebuildViews() {
  views_.clear();
  for (Slot& slot : slots_) views_.push_back(slot.bloom.view());
}

template <class C>
Verdict BasicForgetfulFilter<C>::Check(IdHash hash, uint64_t mix0, uint64_t mix1) const {
  const size_t n = views_.size();
  uint64_t known = 0;
  uint64_t hit = 0;
  // Forced inline: as a class template's member, GCC stopped inlining this lambda
  // into the pair loops it had inlined it into before, and the blocked FBF's
  // dedup_benchmark lost 5-10% at 1e5 ids; forced, it is back at the old speed.
  const auto test = [&](size_t i) __attribute__((always_inline)) {
    if (i >= 64) return views_[i].MayContain(hash);
    const uint64_t bit = uint64_t{1} << i;
    if ((known & bit) == 0) {
      known |= bit;
      const uint64_t mixed = i == 0 ? mix0 : i == 1 ? mix1 : views_[i].Mix(hash);
      if (views_[i].MayContainMixed(mixed)) hit |= bit;
    }
    return (hit & bit) != 0;
  };
  const size_t oldest_pair = n - 2;
  if (config_.check == MembershipCheck::kPairs) {
    // Every adjacent pair contains an odd index: test those first; a miss there
    // rules out both pairs it belongs to.
    for (size_t i = 1; i < n; i += 2) {
      if (!test(i)) continue;
      if (test(i - 1))
        return i - 1 == oldest_pair ? Verdict::kDuplicateNearEdge : Verdict::kDuplicate;
      if (i + 1 < n && test(i + 1)) {
        return i == oldest_pair ? Verdict::kDuplicateNearEdge : Verdict::kDuplicate;
      }
    }
    return Verdict::kNew;
  }
  if (config_.check == MembershipCheck::kAny) {
    for (size_t i = 0; i < n; ++i) {
      if (test(i)) return i == n - 1 ? Verdict::kDuplicateNearEdge : Verdict::kDuplicate;
    }
    return Verdict::kNew;
  }
  // Algorithm 2: future alone; pairs from (present, past 1) to (past N-1, past N),
  // covered by the even indices; the oldest alone last. Near-edge is the lone
  // oldest test: those ids go at the next refresh, while ids of the oldest pair
  // still have one more period.
  if (test(0)) return Verdict::kDuplicate;
  for (size_t i = 2; i < n; i += 2) {
    if (!test(i)) continue;
    if (test(i - 1) || (i + 1 < n && test(i + 1))) return Verdict::kDuplicate;
  }
  return test(n - 1) ? Verdict::kDuplicateNearEdge : Verdict::kNew;
}

template <class C>
Verdict BasicForgetfulFilter<C>::TestAndInsert(IdHash hash) {
  // Both mixes are needed for a new id (90% of a typical load): compute them once.
  const uint64_t mix0 = views_[0].Mix(hash);
  const uint64_t mix1 = views_[1].Mix(hash);
  const Verdict verdict = Check(hash, mix0, mix1);
  if (verdict == Verdict::kNew) {
    // Algorithm 1: into the future and the present.
    views_[0].InsertMixed(mix0);
    views_[1].InsertMixed(mix1);
    slots_[0].bloom.CountInsert();
    slots_[1].bloom.CountInsert();
    ++inserted_;
    RefreshEarlyIfFull();
  } else {
    ++duplicates_;
    if (verdict == Verdict::kDuplicateNearEdge) ++near_edge_;
  }
  return verdict;
}

template <class C>
void BasicForgetfulFilter<C>::TestAndInsertBatch(std::span<const IdHash> hashes,
                                                 std::span<Verdict> verdicts) {
  const size_t n = views_.size();
  const auto prefetch = [&](IdHash h) {
    views_[0].Prefetch(h);
    if (config_.check == MembershipCheck::kPairs) {
      for (size_t i = 1; i < n; i += 2) views_[i].Prefetch(h);
      return;
    }
    views_[1].Prefetch(h);
    views_[n - 1].Prefetch(h);
    for (size_t i = 2; i < n; i += 2) views_[i].Prefetch(h);
  };
  const size_t count = std::min(hashes.size(), verdicts.size());
  for (size_t i = 0; i < std::min(count, kPrefetchDistance); ++i) prefetch(hashes[i]);
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchDistance < count) prefetch(hashes[i + kPrefetchDistance]);
    verdicts[i] = TestAndInsert(hashes[i]);
  }
}

template <class C>
double BasicForgetfulFilter<C>::EstimatedFpp(ConstituentModel model) const {
  std::vector<double> p;
  p.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    if (model == ConstituentModel::kClassic) {
      p.push_back(ConstituentFppOf(slot.bloom, model));
      continue;
    }
    if (slot.fpp_cached_for != slot.bloom.inserted()) {
      slot.fpp_cached = ConstituentFppOf(slot.bloom, model);
      slot.fpp_cached_for = slot.bloom.inserted();
    }
    p.push_back(slot.fpp_cached);
  }
  return CheckFpp(config_.check, p);
}

template <class C>
Millis BasicForgetfulFilter<C>::GuaranteedWindow() const {
  // The window a filter is dropped by (OldestDroppable), not the shape's nominal
  // window: after early refreshes or a resize the ring may span less than
  // (past filters + 1) * refresh, never less than this, unless the memory bound
  // dropped filters early.
  return forgotten_.Held(now_, window_);
}

template <class C>
FilterSummary BasicForgetfulFilter<C>::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kFbf;
  s.constituent =
      std::is_same_v<C, GaussianBloom> ? Constituent::kGaussian : Constituent::kBlockedBloom;
  s.inserted = inserted_;
  s.duplicates = duplicates_;
  s.near_edge_duplicates = near_edge_;
  s.early_refreshes = early_refreshes_;
  s.estimated_fpp = EstimatedFpp(ConstituentModel::kBlocked);
  s.estimated_fpp_eq1 = EstimatedFpp(ConstituentModel::kClassic);
  s.filters = static_cast<uint32_t>(slots_.size());
  s.bits_total = 0;
  for (const Slot& slot : slots_) {
    s.bits_total += slot.bloom.bits();
    ConstituentSummary c;
    c.inserted = slot.bloom.inserted();
    c.fill = slot.bloom.FillRatio();
    c.estimated_fpp = ConstituentFppOf(slot.bloom, ConstituentModel::kBlocked);
    s.constituents.push_back(c);
  }
  s.refresh_ms = refresh_.count();
  s.window_ms_guaranteed = GuaranteedWindow().count();
  s.window_ms_configured = window_.count();
  s.memory_limit_bytes = config_.memory_limit_bytes;
  s.forgotten_early = forgotten_.ids;
  return s;
}

template <class C>
void BasicForgetfulFilter<C>::Serialize(std::string& out) const {
  FbfStateCodec::Encode(*this, out);
}

template class BasicForgetfulFilter<BlockedBloom>;
template class BasicForgetfulFilter<GaussianBloom>;

}  // namespace oncecount::filter
