#include "processor/service/transaction.h"

namespace oncecount::service {
namespace {

constexpr int kAttempts = 5;

}  // namespace

template <class Call>
kafka::KafkaError Transaction::Retry(Call call) {
  for (int attempt = 1;; ++attempt) {
    kafka::KafkaError e = call();
    if (e.kind != kafka::ErrorKind::kRetriable || attempt == kAttempts) return e;
    clock_.Sleep(std::chrono::milliseconds(100 * attempt));
  }
}

TxnResult Transaction::Fail(kafka::KafkaError error) {
  using kafka::ErrorKind;
  if (error.kind == ErrorKind::kProducerFenced || error.kind == ErrorKind::kFatal) {
    return {TxnOutcome::kFatal, std::move(error)};
  }
  // Whatever else failed (retries exhausted included), the transaction must end: a
  // transaction left open would make every later begin fail.
  const kafka::KafkaError aborted = Retry([&] { return producer_.AbortTransaction(timeout_); });
  if (aborted) return {TxnOutcome::kFatal, aborted};
  if (error.kind == ErrorKind::kGroupFenced) return {TxnOutcome::kAssignmentGone, std::move(error)};
  return {TxnOutcome::kAborted, std::move(error)};
}

TxnResult Transaction::Run(const TxnContent& content) {
  if (kafka::KafkaError e = producer_.BeginTransaction()) {
    // No transaction is open: nothing to abort.
    if (e.kind == kafka::ErrorKind::kProducerFenced || e.kind == kafka::ErrorKind::kFatal) {
      return {TxnOutcome::kFatal, std::move(e)};
    }
    return {TxnOutcome::kAborted, std::move(e)};
  }
  for (const kafka::OutgoingRecord& r : content.records) {
    if (kafka::KafkaError e = producer_.Produce(r)) return Fail(std::move(e));
  }
  if (!content.offsets.empty()) {
    kafka::KafkaError e = Retry([&] {
      return producer_.SendOffsets(content.offsets_topic, content.offsets, *content.group,
                                   timeout_);
    });
    if (e) return Fail(std::move(e));
  }
  if (kafka::KafkaError e = Retry([&] { return producer_.CommitTransaction(timeout_); })) {
    return Fail(std::move(e));
  }
  return {};
}

}  // namespace oncecount::service
