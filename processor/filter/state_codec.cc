#include "processor/filter/state_codec.h"

#include <bit>
#include <cstring>
#include <new>
#include <optional>
#include <vector>

#include "processor/base/byte_io.h"
#include "processor/filter/bloom/cell_coding.h"
#include "processor/filter/bloom/forgetful_bloom_filter.h"
#include "processor/filter/bloom/plain_bloom_dedup.h"
#include "processor/filter/exact_window_dedup.h"
#include "processor/filter/fingerprint/fingerprint_state_codec.h"
#include "processor/filter/no_dedup.h"

namespace oncecount::filter {
namespace {

// Every codec writes its payload inside the common frame.
template <class Body>
void Frame(DedupMode mode, std::string& out, Body&& body, uint8_t constituent = 0) {
  WriteStateFrame(mode, constituent, out, body);
}

base::Result<std::unique_ptr<DedupFilter>> DecodeFramed(std::string_view bytes,
                                                        const DecodeLimits& limits);

}  // namespace

base::Result<std::unique_ptr<DedupFilter>> DecodeDedupFilter(std::string_view bytes,
                                                             const DecodeLimits& limits) {
  try {
    auto bounded = DecodeFramed(bytes, limits);
    if (bounded || limits.bound_if_none == 0) return bounded;
    // A state without a bound of its own that holds more than bound_if_none already
    // (format 2 let a filter grow past any bound: a ring past max_filters, more ids)
    // is read as it was written, without one: refusing it would fail its shard for
    // good, and trimming it would drop ids of its window. Its owner says so
    // (FilterSummary::GrowsWithoutABound). A state that declares a bound decodes the
    // same either way, so its error stands.
    return DecodeFramed(bytes, DecodeLimits{.bound_if_none = 0, .most = limits.most});
  } catch (const std::bad_alloc&) {
    return CorruptState("cannot allocate the decoded filter");
  }
}

namespace {

base::Result<std::unique_ptr<DedupFilter>> DecodeFramed(std::string_view bytes,
                                                        const DecodeLimits& limits) {
  auto frame = ReadStateFrame(bytes);
  if (!frame) return frame.error();
  const uint8_t mode = frame->mode;
  const uint8_t constituent = frame->constituent;
  const std::string_view body = frame->payload;
  if (constituent > kFingerprintConstituent ||
      (constituent != 0 && static_cast<DedupMode>(mode) != DedupMode::kFbf)) {
    return CorruptState("unknown constituent " + std::to_string(constituent));
  }
  switch (static_cast<DedupMode>(mode)) {
    case DedupMode::kFbf:
      if (constituent == kFingerprintConstituent) {
        return FingerprintStateCodec::Decode(body, frame->version, limits);
      }
      return constituent == 1 ? FbfStateCodec::DecodeGaussian(body, frame->version, limits)
                              : FbfStateCodec::Decode(body, frame->version, limits);
    case DedupMode::kGaussian:
      return CorruptState(
          "mode gaussian is filter-eval's single Gaussian filter, not a service filter "
          "(DecodeExperimentFilter reads it)");
    case DedupMode::kBloom:
      return BloomStateCodec::Decode(body);
    case DedupMode::kExact:
      return ExactStateCodec::Decode(body, frame->version, limits);
    case DedupMode::kNone:
      return NoneStateCodec::Decode(body);
  }
  return CorruptState("unknown mode " + std::to_string(mode));
}

}  // namespace

// FBF payload: config, then the constituent's parameters (Gaussian only), then
// clock and shape, then counters, then the slots (future first), each with its seed,
// count, phase times and bits (or cells).
template <class C, class WriteParams, class WriteSlot>
void FbfStateCodec::EncodeWith(const BasicForgetfulFilter<C>& f, std::string& out,
                               uint8_t constituent, WriteParams&& params, WriteSlot&& slot_bits) {
  Frame(
      DedupMode::kFbf, out,
      [&](base::ByteWriter& w) {
        const FbfConfig& c = f.config_;
        w.U64(c.bits_per_filter);
        w.U32(static_cast<uint32_t>(c.hashes));
        w.U32(c.block_bits);
        w.U32(c.past_filters);
        w.Ms(c.refresh);
        w.U8(static_cast<uint8_t>(c.check));
        w.Ms(c.window);
        w.U8(c.adaptive ? 1 : 0);
        w.F64(c.target_fpp);
        w.Ms(c.refresh_step);
        w.U32(c.max_filters);
        w.Ms(c.adapt_every);
        w.U8(static_cast<uint8_t>(c.model));
        w.U64(c.seed);
        w.U8(static_cast<uint8_t>(c.policy));
        w.U64(c.slice_capacity);
        w.U64(c.memory_limit_bytes);
        params(w, c);
        w.Ms(f.refresh_);
        w.U32(f.target_filters_);
        w.Ms(f.now_);
        w.Ms(f.next_refresh_);
        w.Ms(f.next_adapt_);
        w.U64(f.seeds_issued_);
        w.U64(f.inserted_);
        w.U64(f.duplicates_);
        w.U64(f.near_edge_);
        w.U64(f.inserted_at_last_adapt_);
        w.U64(f.early_refreshes_);
        WriteEarlyForgetting(w, f.forgotten_);
        w.U32(static_cast<uint32_t>(f.slots_.size()));
        for (const auto& slot : f.slots_) {
          w.U64(slot.bloom.seed());
          w.U64(slot.bloom.inserted());
          w.Ms(slot.left_future);
          w.Ms(slot.left_present);
          slot_bits(w, slot.bloom);
        }
      },
      constituent);
}

void FbfStateCodec::Encode(const ForgetfulBloomFilter& f, std::string& out) {
  EncodeWith(
      f, out, 0, [](base::ByteWriter&, const FbfConfig&) {},
      [](base::ByteWriter& w, const BlockedBloom& b) { w.Words(b.words()); });
}

void FbfStateCodec::Encode(const GaussianForgetfulFilter& f, std::string& out) {
  EncodeWith(
      f, out, 1,
      [](base::ByteWriter& w, const FbfConfig& c) {
        w.U8(static_cast<uint8_t>(c.cell_bits));
        w.U8(static_cast<uint8_t>(c.exp));
      },
      [](base::ByteWriter& w, const GaussianBloom& g) { w.Words(g.words()); });
}

template <class ReadParams>
base::Result<FbfConfig> FbfStateCodec::ReadConfig(base::ByteReader& r, uint16_t version,
                                                  const DecodeLimits& limits, ReadParams&& params) {
  FbfConfig c;
  c.bits_per_filter = r.U64();
  c.hashes = static_cast<int>(r.U32());
  c.block_bits = r.U32();
  c.past_filters = r.U32();
  c.refresh = r.Ms();
  const uint8_t check = r.U8();
  c.window = r.Ms();
  c.adaptive = r.U8() != 0;
  c.target_fpp = r.F64();
  c.refresh_step = r.Ms();
  c.max_filters = r.U32();
  c.adapt_every = r.Ms();
  const uint8_t model = r.U8();
  c.seed = r.U64();
  const uint8_t policy = r.U8();
  c.slice_capacity = r.U64();
  if (version >= kStateFormatVersion) c.memory_limit_bytes = r.U64();
  const base::Status params_read = params(r, c);
  if (!r.ok()) return CorruptState("truncated fbf config");
  if (!params_read) return params_read.error();
  base::Result<uint64_t> bound = limits.BoundFor(c.memory_limit_bytes);
  if (!bound) return bound.error();
  c.memory_limit_bytes = bound.value();
  if (check > 2 || model > 1 || policy > 1) return CorruptState("bad check, model or policy");
  c.policy = static_cast<ResizePolicy>(policy);
  c.check = static_cast<MembershipCheck>(check);
  c.model = static_cast<ConstituentModel>(model);
  return c;
}

template <class C>
base::Status FbfStateCodec::ReadClock(base::ByteReader& r, uint16_t version,
                                      BasicForgetfulFilter<C>& f, uint32_t& slots) {
  f.refresh_ = r.Ms();
  f.target_filters_ = r.U32();
  f.now_ = r.Ms();
  f.next_refresh_ = r.Ms();
  f.next_adapt_ = r.Ms();
  f.seeds_issued_ = r.U64();
  f.inserted_ = r.U64();
  f.duplicates_ = r.U64();
  f.near_edge_ = r.U64();
  f.inserted_at_last_adapt_ = r.U64();
  f.early_refreshes_ = r.U64();
  if (version >= kStateFormatVersion && !ReadEarlyForgetting(r, f.now_, f.forgotten_)) {
    return CorruptState("fbf early forgetting out of range");
  }
  f.advancing_to_ = f.now_;
  slots = r.U32();
  if (!r.ok()) return CorruptState("truncated fbf state");
  // Under a memory bound the ring never holds more than ring_bound (with none, and in
  // format 2, refreshes with nothing droppable may grow it).
  if (f.refresh_.count() <= 0 || f.refresh_ > kMaxPeriod ||
      f.target_filters_ < f.non_past_filters() + 1 ||
      f.target_filters_ > std::min(f.config_.max_filters, f.ring_bound_) ||
      slots < f.non_past_filters() + 1 || slots > std::min<uint32_t>(4096, f.ring_bound_)) {
    return CorruptState("fbf shape out of range");
  }
  // Adaptation keeps the shape's nominal window, (past filters + 1) x the period, at
  // least the window; AdvanceTo's jump relies on it.
  const int64_t periods = int64_t{f.target_filters_} - f.non_past_filters() + 1;
  if (f.refresh_ < Millis{(f.window_.count() + periods - 1) / periods}) {
    return CorruptState("fbf refresh period too short for its window");
  }
  // AdvanceTo leaves now < next refresh <= now + refresh, and the next adaptation
  // within one interval of now.
  if (f.now_ > kMaxFilterTime || f.now_ < -kMaxFilterTime || f.next_refresh_ <= f.now_ ||
      f.next_refresh_ > f.now_ + f.refresh_ || f.next_adapt_ < f.now_ ||
      f.next_adapt_ > f.now_ + f.config_.adapt_every) {
    return CorruptState("fbf clock out of range");
  }
  // Counts only grow, and adaptation reads them as a difference: a count at the last
  // adaptation above the total would wrap.
  if (f.inserted_at_last_adapt_ > f.inserted_ || f.inserted_ > kMaxFilterCount ||
      f.duplicates_ > kMaxFilterCount) {
    return CorruptState("fbf counts out of range");
  }
  return {};
}

template <class C, class ReadSlot>
base::Status FbfStateCodec::ReadSlots(base::ByteReader& r, BasicForgetfulFilter<C>& f,
                                      uint32_t slots, ReadSlot&& slot_bits) {
  f.slots_.clear();
  f.spare_.clear();
  // An early refresh leaves a filter at now + 1 ms (forgetful_bloom_filter.h).
  const auto valid_time = [&](Millis t) { return t == Millis::max() || t <= f.now_ + Millis{1}; };
  for (uint32_t i = 0; i < slots; ++i) {
    const uint64_t seed = r.U64();
    const uint64_t inserted = r.U64();
    const Millis left_future = r.Ms();
    const Millis left_present = r.Ms();
    if (!valid_time(left_future) || !valid_time(left_present)) {
      return CorruptState("fbf filter times out of range");
    }
    // Each new id goes into two filters and counts once in the total.
    if (inserted > f.inserted_) return CorruptState("fbf filter count above the total");
    base::Result<C> constituent = slot_bits(r, f.config_, seed, inserted);
    if (!constituent) return CorruptState(constituent.message());
    f.slots_.push_back({std::move(constituent).value(), left_future, left_present});
  }
  return {};
}

template <class C, class ReadParams, class ReadSlot>
base::Result<std::unique_ptr<DedupFilter>> FbfStateCodec::DecodeWith(std::string_view payload,
                                                                     uint16_t version,
                                                                     const DecodeLimits& limits,
                                                                     ReadParams&& params,
                                                                     ReadSlot&& slot_bits) {
  base::ByteReader r(payload);
  base::Result<FbfConfig> config = ReadConfig(r, version, limits, params);
  if (!config) return config.error();
  // Not Create: it would allocate the configured ring, which a state may declare far
  // larger than the filters its bytes hold.
  auto created = BasicForgetfulFilter<C>::CreateForDecode(config.value());
  if (!created) return CorruptState(created.message());
  BasicForgetfulFilter<C> f = std::move(created).value();
  uint32_t slots = 0;
  if (base::Status s = ReadClock(r, version, f, slots); !s) return std::move(s).error();
  if (base::Status s = ReadSlots(r, f, slots, slot_bits); !s) return std::move(s).error();
  if (!r.done()) return CorruptState("trailing bytes after fbf state");
  f.RebuildViews();
  return std::unique_ptr<DedupFilter>(new BasicForgetfulFilter<C>(std::move(f)));
}

base::Result<std::unique_ptr<DedupFilter>> FbfStateCodec::Decode(std::string_view payload,
                                                                 uint16_t version,
                                                                 const DecodeLimits& limits) {
  std::vector<uint64_t> words;
  return DecodeWith<BlockedBloom>(
      payload, version, limits,
      [&](base::ByteReader&, const FbfConfig& c) -> base::Status {
        // Every filter's bits are in the payload: refuse to allocate more than it holds.
        if (c.bits_per_filter / 8 > payload.size()) {
          return CorruptState("filter size beyond the payload");
        }
        return {};
      },
      [&](base::ByteReader& r, const FbfConfig& c, uint64_t seed,
          uint64_t inserted) -> base::Result<BlockedBloom> {
        auto bloom = BlockedBloom::Create(c.bits_per_filter, c.hashes, seed, c.block_bits);
        if (!bloom) return bloom.error();
        if (!r.Words(words, bloom->words().size())) return base::Corrupt("truncated filter bits");
        bloom->Restore(words, inserted);
        return bloom;
      });
}

base::Result<std::unique_ptr<DedupFilter>> FbfStateCodec::DecodeGaussian(
    std::string_view payload, uint16_t version, const DecodeLimits& limits) {
  std::vector<uint64_t> words;
  return DecodeWith<GaussianBloom>(
      payload, version, limits,
      [&](base::ByteReader& r, FbfConfig& c) -> base::Status {
        c.cell_bits = r.U8();
        const uint8_t exp = r.U8();
        if (!ValidCellBits(static_cast<int>(c.cell_bits)) || exp > 1) {
          return CorruptState("bad cell bits or exponential");
        }
        c.exp = static_cast<ExpKind>(exp);
        if (c.bits_per_filter / 8 > payload.size() / c.cell_bits) {
          return CorruptState("filter size beyond the payload");
        }
        return {};
      },
      [&](base::ByteReader& r, const FbfConfig& c, uint64_t seed,
          uint64_t inserted) -> base::Result<GaussianBloom> {
        auto g = GaussianBloom::Create(
            {c.bits_per_filter, c.hashes, static_cast<int>(c.cell_bits), c.exp, seed});
        if (!g) return g.error();
        if (!r.Words(words, g->words().size())) return base::Corrupt("truncated filter cells");
        if (!ValidCellWords(words, g->cell_bits()))
          return base::Corrupt("cell above the peak value");
        g->Restore(words, inserted);
        return g;
      });
}

void BloomStateCodec::Encode(const PlainBloomDedup& f, std::string& out) {
  Frame(DedupMode::kBloom, out, [&](base::ByteWriter& w) {
    w.U64(f.bloom_.bits());
    w.U32(static_cast<uint32_t>(f.bloom_.hashes()));
    w.U32(f.bloom_.block_bits());
    w.U64(f.bloom_.seed());
    w.U64(f.bloom_.inserted());
    w.Ms(f.now_);
    w.U64(f.duplicates_);
    w.Words(f.bloom_.words());
  });
}

base::Result<std::unique_ptr<DedupFilter>> BloomStateCodec::Decode(std::string_view payload) {
  base::ByteReader r(payload);
  const uint64_t bits = r.U64();
  const int hashes = static_cast<int>(r.U32());
  const uint32_t block_bits = r.U32();
  const uint64_t seed = r.U64();
  const uint64_t inserted = r.U64();
  const Millis now = r.Ms();
  const uint64_t duplicates = r.U64();
  if (!r.ok()) return CorruptState("truncated bloom state");
  if (bits / 8 > payload.size()) return CorruptState("filter size beyond the payload");
  auto created = PlainBloomDedup::Create(bits, hashes, seed, block_bits);
  if (!created) return CorruptState(created.message());
  PlainBloomDedup f = std::move(created).value();
  std::vector<uint64_t> words;
  if (!r.Words(words, f.bloom_.words().size())) return CorruptState("truncated filter bits");
  if (!r.done()) return CorruptState("trailing bytes after bloom state");
  f.bloom_.Restore(words, inserted);
  f.now_ = now;
  f.duplicates_ = duplicates;
  return std::unique_ptr<DedupFilter>(new PlainBloomDedup(std::move(f)));
}

// Exact payload: window, memory bound (format 3), clock, counters, early forgetting
// (format 3), the FIFO's length, then the FIFO (oldest first); the table is rebuilt
// from the FIFO, which holds exactly its members.
void ExactStateCodec::Encode(const ExactWindowDedup& f, std::string& out) {
  Frame(DedupMode::kExact, out, [&](base::ByteWriter& w) {
    w.Ms(f.window_);
    w.U64(f.memory_limit_bytes_);
    w.Ms(f.now_);
    w.U64(f.inserted_);
    w.U64(f.duplicates_);
    WriteEarlyForgetting(w, f.forgotten_);
    w.U64(f.fifo_.size());
    for (const auto& e : f.fifo_) {
      w.U64(e.key);
      w.Ms(e.at);
    }
  });
}

base::Result<std::unique_ptr<DedupFilter>> ExactStateCodec::Decode(std::string_view payload,
                                                                   uint16_t version,
                                                                   const DecodeLimits& limits) {
  base::ByteReader r(payload);
  const bool bounded = version >= kStateFormatVersion;
  const Millis window = r.Ms();
  const base::Result<uint64_t> bound = limits.BoundFor(bounded ? r.U64() : 0);
  if (!bound) return bound.error();
  const uint64_t memory_limit_bytes = bound.value();
  const Millis now = r.Ms();
  const uint64_t inserted = r.U64();
  const uint64_t duplicates = r.U64();
  EarlyForgetting forgotten;
  if (bounded && !ReadEarlyForgetting(r, now, forgotten)) {
    return CorruptState("exact early forgetting out of range");
  }
  const uint64_t entries = r.U64();
  if (!r.ok()) return CorruptState("truncated exact state");
  if (window.count() <= 0 || window > kMaxPeriod || now > kMaxFilterTime || now < -kMaxFilterTime ||
      entries > (payload.size() / 16) ||
      entries > ExactWindowDedup::MaxIdsWithin(memory_limit_bytes) ||
      ExactWindowDedup::MaxIdsWithin(memory_limit_bytes) == 0) {
    return CorruptState("exact shape out of range");
  }
  ExactWindowDedup f(window, ExactWindowDedup::CapacityFor(entries), now, memory_limit_bytes);
  f.forgotten_ = forgotten;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t key = r.U64();
    const Millis at = r.Ms();
    if (key == 0 || f.Find(key)) return CorruptState("bad or repeated key in exact state");
    // Bounded below as the clock is: an entry forgotten at the memory bound becomes
    // the time forgotten until, which the early-forgetting reader bounds so (a state
    // this filter would write and then refuse), and which a window is taken from.
    if (at > now || at < -kMaxFilterTime || (!f.fifo_.empty() && at < f.fifo_.back().at)) {
      return CorruptState("exact entries out of time order or range");
    }
    f.Add(key);
    f.fifo_.push_back({key, at});
  }
  if (!r.done()) return CorruptState("trailing bytes after exact state");
  f.inserted_ = inserted;
  f.duplicates_ = duplicates;
  return std::unique_ptr<DedupFilter>(new ExactWindowDedup(std::move(f)));
}

void NoneStateCodec::Encode(const NoDedup& f, std::string& out) {
  Frame(DedupMode::kNone, out, [&](base::ByteWriter& w) { w.U64(f.inserted_); });
}

base::Result<std::unique_ptr<DedupFilter>> NoneStateCodec::Decode(std::string_view payload) {
  base::ByteReader r(payload);
  auto f = std::make_unique<NoDedup>();
  f->inserted_ = r.U64();
  if (!r.done()) return CorruptState("bad none state");
  return std::unique_ptr<DedupFilter>(std::move(f));
}

}  // namespace oncecount::filter
