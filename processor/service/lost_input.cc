#include "processor/service/lost_input.h"

#include <algorithm>
#include <iterator>

namespace oncecount::service {

uint64_t LostInput::Count(base::Offset from, base::Offset to) {
  const int64_t first = from.value();
  const int64_t past = to.value();
  if (first >= past) return 0;
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin() && std::prev(it)->second >= first) --it;
  int64_t counted_before = 0;
  int64_t merged_first = first;
  int64_t merged_past = past;
  // Every range that overlaps or touches [first, past) is merged into one.
  while (it != ranges_.end() && it->first <= past) {
    counted_before += std::max<int64_t>(0, std::min(past, it->second) - std::max(first, it->first));
    merged_first = std::min(merged_first, it->first);
    merged_past = std::max(merged_past, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(merged_first, merged_past);
  return static_cast<uint64_t>(past - first - counted_before);
}

}  // namespace oncecount::service
