// Metrics: what a component counts about itself (counters, gauges, histograms), and
// the registry that GET /metrics renders. The composition root creates one
// MetricRegistry per instance and hands it to the components; each registers its
// metrics once, when it is built, and then updates them from its own thread. The
// per-shard figures that travel with a shard's state (events applied, dead letters)
// are not kept here: they are in the shard's view (http/api.cc).
//
// Thread-safety: Counter, Gauge and Histogram updates and reads are lock-free and safe
// from any thread. MetricRegistry::Add* and Render lock; the references Add* returns
// live as long as the registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace oncecount::base {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets with fixed upper bounds (Prometheus "le"), plus
// their sum and count.
class Histogram {
 public:
  // `bounds`: increasing upper bounds; +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  struct Reading {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  // Buckets, sum and count read one after another: an observation made meanwhile
  // may be in some and not in others (as in every Prometheus client).
  Reading Read() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// A sample value as Prometheus reads it: the shortest text that reads back to `v`,
// NaN and ±Inf spelled its way.
std::string PrometheusValue(double v);

// Bucket bounds for durations in seconds: 1 ms to about 65 s, doubling.
std::vector<double> DurationBuckets();

class MetricRegistry {
 public:
  // `name` follows Prometheus (snake_case, counters end in _total, units in the
  // name); registering a name twice returns the first metric (as another kind:
  // aborts, a programming error).
  // `labels`: label pairs without braces (`reason="corrupt"`): counters of one name
  // with different labels form one family; the same name and labels, the same counter.
  Counter& AddCounter(const std::string& name, const std::string& help, std::string labels = "");
  Gauge& AddGauge(const std::string& name, const std::string& help);
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds);
  // A gauge read when the registry renders (a queue's depth, a figure another object
  // keeps): `read` runs on the rendering thread, so it must be safe there, and what it
  // reads must outlive the rendering. `labels`: label pairs without braces
  // (`worker="0"`), one sample each; the samples of one name form one family.
  void AddGaugeFunction(const std::string& name, const std::string& help, std::string labels,
                        std::function<double()> read);
  // A family of gauges whose samples are known only when the registry renders (one
  // per shard being restored): `read` returns them, each with its label pairs
  // (without braces); none is fine (the family then renders its HELP and TYPE only).
  // Families registered under one name render as one.
  struct LabeledValue {
    std::string labels;
    double value = 0;
  };
  void AddGaugeFamily(const std::string& name, const std::string& help,
                      std::function<std::vector<LabeledValue>()> read);

  // Every metric in the Prometheus text format (0.0.4), families in the order of
  // their first registration.
  std::string Render() const;

 private:
  struct Entry {
    std::string name;
    std::string help;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> read;  // a gauge read on rendering
    std::string labels;            // with `read` or `counter`
    std::function<std::vector<LabeledValue>()> read_family;
  };
  void RenderEntry(const Entry& e, std::string& out) const;
  Entry* Find(const std::string& name);
  static void RequireKind(const Entry* e, bool same_kind);

  mutable std::mutex mu_;
  std::deque<Entry> entries_;
};

}  // namespace oncecount::base
