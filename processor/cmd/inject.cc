#include "processor/cmd/inject.h"

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include "processor/base/result.h"
#include "processor/cmd/atomic_file.h"
#include "processor/cmd/workload_producer.h"

namespace oncecount::cmd {
namespace {

// --timeline: a CSV row every 100 ms of the events sent and the sum they add up to.
class Timeline {
 public:
  base::Status Open(const std::string& path, std::chrono::steady_clock::time_point start) {
    next_ = start;
    if (path.empty()) return {};
    out_.open(path);
    if (!out_) return base::IoFailure("--timeline: cannot write " + path);
    out_ << "wall_ms,events,expected_sum\n";
    return {};
  }

  void Record(std::chrono::steady_clock::time_point now, uint64_t events, const Truth& truth) {
    if (!out_.is_open() || now < next_) return;
    int64_t sum = 0;
    for (const auto& [name, value] : truth.counters) sum += value;
    out_ << std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count()
         << "," << events << "," << sum << "\n";
    next_ += std::chrono::milliseconds(100);
  }

 private:
  std::ofstream out_;
  std::chrono::steady_clock::time_point next_;
};

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

// Sends the whole workload at --rate, with a progress line on `err` every second.
base::Status SendWorkload(const InjectOptions& o, InjectWorkload& workload,
                          WorkloadProducer& producer, std::ostream& err) {
  const auto start = std::chrono::steady_clock::now();
  auto next_progress = start + std::chrono::seconds(1);
  Timeline timeline;
  if (base::Status opened = timeline.Open(o.timeline_file, start); !opened) return opened;
  uint64_t sent = 0, new_sent = 0;
  while (!workload.Done()) {
    const auto now = std::chrono::steady_clock::now();
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    const bool new_allowed = o.rate <= 0 || static_cast<double>(new_sent) <
                                                o.rate * static_cast<double>(now_ms) / 1000.0;
    std::optional<WorkloadMessage> m = workload.Next(now_ms, new_allowed);
    if (!m) {
      producer.Poll(std::chrono::milliseconds(1));  // serves delivery reports while waiting
    } else {
      if (base::Status produced = producer.Produce(o.topic, *m); !produced) return produced;
      ++sent;
      if (m->kind == WorkloadMessage::Kind::kEvent) ++new_sent;
      producer.Poll(std::chrono::milliseconds(0));
    }
    timeline.Record(now, new_sent, workload.truth());
    if (now >= next_progress) {
      err << "inject: " << new_sent << "/" << o.workload.events << " events, " << sent
          << " messages sent, " << producer.counts().acked << " acknowledged\n";
      next_progress += std::chrono::seconds(1);
    }
  }
  return {};
}

}  // namespace

int RunInject(const InjectOptions& o, std::ostream& err) {
  const auto fail = [&err](const base::Error& e) {
    err << "inject: " << e << "\n";
    return base::ExitCodeFor(e.code());
  };
  if (const base::Status valid = Validate(o); !valid) return fail(valid.error());
  auto producer =
      WorkloadProducer::Create(o.bootstrap, o.rate > 0 ? Pacing::kPaced : Pacing::kUnpaced);
  if (!producer) return fail(producer.error());
  InjectWorkload workload(o.workload);
  if (const base::Status sent = SendWorkload(o, workload, **producer, err); !sent) {
    return fail(sent.error());
  }
  const uint64_t outstanding = (*producer)->Flush(std::chrono::seconds(60));
  const kafka::Deliveries& counts = (*producer)->counts();
  const Truth& truth = workload.truth();
  err << "inject: done: " << truth.events << " events, " << truth.duplicates << " retries, "
      << truth.malformed << " malformed; " << counts.acked << " acknowledged, " << counts.failed
      << " failed\n";
  if (counts.failed > 0 || outstanding > 0) {
    return fail(base::KafkaFailure(
        std::to_string(counts.failed + outstanding) + " messages were not acknowledged" +
        (counts.first_error.empty() ? "" : " (" + counts.first_error + ")")));
  }
  if (!o.truth_file.empty()) {
    if (base::Status written = WriteFileAtomically(o.truth_file, truth.ToJson()); !written) {
      return fail(base::IoFailure("--truth: " + written.message()));
    }
  }
  return 0;
}

}  // namespace oncecount::cmd
