// ByteWriter and ByteReader: little-endian encoding of the project's serialized
// formats (filter state, changelog records, shard snapshots).
//
// ByteReader never reads past its input: a short or malformed input turns ok() false
// and every later read returns zero, so decoders check ok() once per structure.
//
// Thread-safety: plain values, one per encoding or decoding.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/clock.h"

namespace oncecount::base {

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void I64(int64_t v) { Le(static_cast<uint64_t>(v), 8); }
  void F64(double v) { U64(std::bit_cast<uint64_t>(v)); }
  void Ms(Millis v) { I64(v.count()); }
  // A length-prefixed byte string (u32 length).
  void Bytes(std::string_view bytes) {
    U32(static_cast<uint32_t>(bytes.size()));
    out_.append(bytes);
  }
  // Filter bits: megabytes at a time, so a little-endian host copies them whole.
  void Words(std::span<const uint64_t> words) {
    U64(words.size());
    if constexpr (std::endian::native == std::endian::little) {
      out_.append(reinterpret_cast<const char*>(words.data()), words.size_bytes());
    } else {
      for (uint64_t w : words) U64(w);
    }
  }

 private:
  void Le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  std::string& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == in_.size(); }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  int64_t I64() { return static_cast<int64_t>(Le(8)); }
  double F64() { return std::bit_cast<double>(Le(8)); }
  Millis Ms() { return Millis{I64()}; }
  // A length-prefixed byte string of at most `max_bytes`; empty and !ok() when the
  // input is short or the length is over the limit.
  std::string_view Bytes(size_t max_bytes) {
    const uint32_t n = U32();
    if (!ok_ || n > max_bytes || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    const std::string_view bytes = in_.substr(pos_, n);
    pos_ += n;
    return bytes;
  }
  size_t remaining() const { return in_.size() - pos_; }
  // Reads a word count and checks it against what the caller expects.
  bool Words(std::vector<uint64_t>& words, uint64_t expected) {
    if (U64() != expected || !ok_ || (in_.size() - pos_) / 8 < expected) return ok_ = false;
    words.resize(expected);
    return WordsInto(words);
  }
  // Reads a word count that must be into.size(), then the words straight into `into`:
  // a large structure decoded in place, not through a copy of itself.
  bool Words(std::span<uint64_t> into) {
    if (U64() != into.size() || !ok_ || (in_.size() - pos_) / 8 < into.size()) return ok_ = false;
    return WordsInto(into);
  }

 private:
  bool WordsInto(std::span<uint64_t> into) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(into.data(), in_.data() + pos_, into.size_bytes());
      pos_ += into.size_bytes();
    } else {
      for (auto& w : into) w = U64();
    }
    return ok_;
  }
  uint64_t Le(size_t bytes) {
    if (!ok_ || in_.size() - pos_ < bytes) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += bytes;
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace oncecount::base
