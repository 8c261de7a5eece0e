// WorkloadProducer: the idempotent Kafka producer that `inject` and `demo` send their
// workloads with, and the delivery reports it counts. Idempotence keeps the
// producer's own resends from adding duplicates, so the only duplicates in the
// topic are the workload's deliberate retries.
//
// Thread-safety: one owner thread; delivery reports are served on it, by Poll and
// Flush (librdkafka adds its own threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "processor/base/result.h"
#include "processor/cmd/inject_workload.h"

struct rd_kafka_s;

namespace oncecount::cmd {

struct DeliveryCounts {
  uint64_t acked = 0;
  uint64_t failed = 0;
  std::string first_error;  // of the first failed delivery
};

class WorkloadProducer {
 public:
  // A bootstrap list librdkafka refuses is a usage error.
  static base::Result<std::unique_ptr<WorkloadProducer>> Create(const std::string& bootstrap);
  ~WorkloadProducer();
  WorkloadProducer(const WorkloadProducer&) = delete;
  WorkloadProducer& operator=(const WorkloadProducer&) = delete;

  // Queues a copy of `m`, waiting while the local queue is full; kStopped when `stop`
  // (if given) is set while it waits.
  base::Status Produce(const std::string& topic, WorkloadMessage& m,
                       const std::atomic<bool>* stop = nullptr);
  // Serves delivery reports, waiting up to `timeout_ms` for one.
  void Poll(int timeout_ms);
  // Waits up to `timeout_ms` for the outstanding reports; returns the messages still
  // without one.
  uint64_t Flush(int timeout_ms);

  const DeliveryCounts& counts() const { return counts_; }

 private:
  WorkloadProducer() = default;

  rd_kafka_s* producer_ = nullptr;
  DeliveryCounts counts_;  // written by the delivery callback, on the owner thread
};

}  // namespace oncecount::cmd
