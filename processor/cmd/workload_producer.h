// WorkloadProducer: how `inject` and `demo` send their workloads. It is a
// kafka::PlainProducer set up for a bulk load (one request in flight, so that
// nothing acknowledged is lost when a broker goes down; a deep local queue) plus the
// wait while that queue is full. Idempotence keeps the producer's own resends from
// adding duplicates, so the only duplicates in the topic are the workload's
// deliberate retries.
//
// Thread-safety: one owner thread; delivery reports are served on it, by Poll and
// Flush (librdkafka adds its own threads).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "processor/base/result.h"
#include "processor/cmd/inject_workload.h"
#include "processor/kafka/clients.h"

namespace oncecount::cmd {

// How a workload is sent: paced at a rate (its records' latency is what someone
// measures), or as fast as possible (a bulk load, written before anything reads it).
enum class Pacing { kPaced, kUnpaced };

// The producer settings for a workload sent so. A paced load lingers 5 ms. An unpaced
// one lingers kUnpacedLinger, so that its batches fill whatever the rate the workload
// is generated at: the embedded cluster answers a fetch with one batch per partition
// and finds it by walking the partition's batches from the first, so an input written
// in batches of a few records costs every reader of it O(batches^2), and a slower
// generator (one with more counters to keep the truth of) would write a slower input.
kafka::PlainProducerSpec WorkloadProducerSpec(Pacing pacing);
inline constexpr std::chrono::milliseconds kUnpacedLinger{100};

class WorkloadProducer {
 public:
  // A bootstrap list librdkafka refuses is a configuration error.
  static base::Result<std::unique_ptr<WorkloadProducer>> Create(const std::string& bootstrap,
                                                                Pacing pacing);

  // Queues a copy of `m`, waiting while the local queue is full; kStopped when `stop`
  // (if given) is set while it waits.
  base::Status Produce(const std::string& topic, const WorkloadMessage& m,
                       const std::atomic<bool>* stop = nullptr);
  // Serves delivery reports, waiting up to `timeout` for one.
  void Poll(std::chrono::milliseconds timeout) { producer_->Poll(timeout); }
  // Waits up to `timeout` for the outstanding reports; returns the messages still
  // without one.
  uint64_t Flush(std::chrono::milliseconds timeout) { return producer_->Flush(timeout); }

  const kafka::Deliveries& counts() const { return producer_->deliveries(); }

 private:
  explicit WorkloadProducer(std::unique_ptr<kafka::PlainProducer> producer)
      : producer_(std::move(producer)) {}

  std::unique_ptr<kafka::PlainProducer> producer_;
};

}  // namespace oncecount::cmd
