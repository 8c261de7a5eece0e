// Fuzz target: the shard snapshot decoder (a snapshot's chunks joined, as a restore
// or a local checkpoint holds them), then what a restored shard does: publish a
// view, apply an event, commit, and snapshot again. It runs on the input as written
// and packed: a snapshot of version 2 or 3 holds its body compressed, and mutations
// of compressed bytes almost never decompress, so the packed form takes the bytes
// between the version and the checksum as the body itself, compresses it and frames it
// as the encoder does (resealed.h says why). The seed corpus holds such unpacked
// snapshots beside the encoder's.
#include <zstd.h>

#include <cstdlib>
#include <string>

#include "processor/shard/shard_state.h"
#include "tests/fuzz/filter_limits.h"
#include "tests/fuzz/resealed.h"

namespace {

using namespace oncecount;  // NOLINT(google-build-using-namespace)

constexpr size_t kMagicAndVersion = 6;
constexpr size_t kChecksum = 8;
constexpr uint8_t kZstdCodec = 1;

std::string Packed(std::string_view bytes) {
  if (bytes.size() < kMagicAndVersion + kChecksum) return fuzz::Resealed(bytes);
  const unsigned version =
      static_cast<uint8_t>(bytes[4]) | static_cast<unsigned>(static_cast<uint8_t>(bytes[5])) << 8;
  if (version != 2 && version != 3) return fuzz::Resealed(bytes);
  const std::string_view body =
      bytes.substr(kMagicAndVersion, bytes.size() - kMagicAndVersion - kChecksum);
  std::string out(bytes.substr(0, kMagicAndVersion));
  out.push_back(static_cast<char>(kZstdCodec));
  out.append(8, '\0');
  fuzz::PutLe(out, kMagicAndVersion + 1, 8, body.size());
  const size_t header = out.size();
  out.resize(header + ZSTD_compressBound(body.size()));
  const size_t packed =
      ZSTD_compress(out.data() + header, out.size() - header, body.data(), body.size(), 1);
  if (ZSTD_isError(packed)) return fuzz::Resealed(bytes);
  out.resize(header + packed);
  out.append(kChecksum, '\0');
  return fuzz::Resealed(out);
}

void RestoreAndRun(std::string_view bytes) {
  auto restored = shard::ShardState::FromSnapshot(bytes, fuzz::kFilterLimits);
  if (!restored) return;
  shard::ShardState& s = *restored.value();
  (void)s.MakeView({}, 0);
  const int64_t at = s.clock().clock_ms + 1;
  s.Apply({base::IsLogical(s.position()) ? base::Offset(0) : s.position(), "fuzz/1",
           R"({"counter":"c","delta":1})", at},
          filter::Millis{at});
  s.MarkCommitted(s.epoch().Next());
  const std::string again = s.EncodeSnapshot(s.epoch());
  if (!shard::ShardState::FromSnapshot(again, fuzz::kFilterLimits)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::AsWrittenAndResealed(bytes, Packed, RestoreAndRun);
  return 0;
}
