#include "processor/base/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace oncecount::base {
namespace {

// HELP text escapes backslashes and line feeds (exposition format 0.0.4).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
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
    out += name + "_bucket{le=\"" + PrometheusValue(bound) + "\"} " +
           std::to_string(r.cumulative[i]) + "\n";
  }
  out += name + "_sum " + PrometheusValue(r.sum) + "\n";
  out += name + "_count " + std::to_string(r.count) + "\n";
}

}  // namespace

std::string PrometheusValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general);
  return error == std::errc() ? std::string(buffer, end) : "NaN";
}

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

// A name registered as two kinds would make two families of one name, which
// Prometheus rejects: a programming error, caught by the first test that registers.
void MetricRegistry::RequireKind(const Entry* e, bool same_kind) {
  if (e != nullptr && !same_kind) {
    std::fprintf(stderr, "metric %s registered as two kinds\n", e->name.c_str());
    std::abort();
  }
}

Counter& MetricRegistry::AddCounter(const std::string& name, const std::string& help,
                                    std::string labels) {
  std::lock_guard lock(mu_);
  const Entry* e = Find(name);
  RequireKind(e, e != nullptr && e->counter);
  for (Entry& same : entries_) {
    if (same.name == name && same.labels == labels) return *same.counter;
  }
  entries_.push_back(
      {name, help, std::make_unique<Counter>(), nullptr, nullptr, {}, std::move(labels), {}});
  return *entries_.back().counter;
}

Gauge& MetricRegistry::AddGauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  Entry* e = Find(name);
  RequireKind(e, e != nullptr && e->gauge);
  if (e != nullptr) return *e->gauge;
  entries_.push_back({name, help, nullptr, std::make_unique<Gauge>(), nullptr, {}, {}, {}});
  return *entries_.back().gauge;
}

Histogram& MetricRegistry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  Entry* e = Find(name);
  RequireKind(e, e != nullptr && e->histogram);
  if (e != nullptr) return *e->histogram;
  entries_.push_back(
      {name, help, nullptr, nullptr, std::make_unique<Histogram>(std::move(bounds)), {}, {}, {}});
  return *entries_.back().histogram;
}

void MetricRegistry::AddGaugeFunction(const std::string& name, const std::string& help,
                                      std::string labels, std::function<double()> read) {
  std::lock_guard lock(mu_);
  const Entry* e = Find(name);
  RequireKind(e, e != nullptr && e->read);
  Entry entry{name, help, nullptr, nullptr, nullptr, std::move(read), std::move(labels), {}};
  entries_.push_back(std::move(entry));
}

void MetricRegistry::AddGaugeFamily(const std::string& name, const std::string& help,
                                    std::function<std::vector<LabeledValue>()> read) {
  std::lock_guard lock(mu_);
  const Entry* e = Find(name);
  RequireKind(e, e != nullptr && e->read_family);
  entries_.push_back({name, help, nullptr, nullptr, nullptr, {}, {}, std::move(read)});
}

void MetricRegistry::RenderEntry(const Entry& e, std::string& out) const {
  if (e.counter) {
    out += e.name + (e.labels.empty() ? "" : "{" + e.labels + "}") + " " +
           std::to_string(e.counter->value()) + "\n";
  }
  if (e.gauge) out += e.name + " " + PrometheusValue(e.gauge->value()) + "\n";
  if (e.histogram) RenderHistogram(e.name, *e.histogram, out);
  if (e.read) {
    out += e.name + (e.labels.empty() ? "" : "{" + e.labels + "}") + " " +
           PrometheusValue(e.read()) + "\n";
  }
  if (e.read_family) {
    for (const LabeledValue& v : e.read_family()) {
      out += e.name + (v.labels.empty() ? "" : "{" + v.labels + "}") + " " +
             PrometheusValue(v.value) + "\n";
    }
  }
}

std::string MetricRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& first = entries_[i];
    const bool seen = std::any_of(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(i),
                                  [&](const Entry& e) { return e.name == first.name; });
    if (seen) continue;
    const char* type = first.counter ? "counter" : first.histogram ? "histogram" : "gauge";
    out += "# HELP " + first.name + " " + EscapeHelp(first.help) + "\n# TYPE " + first.name + " " +
           type + "\n";
    for (size_t j = i; j < entries_.size(); ++j) {
      if (entries_[j].name == first.name) RenderEntry(entries_[j], out);
    }
  }
  return out;
}

}  // namespace oncecount::base
