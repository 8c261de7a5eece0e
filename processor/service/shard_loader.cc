#include "processor/service/shard_loader.h"

#include <algorithm>

#include "processor/kafka/partition_reader.h"
#include "processor/replica/replicator.h"

namespace oncecount::service {

LoadResult ShardLoader::Load(const std::vector<int32_t>& partitions,
                             const std::map<int32_t, OwnCommit>& own) {
  LoadResult out;
  out.restored = TakeOver(partitions);
  std::vector<int32_t> cold;
  for (int32_t p : partitions) {
    if (std::none_of(out.restored.begin(), out.restored.end(),
                     [p](const RestoredShard& r) { return r.claim.partition == p; })) {
      cold.push_back(p);
    }
  }
  RestoreCold(cold, own, out);
  return out;
}

// Hot replicas brought up to the changelog's high watermark; the others restore cold.
std::vector<RestoredShard> ShardLoader::TakeOver(const std::vector<int32_t>& partitions) {
  std::vector<RestoredShard> out;
  if (o_.replicator == nullptr) return out;
  std::map<int32_t, replica::Handoff> handoffs = o_.replicator->Take(partitions);
  if (handoffs.empty()) return out;
  std::vector<int32_t> taken;
  std::map<int32_t, int64_t> from;
  for (const auto& [p, h] : handoffs) {
    taken.push_back(p);
    from[p] = h.next_offset;
  }
  auto read =
      kafka::ReadPartitions(*o_.clients, *o_.clock, o_.changelog_topic, taken, o_.wait, from);
  if (!read) {
    Log("cannot read the changelog after the replicas (" + read.error() +
        "); restoring from scratch");
    return out;
  }
  for (auto& [p, h] : handoffs) {
    std::optional<RestoredShard> r =
        CatchUp(p, std::move(h), read.value()[p].records, o_.new_claim_id());
    if (!r) {
      Log("shard " + std::to_string(p) +
          ": its replica cannot follow the changelog's tail; restoring from scratch");
      continue;
    }
    out.push_back(std::move(*r));
  }
  return out;
}

// Streams each partition into its lineage, which keeps only its newest snapshot and
// the batches after it; a partition whose lineage turns out to need more is read
// once more, keeping everything.
void ShardLoader::RestoreCold(const std::vector<int32_t>& partitions,
                              const std::map<int32_t, OwnCommit>& own, LoadResult& out) {
  if (partitions.empty()) return;
  std::map<int32_t, changelog::LineageBuilder> lineages;
  if (!Stream(partitions, changelog::LineageBuilder::Keep::kFromNewestSnapshot, lineages, out)) {
    return;
  }
  std::vector<int32_t> again;
  for (const auto& [p, lineage] : lineages) {
    if (lineage.needs_full_read()) again.push_back(p);
  }
  if (!again.empty()) {
    Log("reading the changelog again, keeping every record, for " + std::to_string(again.size()) +
        " shard(s) whose lineage was cut back");
    if (!Stream(again, changelog::LineageBuilder::Keep::kEverything, lineages, out)) return;
  }
  for (auto& [p, lineage] : lineages) {
    const auto mine = own.find(p);
    auto r = service::RestoreCold(p, std::move(lineage), o_.dedup, o_.new_claim_id(),
                                  mine != own.end() ? std::optional(mine->second) : std::nullopt);
    if (!r) {
      out.failed[p] = r.error();
      continue;
    }
    out.restored.push_back(std::move(r.value()));
  }
}

bool ShardLoader::Stream(const std::vector<int32_t>& partitions,
                         changelog::LineageBuilder::Keep keep,
                         std::map<int32_t, changelog::LineageBuilder>& lineages, LoadResult& out) {
  for (int32_t p : partitions) lineages.insert_or_assign(p, changelog::LineageBuilder(keep));
  auto read = kafka::StreamPartitions(
      *o_.clients, *o_.clock, o_.changelog_topic, partitions, o_.wait,
      [&lineages](int32_t p, std::string_view value) { lineages.at(p).Add(value); });
  if (read) return true;
  for (int32_t p : partitions) {
    out.failed[p] = read.error();
    lineages.erase(p);
  }
  return false;
}

}  // namespace oncecount::service
