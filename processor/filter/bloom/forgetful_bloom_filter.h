// ForgetfulBloomFilter: the N-FBF of the paper — a future, a present and N past
// blocked Bloom filters that slide over time — with the paper's membership check
// (Algorithm 2), our all-pairs check, and adaptive resizing (Algorithm 3).
//
// Layout, index 0 first:  future | present | past 1 (newest) ... past N (oldest)
// [| partner, pairs check only]. A new id goes into future and present (Algorithm
// 1), so every id sits in two adjacent filters. A refresh (every refresh period)
// pushes a new empty future and drops the oldest filter.
//
// Early refreshes (slice_capacity > 0): once the future holds slice_capacity ids, a
// new future is pushed at once, without a drop, and the refresh period starts over.
// A burst far above the rate the filters were sized for then lengthens the ring by
// full slices instead of overfilling two filters: the false-positive rate grows with
// the ring's length rather than exponentially with the overfill, while the adaptive
// policy (once a second) catches up. The ring stops growing at max_filters. The push
// depends only on the sequence of inserts, so replicas fed the same calls push at
// the same points.
//
// The window is a hard invariant, enforced here and not only by the policy, within
// the memory bound: a filter is dropped only when every id whose last holder it is
// was inserted at least `window` ago. When adaptation shortens the refresh period
// faster than filters are added, the filter ring grows instead of forgetting early.
//
// Memory bound (memory_limit_bytes; the service always sets one): the ring holds at
// most max_filters filters, fewer if the bound holds fewer (ring_bound). A ring at
// that size that must push a filter (a full future: the clock stopped while ids kept
// coming, or the load outgrew the ring; or a refresh with nothing droppable) drops its
// oldest filter although it still holds ids of the window, and records it
// (early_forgetting.h); the guaranteed window then reports what the ring really
// holds. Overfilling the future instead would break the false-positive target without
// bound. Without a memory bound (filter-eval's experiments) nothing is forgotten
// early: the future overfills at max_filters, and refreshes may grow the ring.
//
// Membership checks (filters are independent: each derives its bits from its own
// seed, see blocked_bloom.h):
//  - kPaper: future alone, or an adjacent pair among present..oldest, or the
//    oldest alone. (The published pseudocode's else-if chain never reaches the
//    oldest-alone test when N > 1; that reading loses ids and is not used.)
//  - kPairs: any adjacent pair, with one extra partner filter kept so that the
//    oldest slice is still held by a pair.
//
// Constituents (dedup.filter): the window logic above is a class template over the
// constituent filter. ForgetfulBloomFilter has BlockedBloom constituents (the
// default, and the state format pinned by state_codec_test); GaussianForgetfulFilter
// has GaussianBloom constituents (gaussian_bloom.h) with bits_per_filter cells of
// cell_bits bits each. Its model estimate is the underlying classic Bloom filter's
// (Equation 1 on the cells), an upper bound by Lemma 2 of the Gaussian paper, so
// sizing and adaptation stay on the safe side. Both instantiations are compiled in
// forgetful_bloom_filter.cc.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "processor/base/enum_names.h"
#include "processor/base/result.h"
#include "processor/filter/bloom/adaptive_policy.h"
#include "processor/filter/bloom/blocked_bloom.h"
#include "processor/filter/bloom/fpp_model.h"
#include "processor/filter/bloom/gaussian_bloom.h"
#include "processor/filter/bloom/membership_check.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/early_forgetting.h"

namespace oncecount::filter {

// Which decision function adaptation uses (adaptive_policy.h).
enum class ResizePolicy : uint8_t { kGuarded = 0, kPaper = 1 };

inline constexpr std::array<base::EnumName<ResizePolicy>, 2> kResizePolicyNames = {{
    {ResizePolicy::kGuarded, "guarded"},
    {ResizePolicy::kPaper, "paper"},
}};

struct FbfConfig {
  uint64_t bits_per_filter = 0;
  int hashes = 0;
  uint32_t block_bits = kBlockBits;  // 512 (one cache line) or 1024 (two)
  uint32_t past_filters = 0;         // N >= 1
  Millis refresh{0};                 // t > 0
  MembershipCheck check = MembershipCheck::kPairs;
  Millis window{0};  // 0: the nominal window (N + 1) * t
  bool adaptive = false;
  double target_fpp = 1e-6;  // used by adaptation
  Millis refresh_step{0};    // 0: refresh / 10 (at least 1 ms)
  uint32_t max_filters = 64;
  // Bytes the constituent filters may take together; 0: max_filters alone bounds them.
  uint64_t memory_limit_bytes = 0;
  Millis adapt_every{1000};  // Algorithm 3 runs once per second of the clock
  // Ids one slice may take before the future is pushed early; 0: never early (the
  // paper). SizeFbf sets it with SliceCapacity (sizing.h).
  uint64_t slice_capacity = 0;
  ConstituentModel model = ConstituentModel::kBlocked;  // drives adaptation
  ResizePolicy policy = ResizePolicy::kGuarded;
  uint64_t seed = 0x6F6E6365636F756EULL;
  // Gaussian constituents only (GaussianForgetfulFilter): bits per cell, 4, 8 or 64
  // (double), and the exponential the kernels are computed with. bits_per_filter
  // then counts cells, and a filter's memory is bits_per_filter * cell_bits.
  uint32_t cell_bits = 8;
  ExpKind exp = ExpKind::kFast;
};

template <class Constituent>
class BasicForgetfulFilter final : public DedupFilter {
 public:
  // Validates the configuration; errors name the offending field.
  static base::Result<BasicForgetfulFilter> Create(const FbfConfig& config, Millis start);

