// OutOfMemoryAfter: a dedup filter that cannot get memory past its first `fits` ids,
// as a real one throws when the machine refuses its next plane (the memory bound
// keeps what a filter asks for within dedup.max_filter_mib, not within what the
// machine has). For tests of how a shard's owner fails that shard alone.
//
// Thread-safety: owned by one thread, as every DedupFilter.
#pragma once

#include <cstdint>
#include <new>
#include <string>

#include "processor/filter/dedup_filter.h"
#include "processor/filter/no_dedup.h"

namespace oncecount::testing {

class OutOfMemoryAfter final : public filter::DedupFilter {
 public:
  explicit OutOfMemoryAfter(uint64_t fits) : fits_(fits) {}
  filter::DedupMode mode() const override { return filter::DedupMode::kNone; }
  void AdvanceTo(filter::Millis) override {}
  bool Contains(filter::IdHash) const override { return false; }
  filter::Verdict TestAndInsert(filter::IdHash) override {
    if (inserted_ == fits_) throw std::bad_alloc();
    ++inserted_;
    return filter::Verdict::kNew;
  }
  filter::FilterSummary Summary() const override { return {}; }
  void Serialize(std::string& out) const override { filter::NoDedup().Serialize(out); }

 private:
  uint64_t fits_;
  uint64_t inserted_ = 0;
};

}  // namespace oncecount::testing
