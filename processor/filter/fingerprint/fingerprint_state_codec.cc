#include "processor/filter/fingerprint/fingerprint_state_codec.h"

#include <new>
#include <vector>

#include "processor/base/byte_io.h"
#include "processor/filter/fingerprint/forgetful_fingerprint_filter.h"
#include "processor/filter/state_frame.h"

namespace oncecount::filter {

template <class W>
void FingerprintStateCodec::Encode(const BasicFingerprintFilter<W>& f, std::string& out) {
  WriteStateFrame(DedupMode::kFbf, kFingerprintConstituent, out, [&](base::ByteWriter& w) {
    const FingerprintFilterConfig& c = f.config_;
    w.U8(kFingerprintLayoutVersion);
    w.U32(c.bucket_bits);
    w.U32(c.fingerprint_bits);
    w.U64(c.groups);
    w.F64(c.max_load);
    w.U32(c.window_slices);
    w.Ms(c.refresh);
    w.Ms(c.window);
    w.U8(c.adaptive ? 1 : 0);
    w.F64(c.target_fpp);
    w.U32(c.max_slices);
    w.U64(c.seed);
    w.U64(c.memory_limit_bytes);
    w.Ms(f.now_);
    w.Ms(f.next_refresh_);
    w.U64(f.next_groups_);
    w.U64(f.inserted_);
    w.U64(f.duplicates_);
    w.U64(f.near_edge_);
    w.U64(f.early_refreshes_);
    w.U64(f.kicks_failed_);
    WriteEarlyForgetting(w, f.forgotten_);
    w.U32(static_cast<uint32_t>(f.planes_.size()));
    for (const auto& plane : f.planes_) {
      w.U64(plane.memory.groups());
      w.U8(static_cast<uint8_t>(plane.memory.width()));
      w.U8(static_cast<uint8_t>(plane.live));
      w.Words(plane.memory.words());
    }
    w.U32(static_cast<uint32_t>(f.slices_.size()));
    for (const auto& slice : f.slices_) {
      w.U32(slice.plane);
      w.U32(slice.slot);
      w.U64(slice.ids);
      w.Ms(slice.started);
      w.Ms(slice.newest);
    }
  });
}

base::Result<FingerprintFilterConfig> FingerprintStateCodec::ReadConfig(base::ByteReader& r,
                                                                        uint16_t version,
                                                                        const DecodeLimits& limits,
                                                                        uint8_t& layout) {
  layout = r.U8();
  FingerprintFilterConfig c;
  c.bucket_bits = r.U32();
  c.fingerprint_bits = r.U32();
  c.groups = r.U64();
  c.max_load = r.F64();
  c.window_slices = r.U32();
  c.refresh = r.Ms();
  c.window = r.Ms();
  const uint8_t adaptive = r.U8();
  c.target_fpp = r.F64();
  c.max_slices = r.U32();
  c.seed = r.U64();
  if (version >= kStateFormatVersion) c.memory_limit_bytes = r.U64();
  if (!r.ok()) return CorruptState("truncated fingerprint config");
  if (layout != kFingerprintLayoutVersion && layout != kFingerprintLayoutFullPlanes) {
    return CorruptState("fingerprint layout version " + std::to_string(layout) +
                        " is not supported (expected " +
                        std::to_string(kFingerprintLayoutFullPlanes) + " or " +
                        std::to_string(kFingerprintLayoutVersion) + ")");
  }
  if (adaptive > 1) return CorruptState("bad adaptive flag");
  base::Result<uint64_t> bound = limits.BoundFor(c.memory_limit_bytes);
  if (!bound) return bound.error();
  c.memory_limit_bytes = bound.value();
  c.adaptive = adaptive == 1;
  if (base::Status s = CheckFingerprintConfig(c); !s) return CorruptState(s.message());
  return c;
}

template <class W>
base::Status FingerprintStateCodec::ReadClock(base::ByteReader& r, uint16_t version,
                                              BasicFingerprintFilter<W>& f) {
  f.now_ = r.Ms();
  f.next_refresh_ = r.Ms();
  f.next_groups_ = r.U64();
  f.inserted_ = r.U64();
  f.duplicates_ = r.U64();
  f.near_edge_ = r.U64();
  f.early_refreshes_ = r.U64();
  f.kicks_failed_ = r.U64();
  if (version >= kStateFormatVersion && !ReadEarlyForgetting(r, f.now_, f.forgotten_)) {
    return CorruptState("fingerprint early forgetting out of range");
  }
  f.advancing_to_ = f.now_;
  if (!r.ok()) return CorruptState("truncated fingerprint clock");
  // Found by filter_state_fuzz past the checksum: a count near 2^64 wrapped at the next
  // insert, below the slices' counts. No filter counts 2^62 ids.
  if (f.inserted_ > kMaxFilterCount || f.duplicates_ > kMaxFilterCount) {
    return CorruptState("fingerprint counts out of range");
  }
  const FingerprintFilterConfig& c = f.config_;
  // AdvanceTo leaves now < next refresh <= now + refresh.
  if (f.now_ > kMaxFilterTime || f.now_ < -kMaxFilterTime || f.next_refresh_ <= f.now_ ||
      f.next_refresh_ > f.now_ + c.refresh) {
    return CorruptState("fingerprint clock out of range");
  }
  // Adaptation never takes the next size below the sized one.
  if (f.next_groups_ < c.groups || f.next_groups_ > FingerprintPlane<W>::kMaxGroups) {
    return CorruptState("fingerprint next size out of range");
  }
  return {};
}

template <class W>
base::Status FingerprintStateCodec::ReadPlanes(base::ByteReader& r, uint8_t layout,
                                               BasicFingerprintFilter<W>& f, size_t payload_bytes) {
  const uint32_t planes = r.U32();
  // Without a memory bound (format 2 had none) failed kicks may push a plane per slice.
  // A format-2 state given one (DecodeLimits) is held to it: the state it is written
  // as next, of format 3 with that bound, must decode.
  const bool bounded = f.config_.memory_limit_bytes != 0;
  const uint64_t most = bounded ? f.config_.max_slices : 4096;
  if (!r.ok() || planes == 0 || planes > most) {
    return CorruptState("fingerprint plane count out of range");
  }
  f.planes_.clear();
  for (uint32_t i = 0; i < planes; ++i) {
    const uint64_t groups = r.U64();
    const uint32_t width =
        layout == kFingerprintLayoutFullPlanes ? FingerprintPlane<W>::kSlots : r.U8();
    const uint8_t live = r.U8();
    // Every plane's words are in the payload: refuse to allocate more than it holds.
    if (!r.ok() || width == 0 || width > FingerprintPlane<W>::kSlots || groups == 0 ||
        groups > payload_bytes / (width * sizeof(W)) || live == 0 || live >> width != 0) {
      return CorruptState("fingerprint plane out of range");
    }
    auto plane = FingerprintPlane<W>::Create(groups, width);
    if (!plane) return CorruptState(plane.message());
    if (!r.Words(plane->words_to_restore())) return CorruptState("truncated fingerprint plane");
    f.planes_.push_back({std::move(plane).value(), live});
  }
  if (f.config_.memory_limit_bytes != 0 && f.plane_bytes() > f.config_.memory_limit_bytes) {
    return CorruptState("fingerprint planes beyond the memory bound");
  }
  return {};
}

template <class W>
base::Status FingerprintStateCodec::ReadSlices(base::ByteReader& r, BasicFingerprintFilter<W>& f) {
  const uint32_t slices = r.U32();
  // Without a memory bound (format 2 had none) failed kicks may push past max_slices.
  const bool bounded = f.config_.memory_limit_bytes != 0;
  const uint64_t most = bounded ? f.config_.max_slices : UINT64_MAX;
  uint64_t slots = 0;
  for (const auto& plane : f.planes_) slots += plane.memory.width();
  if (!r.ok() || slices == 0 || slices > slots || slices > most) {
    return CorruptState("fingerprint slice count out of range");
  }
  std::vector<uint32_t> used(f.planes_.size(), 0);
  uint64_t ids = 0;
  f.slices_.clear();
  for (uint32_t i = 0; i < slices; ++i) {
    typename BasicFingerprintFilter<W>::Slice s;
    s.plane = r.U32();
    s.slot = r.U32();
    s.ids = r.U64();
    s.started = r.Ms();
    s.newest = r.Ms();
    if (!r.ok()) return CorruptState("truncated fingerprint slice");
    if (s.plane >= f.planes_.size() || s.slot >= f.planes_[s.plane].memory.width() ||
        (used[s.plane] >> s.slot & 1) != 0) {
      return CorruptState("fingerprint slice place out of range");
    }
    used[s.plane] |= 1u << s.slot;
    // A slice's count is its fingerprints (checked below): at most the insert count.
    ids += s.ids;
    if (s.ids > f.inserted_ || ids > f.inserted_) {
      return CorruptState("fingerprint slice counts out of range");
    }
    if (s.newest > f.now_ || s.started > f.now_ || s.started < -kMaxFilterTime ||
        (s.ids > 0) != (s.newest != Millis::min()) || (s.ids > 0 && s.newest < -kMaxFilterTime)) {
      return CorruptState("fingerprint slice times out of range");
    }
    s.capacity = f.CapacityOf(f.planes_[s.plane].memory.groups());
    f.slices_.push_back(s);
  }
  for (size_t p = 0; p < f.planes_.size(); ++p) {
    if (used[p] != f.planes_[p].live) return CorruptState("fingerprint plane slots mismatch");
  }
  return {};
}

template <class W>
base::Status FingerprintStateCodec::CheckContents(const BasicFingerprintFilter<W>& f) {
  const std::vector<uint64_t> counted = f.CountFingerprints();
  for (size_t i = 0; i < counted.size(); ++i) {
    if (counted[i] != f.slices_[i].ids) return CorruptState("fingerprint slice count mismatch");
  }
  for (const auto& plane : f.planes_) {
    for (uint32_t slot = 0; slot < plane.memory.width(); ++slot) {
      if ((plane.live >> slot & 1) == 0 && plane.memory.CountOccupied(slot, f.fields_) != 0) {
        return CorruptState("fingerprints in a free slot");
      }
    }
  }
  return {};
}

template <class W>
base::Result<std::unique_ptr<DedupFilter>> FingerprintStateCodec::DecodeAs(
    base::ByteReader& r, uint16_t version, uint8_t layout, const FingerprintFilterConfig& c,
    size_t payload_bytes) {
  BasicFingerprintFilter<W> f(c, Millis{0});
  if (base::Status s = ReadClock(r, version, f); !s) return std::move(s).error();
  if (base::Status s = ReadPlanes(r, layout, f, payload_bytes); !s) {
    return std::move(s).error();
  }
  if (base::Status s = ReadSlices(r, f); !s) return std::move(s).error();
  // Adaptation grows the slices to come at most 16 times past the present's size
  // (twice over, once early and once at a refresh, before a slice of that size is
  // pushed), and under a memory bound within FittingGroups. Found by filter_state_fuzz
  // past the checksum: a next size far beyond both made the next refresh allocate
  // gigabytes. Layout 1 allowed sizes to come up to a whole plane of the bound (bound /
  // 64 groups); the filter writes layout 2, so such a size is brought within
  // FittingGroups here, as GrowTo would have, and what the state is written as next
  // decodes (a format-2 state given a bound is of layout 1).
  const uint64_t bound = f.config_.memory_limit_bytes;
  const uint64_t whole_plane_of_the_bound = bound / 64;
  if (layout == kFingerprintLayoutFullPlanes && bound != 0 &&
      f.next_groups_ <= whole_plane_of_the_bound) {
    f.next_groups_ = f.GroupsWithinTheBound(f.next_groups_);
  }
  const uint64_t present = f.planes_[f.slices_.front().plane].memory.groups();
  if (f.next_groups_ / 256 > present ||
      (bound != 0 && f.next_groups_ > BasicFingerprintFilter<W>::FittingGroups(f.config_))) {
    return CorruptState("fingerprint next size out of range");
  }
  // The sizes of the planes, too: a slice of one of them may be pushed again (a
  // fingerprint no bucket of the present took goes into a new present of its size).
  // Up to a whole plane of the bound (layout 1 made such planes): a slot of it takes
  // at most a quarter of the bound, and with the present alone in it (compacted), a
  // slot of any size to come, or a second of its size, fits beside it.
  const uint64_t largest_plane =
      std::max(whole_plane_of_the_bound, BasicFingerprintFilter<W>::FittingGroups(f.config_));
  for (const auto& plane : f.planes_) {
    if (bound != 0 && plane.memory.groups() > largest_plane) {
      return CorruptState("fingerprint plane beyond the sizes the memory bound allows");
    }
  }
  if (!r.done()) return CorruptState("trailing bytes after fingerprint state");
  if (base::Status s = CheckContents(f); !s) return std::move(s).error();
  f.RebuildMasks();
  return std::unique_ptr<DedupFilter>(new BasicFingerprintFilter<W>(std::move(f)));
}

base::Result<std::unique_ptr<DedupFilter>> FingerprintStateCodec::Decode(
    std::string_view payload, uint16_t version, const DecodeLimits& limits) {
  base::ByteReader r(payload);
  uint8_t layout = 0;
  base::Result<FingerprintFilterConfig> config = ReadConfig(r, version, limits, layout);
  if (!config) return config.error();
  if (config->bucket_bits == 128) {
    return DecodeAs<Bucket128>(r, version, layout, config.value(), payload.size());
  }
  return DecodeAs<uint64_t>(r, version, layout, config.value(), payload.size());
}

template void FingerprintStateCodec::Encode(const BasicFingerprintFilter<uint64_t>&, std::string&);
template void FingerprintStateCodec::Encode(const BasicFingerprintFilter<Bucket128>&, std::string&);

}  // namespace oncecount::filter