  BasicForgetfulFilter(BasicForgetfulFilter&&) noexcept = default;
  BasicForgetfulFilter& operator=(BasicForgetfulFilter&&) noexcept = default;

  DedupMode mode() const override { return DedupMode::kFbf; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override {
    return Check(hash, views_[0].Mix(hash), views_[1].Mix(hash)) != Verdict::kNew;
  }
  Verdict TestAndInsert(IdHash hash) override;
  void TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

  // The model estimate now, with `model` per constituent filter.
  double EstimatedFpp(ConstituentModel model) const;

  const FbfConfig& config() const { return config_; }
  uint32_t filter_count() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t target_filters() const { return target_filters_; }
  Millis refresh_period() const { return refresh_; }
  Millis window() const { return window_; }
  // The window every id is held for: the configured one, less while ids inserted
  // within it were dropped at the memory bound.
  Millis GuaranteedWindow() const;
  // The most filters the ring holds under its memory bound: max_filters, or fewer
  // when the bound holds fewer (UINT32_MAX without a bound).
  uint32_t ring_bound() const { return ring_bound_; }
  const EarlyForgetting& forgotten_early() const { return forgotten_; }
  Millis now() const { return now_; }
  // Refreshes that came early because the future reached slice_capacity.
  uint64_t early_refreshes() const { return early_refreshes_; }

 private:
  friend struct FbfStateCodec;

  // BloomView for BlockedBloom, GaussianView for GaussianBloom.
  using View = std::remove_cvref_t<decltype(std::declval<Constituent&>().view())>;

  struct Slot {
    Constituent bloom;
    // When the filter stopped being the future (ids whose last holder it is were
    // inserted before this) and stopped being the present (no inserts after this).
    // An early refresh at clock time t sets them to t + 1 ms: ids of time t are in.
    Millis left_future = Millis::max();
    Millis left_present = Millis::max();
    // The blocked model is costly (a Poisson sum); past filters no longer change,
    // so their estimate is kept until their count does.
    mutable uint64_t fpp_cached_for = UINT64_MAX;
    mutable double fpp_cached = 0;
  };

  // With `ring_filter_bits` nullopt, a ring of target_filters empty filters (Create);
  // else no filter at all, the ring bound reckoned for filters of that many bits:
  // for the decoder, which reads the filters a state holds and must allocate no more
  // than its bytes hold (CreateForDecode).
  BasicForgetfulFilter(FbfConfig config, Millis start, std::optional<uint64_t> ring_filter_bits);
  // The configuration checked as Create checks it, and no filter allocated but one, to
  // learn a filter's size: a state's configured ring may be far larger than the
  // filters it holds.
  static base::Result<BasicForgetfulFilter> CreateForDecode(const FbfConfig& config);
  uint32_t non_past_filters() const;
  uint64_t NextSeed();
  Slot NewSlot();
  void PushFuture(Millis at);  // a refresh without the drop
  bool OldestDroppable(Millis at) const;
  // Drops the oldest filter while more than `keep` remain and it is droppable.
  void DropDroppable(Millis at, uint32_t keep);
  // At the bound: drops the oldest filter even if it still holds ids of the window,
  // and records them.
  void ForgetOldest(Millis at);
  void Refresh(Millis at);
  // A ring of target_filters empty filters as if refreshed at `at`: the first ring, and
  // the ring after a jump of the clock past every id's window.
  void TurnOver(Millis at);
  // After an insert: pushes a new future when the current one is full.
  void RefreshEarlyIfFull();
  void Adapt(Millis at);
  void RebuildViews();
  // mix0/mix1: the future's and the present's Mix(hash), shared with the insert.
  Verdict Check(IdHash hash, uint64_t mix0, uint64_t mix1) const;

  FbfConfig config_;
  Millis window_{0};
  Millis refresh_{0};
  Millis refresh_step_{0};
  uint32_t target_filters_ = 0;
  uint32_t ring_bound_ = 0;
  EarlyForgetting forgotten_;
  // The clock AdvanceTo is moving to (now_ between calls): a filter dropped at the
  // bound during its refreshes counts as forgotten early only if its ids are still
  // inside the window then. Follows from the calls; not serialized.
  Millis advancing_to_{0};
  Millis now_{0};
  Millis next_refresh_{0};
  Millis next_adapt_{0};
  uint64_t seeds_issued_ = 0;
  std::vector<Slot> slots_;
  std::vector<View> views_;         // views_[i] is slots_[i].bloom's hot-path view
  std::vector<Constituent> spare_;  // dropped filters kept for reuse
  uint64_t inserted_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t near_edge_ = 0;
  uint64_t inserted_at_last_adapt_ = 0;
  uint64_t early_refreshes_ = 0;
};

using ForgetfulBloomFilter = BasicForgetfulFilter<BlockedBloom>;
using GaussianForgetfulFilter = BasicForgetfulFilter<GaussianBloom>;
extern template class BasicForgetfulFilter<BlockedBloom>;
extern template class BasicForgetfulFilter<GaussianBloom>;

}  // namespace oncecount::filter
