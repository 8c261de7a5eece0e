#include "processor/cmd/inject.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <fstream>
#include <ostream>

#include "processor/base/result.h"
#include "processor/cmd/atomic_file.h"

namespace oncecount::cmd {
namespace {

struct DeliveryCounts {
  uint64_t acked = 0;
  uint64_t failed = 0;
  std::string first_error;
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* counts = static_cast<DeliveryCounts*>(opaque);
  if (m->err) {
    if (counts->failed++ == 0) counts->first_error = rd_kafka_err2str(m->err);
  } else {
    ++counts->acked;
  }
}

base::Status Validate(const InjectOptions& o) {
  const WorkloadOptions& w = o.workload;
  if (o.bootstrap.empty()) return base::UsageError("--bootstrap is required");
  if (o.topic.empty()) return base::UsageError("--topic must not be empty");
  if (w.events == 0) return base::UsageError("--events must be at least 1");
  if (!(w.duplicate_rate >= 0 && w.duplicate_rate <= 1))
    return base::UsageError("--duplicate-rate must be in 0..1");
  if (!(w.malformed_rate >= 0 && w.malformed_rate < 1))
    return base::UsageError("--malformed-rate must be in [0, 1)");
  if (w.counters == 0) return base::UsageError("--counters must be at least 1");
  if (w.clients == 0) return base::UsageError("--clients must be at least 1");
  if (w.max_retry_delay_ms < 0)
    return base::UsageError("--max-retry-delay-ms must not be negative");
  if (o.rate < 0) return base::UsageError("--rate must not be negative");
  return {};
}

}  // namespace

int RunInject(const InjectOptions& o, std::ostream& err) {
  if (const base::Status valid = Validate(o); !valid) {
    err << "inject: " << valid.error() << "\n";
    return base::ExitCodeFor(valid.code());
  }
  DeliveryCounts counts;
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::pair<const char*, std::string> settings[] = {
      {"bootstrap.servers", o.bootstrap},
      // Idempotence keeps the producer's own resends from adding duplicates: the
      // only duplicates in the topic are the workload's deliberate retries.
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
      err << "inject: " << error << "\n";
      return 2;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_conf_set_opaque(conf, &counts);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (producer == nullptr) {
    rd_kafka_conf_destroy(conf);
    err << "inject: cannot create the producer: " << error << "\n";
    return 1;
  }

  InjectWorkload workload(o.workload);
  const auto start = std::chrono::steady_clock::now();
  auto next_progress = start + std::chrono::seconds(1);
  std::ofstream timeline;
  if (!o.timeline_file.empty()) {
    timeline.open(o.timeline_file);
    if (!timeline) {
      rd_kafka_destroy(producer);
      err << "inject: --timeline: cannot write " << o.timeline_file << "\n";
      return 1;
    }
    timeline << "wall_ms,events,expected_sum\n";
  }
  auto next_timeline = start;
  uint64_t sent = 0, new_sent = 0;
  while (!workload.Done()) {
    const auto now = std::chrono::steady_clock::now();
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    const bool new_allowed = o.rate <= 0 || static_cast<double>(new_sent) <
                                                o.rate * static_cast<double>(now_ms) / 1000.0;
    std::optional<WorkloadMessage> m = workload.Next(now_ms, new_allowed);
    if (!m) {
      rd_kafka_poll(producer, 1);  // serves delivery reports while waiting
    } else {
      const void* key = m->key ? m->key->data() : nullptr;
      const size_t key_size = m->key ? m->key->size() : 0;
      void* value = m->value.data();
      const size_t value_size = m->value.size();
      while (true) {
        const rd_kafka_resp_err_t e =
            rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(o.topic.c_str()),
                              RD_KAFKA_V_KEY(key, key_size), RD_KAFKA_V_VALUE(value, value_size),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          rd_kafka_poll(producer, 10);
          continue;
        }
        if (e) {
          err << "inject: cannot produce to " << o.topic << ": " << rd_kafka_err2str(e) << "\n";
          rd_kafka_destroy(producer);
          return 1;
        }
        break;
      }
      ++sent;
      if (m->kind == WorkloadMessage::Kind::kEvent) ++new_sent;
      rd_kafka_poll(producer, 0);
    }
    if (timeline.is_open() && now >= next_timeline) {
      int64_t sum = 0;
      for (const auto& [name, value] : workload.truth().counters) sum += value;
      timeline << std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()
               << "," << new_sent << "," << sum << "\n";
      next_timeline += std::chrono::milliseconds(100);
    }
    if (now >= next_progress) {
      err << "inject: " << new_sent << "/" << o.workload.events << " events, " << sent
          << " messages sent, " << counts.acked << " acknowledged\n";
      next_progress += std::chrono::seconds(1);
    }
  }
  rd_kafka_flush(producer, 60000);
  const uint64_t outstanding = static_cast<uint64_t>(rd_kafka_outq_len(producer));
  rd_kafka_destroy(producer);

  const Truth& truth = workload.truth();
  err << "inject: done: " << truth.events << " events, " << truth.duplicates << " retries, "
      << truth.malformed << " malformed; " << counts.acked << " acknowledged, " << counts.failed
      << " failed\n";
  if (counts.failed > 0 || outstanding > 0) {
    err << "inject: " << counts.failed + outstanding << " messages were not acknowledged"
        << (counts.first_error.empty() ? "" : " (" + counts.first_error + ")") << "\n";
    return 1;
  }
  if (!o.truth_file.empty() && !WriteFileAtomically(o.truth_file, truth.ToJson())) {
    err << "inject: --truth: cannot write " << o.truth_file << "\n";
    return 1;
  }
  return 0;
}

}  // namespace oncecount::cmd
