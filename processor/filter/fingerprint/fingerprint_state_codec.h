// The state of a ForgetfulFingerprintFilter: mode fbf, constituent 2 in the frame
// of state_frame.h, and a payload that opens with its own layout version (2):
//
//   u8 layout version
//   config: u32 bucket bits, u32 fingerprint bits, u64 groups, f64 max load, u32 window slices,
//           i64 refresh ms, i64 window ms, u8 adaptive, f64 target fpp,
//           u32 max slices, u64 seed, u64 memory limit bytes (frame format 3)
//   clock:  i64 now, i64 next refresh, u64 next groups
//   counts: u64 inserted, duplicates, near-edge, early refreshes, failed kicks
//   early forgetting (frame format 3): i64 lost until, u64 ids
//   u32 planes, each: u64 groups, u8 width (layout 2), u8 live slots, u64 word count
//           (groups x width x the words of a bucket), the words
//   u32 slices (newest first), each: u32 plane, u32 slot, u64 ids, i64 started,
//           i64 newest
//
// Layout 1 (before planes followed their slices) has no width: every plane is a
// whole line a group, and sizes are powers of two of the first; it is still read.
// Frame format 2 states (no memory bound, nothing forgotten early, and slices and
// planes beyond max_slices, which a failed kick could push then) are still read. The
// decoder checks every field and that each slice holds as many fingerprints as it
// counts and every free slot is empty (O(state size), as reading it is), so a
// decoded filter is one the filter itself could have reached.
// tests/processor/filter/fingerprint_state_codec_test.cc pins the bytes.
//
// Thread-safety: pure functions over a filter owned by the calling thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"

namespace oncecount::base {
class ByteReader;
}  // namespace oncecount::base

namespace oncecount::filter {

template <class Word>
class BasicFingerprintFilter;
struct FingerprintFilterConfig;
struct DecodeLimits;

inline constexpr auto kFingerprintConstituent = static_cast<uint8_t>(Constituent::kFingerprint);
inline constexpr uint8_t kFingerprintLayoutVersion = 2;
inline constexpr uint8_t kFingerprintLayoutFullPlanes = 1;

struct FingerprintStateCodec {
  template <class W>
  static void Encode(const BasicFingerprintFilter<W>& f, std::string& out);
  // `version`: the frame's (state_frame.h).
  static base::Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload,
                                                           uint16_t version,
                                                           const DecodeLimits& limits);

 private:
  // `layout`: the payload's layout version.
  static base::Result<FingerprintFilterConfig> ReadConfig(base::ByteReader& r, uint16_t version,
                                                          const DecodeLimits& limits,
                                                          uint8_t& layout);
  // The rest of the payload, once the config has chosen the bucket type.
  template <class W>
  static base::Result<std::unique_ptr<DedupFilter>> DecodeAs(base::ByteReader& r, uint16_t version,
                                                             uint8_t layout,
                                                             const FingerprintFilterConfig& c,
                                                             size_t payload_bytes);
  template <class W>
  static base::Status ReadClock(base::ByteReader& r, uint16_t version,
                                BasicFingerprintFilter<W>& f);
  template <class W>
  static base::Status ReadPlanes(base::ByteReader& r, uint8_t layout, BasicFingerprintFilter<W>& f,
                                 size_t payload_bytes);
  template <class W>
  static base::Status ReadSlices(base::ByteReader& r, BasicFingerprintFilter<W>& f);
  template <class W>
  static base::Status CheckContents(const BasicFingerprintFilter<W>& f);
};

}  // namespace oncecount::filter
