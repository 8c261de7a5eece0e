#include "processor/cmd/workload_producer.h"

#include <librdkafka/rdkafka.h>

#include <utility>

namespace oncecount::cmd {
namespace {

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* counts = static_cast<DeliveryCounts*>(opaque);
  if (m->err) {
    if (counts->failed++ == 0) counts->first_error = rd_kafka_err2str(m->err);
  } else {
    ++counts->acked;
  }
}

}  // namespace

base::Result<std::unique_ptr<WorkloadProducer>> WorkloadProducer::Create(
    const std::string& bootstrap) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::pair<const char*, std::string> settings[] = {
      {"bootstrap.servers", bootstrap},
      {"enable.idempotence", "true"},
      // One request in flight per broker. An idempotent producer that sees a later
      // request succeed takes an earlier one that failed in transport as persisted (a
      // real broker would have refused the later one as out of sequence); the
      // embedded cluster checks sequences only for transactional producers, so with
      // several requests in flight a broker going down could lose acknowledged
      // messages. With one, a failed request is resent before anything after it.
      {"max.in.flight.requests.per.connection", "1"},
      {"linger.ms", "5"},
      {"queue.buffering.max.messages", "1000000"},
  };
  for (const auto& [name, value] : settings) {
    if (rd_kafka_conf_set(conf, name, value.c_str(), error, sizeof error) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return base::UsageError(error);
    }
  }
  auto producer = std::unique_ptr<WorkloadProducer>(new WorkloadProducer);
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_conf_set_opaque(conf, &producer->counts_);
  producer->producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (producer->producer_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return base::KafkaFailure(std::string("cannot create the producer: ") + error);
  }
  return producer;
}

WorkloadProducer::~WorkloadProducer() {
  if (producer_ != nullptr) rd_kafka_destroy(producer_);
}

base::Status WorkloadProducer::Produce(const std::string& topic, WorkloadMessage& m,
                                       const std::atomic<bool>* stop) {
  const void* key = m.key ? m.key->data() : nullptr;
  const size_t key_size = m.key ? m.key->size() : 0;
  while (stop == nullptr || !stop->load()) {
    const rd_kafka_resp_err_t e =
        rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key, key_size),
                          RD_KAFKA_V_VALUE(m.value.data(), m.value.size()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      return base::KafkaFailure("cannot produce to " + topic + ": " + rd_kafka_err2str(e));
    }
    rd_kafka_poll(producer_, 10);
  }
  return base::Error(base::Errc::kStopped, "stopped while the producer's queue was full");
}

void WorkloadProducer::Poll(int timeout_ms) {
  rd_kafka_poll(producer_, timeout_ms);
}

uint64_t WorkloadProducer::Flush(int timeout_ms) {
  rd_kafka_flush(producer_, timeout_ms);
  return static_cast<uint64_t>(rd_kafka_outq_len(producer_));
}

}  // namespace oncecount::cmd
