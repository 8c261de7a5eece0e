// The serialized form of a dedup filter's whole state: snapshots, replication and
// the `digest` compared between an active shard and its standbys.
//
// Layout (all integers little-endian, version 2; version 1 had no slice capacity
// and no early-refresh count in the FBF payload):
//
//   offset  size  field
//   0       4     magic "OCDF"
//   4       2     format version (2)
//   6       1     mode (DedupMode)
//   7       1     reserved, 0
//   8       8     payload length P
//   16      P     payload (per mode; see state_codec.cc)
//   16+P    8     XXH3-64 of bytes [0, 16+P)
//
// Decoding checks magic, version, length and checksum before touching the payload,
// and validates every field it reads; corrupt input is an Error, never a crash.
// tests/processor/filter/state_codec_test.cc pins the bytes of a small filter.
//
// Thread-safety: pure functions over a filter owned by the calling thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "processor/filter/dedup_filter.h"
#include "processor/filter/result.h"

namespace oncecount::filter {

inline constexpr uint16_t kStateFormatVersion = 2;

class ForgetfulBloomFilter;
class PlainBloomDedup;
class ExactWindowDedup;
class NoDedup;
class GaussianBloomDedup;

Result<std::unique_ptr<DedupFilter>> DecodeDedupFilter(std::string_view bytes);

// The codecs are friends of their filter classes; only the filters call Encode.
struct FbfStateCodec {
  static void Encode(const ForgetfulBloomFilter& f, std::string& out);
  static Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};
struct BloomStateCodec {
  static void Encode(const PlainBloomDedup& f, std::string& out);
  static Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};
struct ExactStateCodec {
  static void Encode(const ExactWindowDedup& f, std::string& out);
  static Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};
struct GaussianStateCodec {
  static void Encode(const GaussianBloomDedup& f, std::string& out);
  static Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};
struct NoneStateCodec {
  static void Encode(const NoDedup& f, std::string& out);
  static Result<std::unique_ptr<DedupFilter>> Decode(std::string_view payload);
};

}  // namespace oncecount::filter
