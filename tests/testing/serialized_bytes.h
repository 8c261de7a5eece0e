// Helpers for the tests that pin and corrupt the project's serialized formats
// (filter state, changelog records): hex dumps, little-endian fields read and
// written independently of the codecs, and resealing the trailing XXH3-64 checksum
// after a deliberate edit so that decoding reaches the check under test.
// Test code only.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace oncecount::testing {

inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

// The bytes a Hex dump shows (pinned bytes of an older format, decoded again).
inline std::string FromHex(std::string_view hex) {
  auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  }
  return bytes;
}

// Reads `size` bytes at `offset` as a little-endian integer.
inline uint64_t Le(std::string_view bytes, size_t offset, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

inline void PutLe(std::string& bytes, size_t offset, size_t size, uint64_t v) {
  for (size_t i = 0; i < size; ++i) bytes[offset + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Recomputes the trailing 8-byte XXH3-64 of everything before it.
inline void Reseal(std::string& bytes) {
  const size_t covered = bytes.size() - 8;
  PutLe(bytes, covered, 8, XXH3_64bits(bytes.data(), covered));
}

// A copy of `bytes` with one field overwritten and the checksum recomputed.
inline std::string WithField(std::string bytes, size_t offset, size_t size, uint64_t v) {
  PutLe(bytes, offset, size, v);
  Reseal(bytes);
  return bytes;
}

}  // namespace oncecount::testing
