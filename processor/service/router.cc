#include "processor/service/router.h"

namespace oncecount::service {
namespace {

// Messages handed to a worker at a time: enough to amortize the mailbox, few enough
// that workers start early.
constexpr size_t kHandOver = 512;
// And bytes (keys and values): a worker's mailbox holds mailbox_capacity (64)
// hand-overs, which with events near the input topic's record limit (1 MB by default)
// would be tens of GB for a worker that is behind, a process killed for its memory at
// every start while the backlog lasts. A hand-over stops at 1 MiB, plus the message
// that crossed it.
constexpr size_t kHandOverBytes = size_t{1} << 20;
// A new run's first allocation: most hand-overs hold a few shards' runs.
constexpr size_t kRunReserve = 128;

}  // namespace

Router::Router(std::vector<ShardWorker*> workers, uint64_t max_batch_events)
    : workers_(std::move(workers)), max_batch_events_(max_batch_events), staged_(workers_.size()) {}

void Router::Route(kafka::Message message) {
  if (++CountOf(message.partition) >= max_batch_events_) commit_due_ = true;
  ++routed_;
  const size_t w = static_cast<size_t>(message.partition.value()) % workers_.size();
  Staged& staged = staged_[w];
  staged.bytes += message.key.value_or("").size() + message.value.value_or("").size();
  RunOf(staged, message.partition).messages.push_back(std::move(message));
  if (++staged.messages >= kHandOver || staged.bytes >= kHandOverBytes) HandOver(w);
}

InputRun& Router::RunOf(Staged& staged, base::Partition partition) {
  if (staged.last_run < staged.runs.size() && staged.runs[staged.last_run].partition == partition) {
    return staged.runs[staged.last_run];
  }
  for (size_t i = 0; i < staged.runs.size(); ++i) {
    if (staged.runs[i].partition == partition) {
      staged.last_run = i;
      return staged.runs[i];
    }
  }
  staged.last_run = staged.runs.size();
  InputRun& run = staged.runs.emplace_back();
  run.partition = partition;
  run.messages.reserve(kRunReserve);
  return run;
}

uint64_t& Router::CountOf(base::Partition partition) {
  if (last_count_ == nullptr || partition != last_partition_) {
    last_partition_ = partition;
    last_count_ = &per_shard_[partition];
  }
  return *last_count_;
}

void Router::HandOver(size_t worker) {
  Staged& staged = staged_[worker];
  if (staged.runs.empty()) return;
  workers_[worker]->Apply(std::move(staged.runs));
  staged = Staged{};
}

void Router::HandOverAll() {
  for (size_t w = 0; w < workers_.size(); ++w) HandOver(w);
}

void Router::Sealed() {
  per_shard_.clear();
  last_count_ = nullptr;
  routed_ = 0;
  commit_due_ = false;
}

}  // namespace oncecount::service
