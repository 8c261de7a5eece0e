#include "processor/cmd/workload_producer.h"

#include <utility>

#include "processor/kafka/rdkafka_clients.h"

namespace oncecount::cmd {

kafka::PlainProducerSpec WorkloadProducerSpec(Pacing pacing) {
  kafka::PlainProducerSpec spec;
  spec.max_in_flight = 1;
  spec.linger = pacing == Pacing::kPaced ? std::chrono::milliseconds(5) : kUnpacedLinger;
  spec.max_queued = 1'000'000;
  return spec;
}

base::Result<std::unique_ptr<WorkloadProducer>> WorkloadProducer::Create(
    const std::string& bootstrap, Pacing pacing) {
  const std::unique_ptr<kafka::Clients> clients = kafka::MakeRdKafkaClients(bootstrap, {});
  auto producer = clients->NewPlainProducer(WorkloadProducerSpec(pacing));
  if (!producer) {
    // The only client setting inject and demo take is the bootstrap list.
    return base::Error(producer.code(), producer.message(), "--bootstrap");
  }
  return std::unique_ptr<WorkloadProducer>(new WorkloadProducer(std::move(producer.value())));
}

base::Status WorkloadProducer::Produce(const std::string& topic, const WorkloadMessage& m,
                                       const std::atomic<bool>* stop) {
  kafka::OutgoingRecord record;
  record.topic = topic;
  if (m.key) record.key = std::string_view(*m.key);
  record.value = std::string_view(m.value);
  while (stop == nullptr || !stop->load()) {
    const kafka::KafkaError e = producer_->Produce(record);
    if (e.ok()) return {};
    if (e.code != kafka::kQueueFull) return e.ToError();
    producer_->Poll(std::chrono::milliseconds(10));
  }
  return base::Error(base::Errc::kStopped, "stopped while the producer's queue was full");
}

}  // namespace oncecount::cmd
