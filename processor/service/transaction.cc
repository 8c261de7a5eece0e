#include "processor/service/transaction.h"

namespace oncecount::service {
namespace {

constexpr int kAttempts = 5;

}  // namespace

template <class Call>
kafka::KafkaError Transaction::Retry(const char* what, Call call) {
  for (int attempt = 1;; ++attempt) {
    kafka::KafkaError e = call();
    if (e.kind != kafka::ErrorKind::kRetriable || attempt == kAttempts) return e;
    if (on_retry_) {
      on_retry_(std::string(what) + " failed (attempt " + std::to_string(attempt) + " of " +
                std::to_string(kAttempts) + "): " + e.ToString() + "; trying again");
    }
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
  kafka::KafkaError aborted =
      Retry("the abort", [&] { return producer_.AbortTransaction(timeout_); });
  if (aborted) {
    // The abort's error alone would hide why the transaction ended (librdkafka
    // refuses an abort after a commit that timed out with _CONFLICT, say).
    aborted.message = error.ToString() + "; the abort that followed failed too: " + aborted.message;
    return {TxnOutcome::kFatal, std::move(aborted)};
  }
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
    kafka::KafkaError e = Retry("sending the offsets", [&] {
      return producer_.SendOffsets(content.offsets_topic, content.offsets, *content.group,
                                   timeout_);
    });
    if (e) return Fail(std::move(e));
  }
  if (kafka::KafkaError e =
          Retry("the commit", [&] { return producer_.CommitTransaction(timeout_); })) {
    return Fail(std::move(e));
  }
  return {};
}

}  // namespace oncecount::service
