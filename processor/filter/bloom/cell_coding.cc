#include "processor/filter/bloom/cell_coding.h"

#include <cmath>

namespace oncecount::filter {

bool ValidCellBits(int bits) {
  return bits == 4 || bits == 8 || bits == 64;
}

uint64_t MaxCellCode(int bits) {
  if (bits == 64) return std::bit_cast<uint64_t>(1.0);
  return (uint64_t{1} << bits) - 1;
}

uint64_t EncodeCell(double value, int bits) {
  // NaN and negatives are 0; anything at or above 1 is the maximum.
  if (!(value > 0)) return 0;
  if (value >= 1) return MaxCellCode(bits);
  if (bits == 64) return std::bit_cast<uint64_t>(value);
  const uint64_t max = MaxCellCode(bits);
  const auto code = static_cast<uint64_t>(std::llround(value * static_cast<double>(max)));
  return code >= max ? max - 1 : code;
}

double DecodeCell(uint64_t code, int bits) {
  if (bits == 64) return std::bit_cast<double>(code);
  const uint64_t max = MaxCellCode(bits);
  if (code >= max) return 1.0;
  return static_cast<double>(code) / static_cast<double>(max);
}

bool ValidCellWords(std::span<const uint64_t> words, int cell_bits) {
  if (cell_bits != 64) return true;
  const uint64_t max = MaxCellCode(64);
  for (uint64_t w : words) {
    if (w > max) return false;
  }
  return true;
}

}  // namespace oncecount::filter
