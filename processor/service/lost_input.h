// LostInput: the input offsets of one shard counted as lost — removed by retention
// before they were applied, or unreadable records the consumer went past — so that
// going over the same offsets again (the restore after an abort reads from the last
// commit) does not count them twice, whichever way they were lost each time.
//
// Thread-safety: a plain value, owned by the processor's thread.
#pragma once

#include <cstdint>
#include <map>

#include "processor/base/ids.h"

namespace oncecount::service {

class LostInput {
 public:
  // Counts the offsets [from, to) as lost; returns how many of them were not counted
  // before.
  uint64_t Count(base::Offset from, base::Offset to);

 private:
  std::map<int64_t, int64_t> ranges_;  // first → past the last; disjoint, apart
};

}  // namespace oncecount::service
