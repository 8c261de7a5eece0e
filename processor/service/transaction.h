// Transaction: one Kafka transaction of the processor — the changelog batches,
// snapshots, dead letters and claims of some shards, and (KIP-447) the group's
// input offsets with the consumer's group metadata — and what its failure means.
//
// Run begins, produces, sends the offsets, commits, and on failure aborts, then
// says what the processor must do (TxnOutcome):
//
//   kCommitted      everything is in;
//   kAborted        an abortable error: nothing of it counts; the shards' state
//                   is ahead of their changelog and must be rebuilt from it;
//   kAssignmentGone the group refused our offsets (ILLEGAL_GENERATION,
//                   UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID): the transaction is
//                   aborted. Either the group moved on without us and the shards
//                   belong to someone else (they must be dropped without a claim;
//                   only a later assignment brings them back), or a rebalance
//                   completed after we read the group's metadata (the processor
//                   tries once more with the metadata read anew, and drops the
//                   shards only when that is refused too);
//   kFatal          the producer is fenced (another producer with our
//                   transactional.id, or the broker aborted our transaction after
//                   kafka.transaction_timeout_ms) or broken: nothing more may be
//                   written with it, and the instance exits non-zero so that its
//                   orchestrator restarts it (a restart fences whatever is left).
//
// Retriable errors are retried with back-off on the injected clock, each retry told
// to `on_retry` (a commit that times out takes the call timeout every time, so five
// of them are minutes in which the log must say why nothing commits). When the
// abort that ends a failed transaction fails too, the outcome is kFatal and its
// error names both: the failure that made the transaction end, then the abort's.
//
// Thread-safety: the processor's thread only.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/kafka/clients.h"

namespace oncecount::service {

enum class TxnOutcome : uint8_t { kCommitted, kAborted, kAssignmentGone, kFatal };

struct TxnResult {
  TxnOutcome outcome = TxnOutcome::kCommitted;
  kafka::KafkaError error;  // why, unless committed
};

// What goes into one transaction.
struct TxnContent {
  std::vector<kafka::OutgoingRecord> records;
  std::string offsets_topic;                    // the input topic
  std::vector<kafka::PartitionOffset> offsets;  // next input offset per shard
  const kafka::GroupMetadata* group = nullptr;  // required when offsets are sent
};

class Transaction {
 public:
  using RetryNotice = std::function<void(const std::string&)>;

  Transaction(kafka::TransactionalProducer& producer, base::Clock& clock,
              std::chrono::milliseconds call_timeout, RetryNotice on_retry = {})
      : producer_(producer),
        clock_(clock),
        timeout_(call_timeout),
        on_retry_(std::move(on_retry)) {}

  TxnResult Run(const TxnContent& content);

 private:
  template <class Call>
  kafka::KafkaError Retry(const char* what, Call call);
  TxnResult Fail(kafka::KafkaError error);

  kafka::TransactionalProducer& producer_;
  base::Clock& clock_;
  std::chrono::milliseconds timeout_;
  RetryNotice on_retry_;
};

}  // namespace oncecount::service
