// Resealed: the fuzz targets' way past the checksums. Every checksummed format of
// oncecount (changelog records, shard snapshots, local checkpoints, member records,
// filter states) ends with the XXH3-64 of the bytes before it, little-endian. Nearly
// every mutation breaks that trailer, so a target that fed its decoder only the
// fuzzer's bytes would test the checksum and little behind it. A hostile writer to a
// topic or a state directory computes valid checksums: each target also feeds its
// decoder the input with the trailer recomputed (and, for the framed formats, the
// lengths the frame states), which reaches the bodies. For the fuzz targets only.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oncecount::fuzz {

inline void PutLe(std::string& bytes, size_t offset, size_t size, uint64_t value) {
  for (size_t i = 0; i < size; ++i) bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

// `bytes` with its trailing checksum recomputed (unchanged when shorter than one).
inline std::string Resealed(std::string_view bytes) {
  std::string out(bytes);
  if (out.size() < 8) return out;
  PutLe(out, out.size() - 8, 8, XXH3_64bits(out.data(), out.size() - 8));
  return out;
}

// A filter state's frame (state_frame.h) states its payload's length at offset 8:
// set it to what the bytes hold, then reseal.
inline std::string ResealedFilterState(std::string_view bytes) {
  std::string out(bytes);
  constexpr size_t kHeader = 16;
  constexpr size_t kTrailer = 8;
  if (out.size() >= kHeader + kTrailer) PutLe(out, 8, 8, out.size() - kHeader - kTrailer);
  return Resealed(out);
}

// Runs `decode` on the input as it is, then on `reseal(input)` when that differs: the
// first reaches the checks a corrupt record fails, the second what a valid checksum
// lets through.
template <class Reseal, class Decode>
void AsWrittenAndResealed(std::string_view bytes, Reseal&& reseal, Decode&& decode) {
  decode(bytes);
  const std::string resealed = reseal(bytes);
  if (resealed != bytes) decode(std::string_view(resealed));
}

}  // namespace oncecount::fuzz
