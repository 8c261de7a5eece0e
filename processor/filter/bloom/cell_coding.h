// Cell values of the Gaussian Bloom filter as small codes (Sec. 3.2 of Werner &
// Schoenfeld) and the fast exponential (Sec. 3.3) that can compute them.
//
// A value in [0, 1] goes into B bits (B = 4 or 8). The maximum 1 owns the all-ones
// code 2^B - 1, so the underlying Bloom filter (Definition 3) is "code == all ones".
// Any other value is scaled by alpha = (2^B - 1) / 2^B and rounded to the nearest
// multiple of 2^-B, i.e. code = round(v * (2^B - 1)); a value that rounds to all
// ones (v > 1 - 1/(2 (2^B - 1))) takes the code below instead, because a non-maximal
// value rounded up to the maximum would set a bit of the underlying filter that the
// classic filter does not have. Codes are monotone in the value, so comparing codes
// is comparing values.
//
// B = 64 means a double: the code is the double's IEEE bit pattern, which for
// non-negative doubles orders like the value; the maximum is exactly 1.0 and every
// other value is kept strictly below it.
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>
#include <span>

namespace oncecount::filter {

// 4, 8 or 64 (double).
bool ValidCellBits(int bits);

// The code of the maximum value 1.
uint64_t MaxCellCode(int bits);

// Whether packed cells could come from inserts: a double cell above 1.0 (or a NaN
// pattern) cannot; 4- and 8-bit cells always could. For decoders of filter states.
bool ValidCellWords(std::span<const uint64_t> words, int cell_bits);

// The code of `value`, clamped to [0, 1]; below MaxCellCode unless value >= 1.
uint64_t EncodeCell(double value, int bits);

// The value a code stands for: 1 for the maximum, code / (2^B - 1) otherwise.
double DecodeCell(uint64_t code, int bits);

// Schraudolph's approximation of e^y (Neural Computation 11(4), 1999): the integer
// a*y + (b - c) written into the upper 32 bits of a double is about e^y, because
// those bits are the exponent and the top of the mantissa. a = 2^20 / ln 2, b = 1023
// * 2^20 (the exponent bias), c = 60801 (the paper's RMS-minimizing shift). One
// multiply, one add, one shift; relative error within about 4% for |y| < 700.
inline double FastExp(double y) {
  constexpr double kA = 1048576.0 / 0.6931471805599453;
  constexpr int64_t kBMinusC = 1072693248 - 60801;
  const int64_t upper = static_cast<int64_t>(kA * y) + kBMinusC;
  return std::bit_cast<double>(static_cast<uint64_t>(upper) << 32);
}

}  // namespace oncecount::filter
