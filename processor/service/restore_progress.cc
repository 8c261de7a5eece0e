#include "processor/service/restore_progress.h"

#include <algorithm>

namespace oncecount::service {

void RestoreProgress::Report(base::Partition partition, base::Offset reached, base::Offset target) {
  std::lock_guard lock(mu_);
  auto [it, first] = reads_.try_emplace(partition, Reading{reached, reached, target});
  if (!first) {
    it->second.reached = std::max(it->second.reached, reached);
    it->second.target = target;
  }
}

void RestoreProgress::End(base::Partition partition) {
  std::lock_guard lock(mu_);
  reads_.erase(partition);
}

std::vector<RestoreProgress::Shard> RestoreProgress::Read() const {
  std::lock_guard lock(mu_);
  std::vector<Shard> shards;
  shards.reserve(reads_.size());
  for (const auto& [p, r] : reads_) {
    const int64_t span = r.target.Since(r.began);
    const int64_t remaining = std::max<int64_t>(0, r.target.Since(r.reached));
    const double fraction =
        span <= 0
            ? 1.0
            : std::clamp(static_cast<double>(r.reached.Since(r.began)) / static_cast<double>(span),
                         0.0, 1.0);
    shards.push_back({p, remaining, fraction});
  }
  return shards;
}

}  // namespace oncecount::service
