// NameLess: the byte order of counter names (std::string_view's operator<), for the
// sorts and merges of a shard's views.
//
// A view sorts and merges every name a commit changed, and counter names tend to
// share long prefixes ("counter-", "ad/campaign-"), so each comparison reads up to
// the first differing byte. libc's memcmp is a call that pays off for long strings;
// names are short, so this compares eight bytes at a time inline, as big-endian
// words, whose unsigned order is the bytes' order.
//
// Thread-safety: a pure function.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace oncecount::shard {

namespace name_order_detail {
inline uint64_t BigEndianWord(const char* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, sizeof w);
  if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
  return w;
}
}  // namespace name_order_detail

inline bool NameLess(std::string_view a, std::string_view b) {
  using name_order_detail::BigEndianWord;
  const size_t common = std::min(a.size(), b.size());
  size_t i = 0;
  for (; i + 8 <= common; i += 8) {
    const uint64_t x = BigEndianWord(a.data() + i);
    const uint64_t y = BigEndianWord(b.data() + i);
    if (x != y) return x < y;
  }
  if (i < common) {
    if (common >= 8) {
      // The last eight bytes of the common length: the ones before i are equal, so
      // the words' order is the order of the bytes from i on.
      const uint64_t x = BigEndianWord(a.data() + common - 8);
      const uint64_t y = BigEndianWord(b.data() + common - 8);
      if (x != y) return x < y;
    } else {
      for (; i < common; ++i) {
        if (a[i] != b[i])
          return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
      }
    }
  }
  return a.size() < b.size();
}

}  // namespace oncecount::shard
