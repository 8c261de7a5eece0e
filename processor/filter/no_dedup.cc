#include "processor/filter/no_dedup.h"

#include "processor/filter/state_codec.h"

namespace oncecount::filter {

FilterSummary NoDedup::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kNone;
  s.inserted = inserted_;
  s.window_ms_guaranteed = 0;
  return s;
}

void NoDedup::Serialize(std::string& out) const {
  NoneStateCodec::Encode(*this, out);
}

}  // namespace oncecount::filter
