// Strong types for the numbers the exactly-once bookkeeping is made of, so that an
// epoch cannot be passed where a sequence number is expected (both are uint64_t on
// the wire) and a changelog offset cannot be added to an input partition:
//
//   Epoch  a shard's owner epoch: each claim of a shard's changelog takes the next one
//   Seq    a batch's number in its shard's changelog (the state after that batch)
//
// Each is a thin wrapper with explicit construction and `.value()` at the edges
// (encoders, JSON, metrics). Only the operations the bookkeeping needs exist:
// comparison, Next(), and printing.
//
// Thread-safety: plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace oncecount::base {

template <typename Tag, typename Rep>
class StrongNumber {
 public:
  using rep = Rep;

  constexpr StrongNumber() = default;
  constexpr explicit StrongNumber(Rep value) : value_(value) {}

  constexpr Rep value() const { return value_; }
  // The one after this one (epochs and seqs only ever grow by one).
  constexpr StrongNumber Next() const { return StrongNumber(value_ + 1); }
  // `count` after this one.
  constexpr StrongNumber Plus(Rep count) const { return StrongNumber(value_ + count); }
  // The one before this one; only for a value above zero.
  constexpr StrongNumber Previous() const { return StrongNumber(value_ - 1); }

  friend constexpr auto operator<=>(StrongNumber, StrongNumber) = default;
  friend std::ostream& operator<<(std::ostream& out, StrongNumber n) { return out << n.value_; }

 private:
  Rep value_{};
};

using Epoch = StrongNumber<struct EpochTag, uint64_t>;
using Seq = StrongNumber<struct SeqTag, uint64_t>;

}  // namespace oncecount::base

template <typename Tag, typename Rep>
struct std::hash<oncecount::base::StrongNumber<Tag, Rep>> {
  size_t operator()(oncecount::base::StrongNumber<Tag, Rep> n) const noexcept {
    return std::hash<Rep>{}(n.value());
  }
};
