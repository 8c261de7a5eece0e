#include "processor/service/router.h"

namespace oncecount::service {
namespace {

// Messages handed to a worker at a time: enough to amortize the mailbox, few enough
// that workers start early.
constexpr size_t kHandOver = 512;

}  // namespace

Router::Router(std::vector<ShardWorker*> workers, uint64_t max_batch_events)
    : workers_(std::move(workers)), max_batch_events_(max_batch_events), staged_(workers_.size()) {}

void Router::Route(kafka::Message message) {
  if (++per_shard_[message.partition] >= max_batch_events_) commit_due_ = true;
  ++routed_;
  const size_t w = static_cast<size_t>(message.partition.value()) % workers_.size();
  staged_[w].push_back(std::move(message));
  if (staged_[w].size() >= kHandOver) HandOver(w);
}

void Router::HandOver(size_t worker) {
  if (staged_[worker].empty()) return;
  workers_[worker]->Apply(std::move(staged_[worker]));
  staged_[worker].clear();
}

void Router::HandOverAll() {
  for (size_t w = 0; w < workers_.size(); ++w) HandOver(w);
}

void Router::Sealed() {
  per_shard_.clear();
  routed_ = 0;
  commit_due_ = false;
}

}  // namespace oncecount::service
