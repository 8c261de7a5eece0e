// The serialized form of a dedup filter's whole state: snapshots, replication and
// the `digest` compared between an active shard and its standbys.
//
// Layout (all integers little-endian, version 3; version 2, still read, had no
// memory bound and no early forgetting in the fbf and exact payloads (see
// state_codec.cc); version 1 had no slice capacity and no early-refresh count):
//
//   offset  size  field
//   0       4     magic "OCDF"
//   4       2     format version (3)
//   6       1     mode (DedupMode)
//   7       1     constituent: 0 blocked Bloom, 1 Gaussian (fbf); 0 otherwise
//   8       8     payload length P
//   16      P     payload (per mode; see state_codec.cc)
//   16+P    8     XXH3-64 of bytes [0, 16+P)
//
// Decoding checks magic, version, length and checksum before touching the payload,
// and validates every field it reads; corrupt input is an Error, never a crash. The
// memory bound a state declares is checked against DecodeLimits (state_frame.h), and
// one without a bound is given one there: a decoded filter never grows without limit.
// tests/processor/filter/state_codec_test.cc pins the bytes of a small filter of
// each kind (blocked-Bloom FBF, Gaussian FBF, single Gaussian).
//
// An FBF with Gaussian constituents (dedup.filter: gaussian) is mode fbf with
// constituent 1; its payload is the blocked FBF's with two bytes after the config
// (cell bits, exponential: 0 exact, 1 fast) and each slot's cells in place of its
// bits. A build from before Gaussian constituents read that byte as reserved and
// ignored it, then fails on the payload (length or bits) rather than misreading it.
// Mode gaussian (filter-eval's single Gaussian filter) is an experiment: its codec and
// DecodeExperimentFilter live in processor/filter/experiments/; DecodeDedupFilter
// refuses it.
//
// Thread-safety: pure functions over a filter owned by the calling thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/state_frame.h"

namespace oncecount::base {
class ByteWriter;
class ByteReader;
}  // namespace oncecount::base

namespace oncecount::filter {

template <class Constituent>
class BasicForgetfulFilter;
struct FbfConfig;
class BlockedBloom;
class GaussianBloom;
using ForgetfulBloomFilter = BasicForgetfulFilter<BlockedBloom>;
using GaussianForgetfulFilter = BasicForgetfulFilter<GaussianBloom>;
class PlainBloomDedup;
class ExactWindowDedup;
class NoDedup;

// `limits`: what the decoded filter may grow to (state_frame.h); the default keeps a
// state's own bound, none for a state without one.
base::Result<std::unique_ptr<DedupFilter>> DecodeDedupFilter(std::string_view bytes,
                                                             const DecodeLimits& limits = {});

// The codecs are friends of their filter classes; only the filters call Encode.
struct FbfStateCodec {
  static void Encode(const ForgetfulBloomFilter& f, std::string& out);
  static void Encode(const GaussianForgetfulFilter& f, std::string& out);
  // `version`: the frame's (state_frame.h).
  static base::Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload,
                                                           uint16_t version,
                                                           const DecodeLimits& limits);
  static base::Result<std::unique_ptr<DedupFilter>> DecodeGaussian(std::string_view payload,
                                                                   uint16_t version,
                                                                   const DecodeLimits& limits);

 private:
  // The parts both constituents share; the constituent's own fields come between
  // the config and the clock, and its cells or bits in every slot.
  template <class C, class WriteParams, class WriteSlot>
  static void EncodeWith(const BasicForgetfulFilter<C>& f, std::string& out, uint8_t constituent,
                         WriteParams&& params, WriteSlot&& slot);
  template <class C, class ReadParams, class ReadSlot>
  static base::Result<std::unique_ptr<DedupFilter>> DecodeWith(std::string_view payload,
                                                               uint16_t version,
                                                               const DecodeLimits& limits,
                                                               ReadParams&& params,
                                                               ReadSlot&& slot);
  // The steps of DecodeWith: the config (the constituent's own fields read by
  // `params`), the filter's clock and counts, and the slots (each one's bits read by
  // `slot`); each refuses values no encoder writes.
  template <class ReadParams>
  static base::Result<FbfConfig> ReadConfig(base::ByteReader& r, uint16_t version,
                                            const DecodeLimits& limits, ReadParams&& params);
  template <class C>
  static base::Status ReadClock(base::ByteReader& r, uint16_t version, BasicForgetfulFilter<C>& f,
                                uint32_t& slots);
  template <class C, class ReadSlot>
  static base::Status ReadSlots(base::ByteReader& r, BasicForgetfulFilter<C>& f, uint32_t slots,
                                ReadSlot&& slot);
};
struct BloomStateCodec {
  static void Encode(const PlainBloomDedup& f, std::string& out);
  static base::Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};
struct ExactStateCodec {
  static void Encode(const ExactWindowDedup& f, std::string& out);
  static base::Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload,
                                                           uint16_t version,
                                                           const DecodeLimits& limits);
};
struct NoneStateCodec {
  static void Encode(const NoDedup& f, std::string& out);
  static base::Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};

}  // namespace oncecount::filter
