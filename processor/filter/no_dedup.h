// NoDedup: the `none` mode, which applies every event (the paper's approach 1 from
// the server's side: retries over-count). A baseline for accuracy runs.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include "processor/filter/dedup_filter.h"

namespace oncecount::filter {

class NoDedup final : public DedupFilter {
 public:
  DedupMode mode() const override { return DedupMode::kNone; }
  void AdvanceTo(Millis) override {}
  bool Contains(IdHash) const override { return false; }
  Verdict TestAndInsert(IdHash) override {
    ++inserted_;
    return Verdict::kNew;
  }
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

 private:
  friend struct NoneStateCodec;
  uint64_t inserted_ = 0;
};

}  // namespace oncecount::filter
