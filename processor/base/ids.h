// Strong types for the numbers the exactly-once bookkeeping is made of, so that an
// epoch cannot be passed where a sequence number is expected (both are uint64_t on
// the wire) and an offset cannot be passed where a partition is expected:
//
//   Partition  a Kafka partition number; a shard is named by its input partition,
//              which is also the number of its changelog partition
//   Offset     a position in a Kafka partition (the next record to read, or a
//              record's own); negative values are librdkafka's logical offsets
//   Epoch      a shard's owner epoch: each claim of a shard's changelog takes the next one
//   Seq        a batch's number in its shard's changelog (the state after that batch)
//
// Each is a thin wrapper with explicit construction and `.value()` at the edges
// (encoders, JSON, metrics, librdkafka). Only the operations the bookkeeping needs
// exist: comparison, Next(), distances, and printing.
//
// Thread-safety: plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

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
  // How many steps this one is past `earlier` (negative when it is before).
  constexpr Rep Since(StrongNumber earlier) const { return value_ - earlier.value_; }

  friend constexpr auto operator<=>(StrongNumber, StrongNumber) = default;
  friend std::ostream& operator<<(std::ostream& out, StrongNumber n) { return out << n.value_; }

 private:
  Rep value_{};
};

using Partition = StrongNumber<struct PartitionTag, int32_t>;
using Offset = StrongNumber<struct OffsetTag, int64_t>;
using Epoch = StrongNumber<struct EpochTag, uint64_t>;

// A negative offset is not a position in a log but one of librdkafka's logical
// offsets ("the beginning", "the end", "unknown").
constexpr bool IsLogical(Offset offset) {
  return offset.value() < 0;
}

// Partitions 0..count-1 of a topic with `count` partitions.
inline std::vector<Partition> AllPartitions(int32_t count) {
  std::vector<Partition> all;
  for (int32_t p = 0; p < count; ++p) all.emplace_back(p);
  return all;
}
using Seq = StrongNumber<struct SeqTag, uint64_t>;

}  // namespace oncecount::base

template <typename Tag, typename Rep>
struct std::hash<oncecount::base::StrongNumber<Tag, Rep>> {
  size_t operator()(oncecount::base::StrongNumber<Tag, Rep> n) const noexcept {
    return std::hash<Rep>{}(n.value());
  }
};
