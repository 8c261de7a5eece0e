// EarlyForgetting: what a filter forgot before its window because it reached its
// memory bound, and the window it really holds because of it.
//
// A forgetful filter keeps every id for its window while it has the memory to. When a
// clock stops moving while ids keep coming (a sole producer far behind, a host clock
// stepped back), or the load outgrows the bound, the filter would otherwise have to
// either grow without bound or overfill past its false-positive target. At the bound
// it drops its oldest ids instead, and records here the newest insert time it may have
// lost. The guaranteed window it reports is then what it really holds, now - lost_until - 1,
// until the clock has moved a whole window past it (SPEC §2.1: a filter that cannot
// keep the configured window says so instead of pretending).
//
// Part of the filter's state: it is serialized with it (state format 3), so replicas
// and restores report the same window.
//
// Thread-safety: a value owned by its filter's thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "processor/base/byte_io.h"
#include "processor/base/clock.h"

namespace oncecount::filter {

struct EarlyForgetting {
  // Ids inserted at or before this clock time may be forgotten; min(): none were.
  base::Millis lost_until = base::Millis::min();
  // Ids dropped before their window, in total (for the Bloom FBF an upper bound: the
  // inserts of the dropped constituent, some of which a newer pair still held).
  uint64_t ids = 0;

  void Record(base::Millis newest_lost, uint64_t count) {
    lost_until = std::max(lost_until, newest_lost);
    ids += count;
  }

  // The window held at `now`: `window`, or less while ids inserted within it are lost.
  // A window of w holds the ids inserted w ms ago or later; the newest that may be
  // lost was inserted at lost_until, so what is held is one ms short of its age.
  base::Millis Held(base::Millis now, base::Millis window) const {
    if (lost_until == base::Millis::min()) return window;
    return std::clamp(now - lost_until - base::Millis{1}, base::Millis{0}, window);
  }

  bool operator==(const EarlyForgetting&) const = default;
};

// Its part of a filter's state (format 3): i64 lost until, u64 ids.
inline void WriteEarlyForgetting(base::ByteWriter& w, const EarlyForgetting& e) {
  w.Ms(e.lost_until);
  w.U64(e.ids);
}

// False when it is truncated, names no time with ids (or a time without), or a time
// after the filter's clock `now` or before any clock a filter holds (they stay within
// +-2^61 ms, dedup_filter.h; Held subtracts it from the clock).
inline bool ReadEarlyForgetting(base::ByteReader& r, base::Millis now, EarlyForgetting& e) {
  constexpr base::Millis kEarliest{-(int64_t{1} << 62)};
  e.lost_until = r.Ms();
  e.ids = r.U64();
  if (!r.ok()) return false;
  const bool none = e.lost_until == base::Millis::min();
  return none ? e.ids == 0 : e.lost_until <= now && e.lost_until >= kEarliest && e.ids > 0;
}

}  // namespace oncecount::filter
