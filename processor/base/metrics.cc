#include "processor/base/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace oncecount::base {
namespace {

// A sample value as Prometheus reads it: integers without a fraction, +Inf spelled.
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buffer[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.9g", v);
  }
  return buffer;
}

void AtomicAdd(std::atomic<double>& target, double v) {
  double seen = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(seen, seen + v, std::memory_order_relaxed)) {
  }
}

void RenderHistogram(const std::string& name, const Histogram& h, std::string& out) {
  const Histogram::Reading r = h.Read();
  for (size_t i = 0; i <= r.bounds.size(); ++i) {
    const double bound =
        i < r.bounds.size() ? r.bounds[i] : std::numeric_limits<double>::infinity();
    out += name + "_bucket{le=\"" + Number(bound) + "\"} " +
           Number(static_cast<double>(r.cumulative[i])) + "\n";
  }
  out += name + "_sum " + Number(r.sum) + "\n";
  out += name + "_count " + Number(static_cast<double>(r.count)) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::Observe(double v) {
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Reading Histogram::Read() const {
  Reading r;
  r.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    r.cumulative.push_back(running);
  }
  r.sum = sum_.load(std::memory_order_relaxed);
  r.count = running;
  return r;
}

std::vector<double> DurationBuckets() {
  std::vector<double> bounds;
  for (double s = 0.001; s < 70; s *= 2) bounds.push_back(s);
  return bounds;
}

MetricRegistry::Entry* MetricRegistry::Find(const std::string& name) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const Entry& e) { return e.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

Counter& MetricRegistry::AddCounter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  if (Entry* e = Find(name); e != nullptr && e->counter) return *e->counter;
  entries_.push_back({name, help, std::make_unique<Counter>(), nullptr, nullptr});
  return *entries_.back().counter;
}

Gauge& MetricRegistry::AddGauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  if (Entry* e = Find(name); e != nullptr && e->gauge) return *e->gauge;
  entries_.push_back({name, help, nullptr, std::make_unique<Gauge>(), nullptr});
  return *entries_.back().gauge;
}

Histogram& MetricRegistry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  if (Entry* e = Find(name); e != nullptr && e->histogram) return *e->histogram;
  entries_.push_back(
      {name, help, nullptr, nullptr, std::make_unique<Histogram>(std::move(bounds))});
  return *entries_.back().histogram;
}

std::string MetricRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const Entry& e : entries_) {
    const char* type = e.counter ? "counter" : e.gauge ? "gauge" : "histogram";
    out += "# HELP " + e.name + " " + e.help + "\n# TYPE " + e.name + " " + type + "\n";
    if (e.counter) out += e.name + " " + Number(static_cast<double>(e.counter->value())) + "\n";
    if (e.gauge) out += e.name + " " + Number(e.gauge->value()) + "\n";
    if (e.histogram) RenderHistogram(e.name, *e.histogram, out);
  }
  return out;
}

}  // namespace oncecount::base
