#include "processor/replica/membership.h"

#include <xxhash.h>

#include <algorithm>

namespace oncecount::replica {

uint64_t StandbyWeight(const std::string& instance, base::Partition partition) {
  return XXH3_64bits_withSeed(instance.data(), instance.size(),
                              static_cast<uint64_t>(static_cast<uint32_t>(partition.value())));
}

void Membership::Observe(const MemberRecord& record, int64_t now_ms) {
  Heard& h = members_[record.instance_id];
  // Records of one instance arrive in the order it wrote them; keep the newest.
  h.record = record;
  h.at_ms = now_ms;
  for (base::Partition p : record.actives) last_owned_ms_[p] = now_ms;
}

bool Membership::IsLive(const Heard& h, int64_t now_ms) const {
  return !h.record.leaving && now_ms - h.at_ms <= timeout_.count();
}

std::vector<std::string> Membership::Live(int64_t now_ms) const {
  std::vector<std::string> live{self_};
  for (const auto& [id, h] : members_) {
    if (id != self_ && IsLive(h, now_ms)) live.push_back(id);
  }
  std::sort(live.begin(), live.end());
  return live;
}

std::string Membership::ActiveOf(base::Partition partition, int64_t now_ms) const {
  std::string owner;
  int64_t newest = INT64_MIN;
  for (const auto& [id, h] : members_) {
    if (!IsLive(h, now_ms)) continue;
    const auto& actives = h.record.actives;
    if (std::binary_search(actives.begin(), actives.end(), partition) &&
        h.record.sent_at_ms > newest) {
      owner = id;
      newest = h.record.sent_at_ms;
    }
  }
  return owner;
}

int64_t Membership::LastHeardOwning(base::Partition partition) const {
  const auto it = last_owned_ms_.find(partition);
  return it == last_owned_ms_.end() ? -1 : it->second;
}

std::vector<std::string> Membership::StandbysOf(base::Partition partition, int64_t replicas,
                                                int64_t now_ms) const {
  if (replicas <= 0) return {};
  const std::string active = ActiveOf(partition, now_ms);
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (std::string& id : Live(now_ms)) {
    if (id == active) continue;
    ranked.emplace_back(StandbyWeight(id, partition), std::move(id));
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> standbys;
  for (auto& [weight, id] : ranked) {
    if (static_cast<int64_t>(standbys.size()) == replicas) break;
    standbys.push_back(std::move(id));
  }
  return standbys;
}

bool Membership::IsStandby(const std::string& instance, base::Partition partition, int64_t replicas,
                           int64_t now_ms) const {
  const std::vector<std::string> standbys = StandbysOf(partition, replicas, now_ms);
  return std::find(standbys.begin(), standbys.end(), instance) != standbys.end();
}

std::vector<MemberRecord> Membership::Others(int64_t now_ms) const {
  std::vector<MemberRecord> out;
  for (const auto& [id, h] : members_) {
    if (id != self_ && IsLive(h, now_ms)) out.push_back(h.record);
  }
  return out;
}

}  // namespace oncecount::replica
