// The frame around every serialized filter state (the layout is in state_codec.h):
// magic, format version, mode, constituent, payload length, payload, checksum. The
// service's codecs (state_codec.cc) and the experiments' (processor/filter/
// experiments/) write and read their payloads inside it.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "processor/base/byte_io.h"
#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"

namespace oncecount::filter {

// Version 3 added the memory bound and what the filter forgot early at it
// (early_forgetting.h) after the payloads of the bounded modes (fbf, exact); version
// 2 states are still read, as filters without a bound that forgot nothing.
inline constexpr uint16_t kStateFormatVersion = 3;
inline constexpr uint16_t kUnboundedStateFormatVersion = 2;

// Appends a frame to `out` whose payload `write_payload` writes.
void WriteStateFrame(DedupMode mode, uint8_t constituent, std::string& out,
                     const std::function<void(base::ByteWriter&)>& write_payload);

struct StateFrame {
  uint16_t version = kStateFormatVersion;
  uint8_t mode = 0;  // not yet checked against DedupMode
  uint8_t constituent = 0;
  std::string_view payload;  // into the bytes given to ReadStateFrame
};

// Checks magic, version, length and checksum; kCorrupt when one is wrong.
base::Result<StateFrame> ReadStateFrame(std::string_view bytes);

// What a decoded filter may grow to. A filter grows with its load up to its memory
// bound, and a state's bytes come from outside the process (a changelog, a checkpoint
// file), so the bound a state declares is not taken on trust: a state keeps its own
// bound (a shard keeps the bound its filter was made with) if it is at most `most`,
// and is refused above; a state without one (format 2, or filter-eval's experiments:
// 0) takes `bound_if_none`. The service passes dedup.max_filter_mib as
// `bound_if_none` (filter_factory.h: DecodeLimitsFor).
struct DecodeLimits {
  uint64_t bound_if_none = 0;  // 0: a state without a bound stays without one
  uint64_t most = kMaxMemoryLimitBytes;

  // The bound a filter decoded from a state bounded by `declared` (0: none) takes, or
  // why the state is refused.
  base::Result<uint64_t> BoundFor(uint64_t declared) const;
};

// A kCorrupt error about a filter state.
base::Error CorruptState(const std::string& what);

}  // namespace oncecount::filter
