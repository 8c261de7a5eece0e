// The metric registry: what components count, rendered in the Prometheus text format.
#include "processor/base/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace oncecount::base {
namespace {

TEST(MetricRegistry, RendersCountersAndGaugesWithTheirHelpAndType) {
  MetricRegistry registry;
  Counter& rebuilds = registry.AddCounter("x_rebuilds_total", "Rebuilds.");
  Gauge& depth = registry.AddGauge("x_depth", "Depth.");
  rebuilds.Add();
  rebuilds.Add(2);
  depth.Set(0.25);
  EXPECT_EQ(registry.Render(),
            "# HELP x_rebuilds_total Rebuilds.\n# TYPE x_rebuilds_total counter\n"
            "x_rebuilds_total 3\n"
            "# HELP x_depth Depth.\n# TYPE x_depth gauge\nx_depth 0.25\n");
}

TEST(MetricRegistry, RendersAHistogramWithCumulativeBucketsSumAndCount) {
  MetricRegistry registry;
  Histogram& h = registry.AddHistogram("x_seconds", "Durations.", {0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.Observe(v);
  EXPECT_EQ(registry.Render(),
            "# HELP x_seconds Durations.\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.1\"} 2\n"  // a bound includes its own value
            "x_seconds_bucket{le=\"1\"} 3\n"
            "x_seconds_bucket{le=\"+Inf\"} 4\n"
            "x_seconds_sum 3.65\n"
            "x_seconds_count 4\n");
}

TEST(MetricRegistry, ReturnsTheSameMetricWhenANameIsRegisteredTwice) {
  MetricRegistry registry;
  Counter& first = registry.AddCounter("x_total", "X.");
  Counter& second = registry.AddCounter("x_total", "X.");
  EXPECT_EQ(&first, &second);
  second.Add();
  EXPECT_EQ(registry.Render(), "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n");
}

TEST(MetricRegistry, GroupsCountersOfOneNameWithDifferentLabelsInOneFamily) {
  MetricRegistry registry;
  Counter& corrupt = registry.AddCounter("x_total", "X.", "reason=\"corrupt\"");
  registry.AddCounter("y_total", "Y.");
  Counter& stale = registry.AddCounter("x_total", "X.", "reason=\"stale\"");
  EXPECT_NE(&corrupt, &stale);
  EXPECT_EQ(&registry.AddCounter("x_total", "X.", "reason=\"stale\""), &stale);
  stale.Add(2);
  EXPECT_EQ(registry.Render(),
            "# HELP x_total X.\n# TYPE x_total counter\n"
            "x_total{reason=\"corrupt\"} 0\n"
            "x_total{reason=\"stale\"} 2\n"
            "# HELP y_total Y.\n# TYPE y_total counter\ny_total 0\n");
}

TEST(MetricRegistry, ReadsGaugeFunctionsWhenItRendersAndGroupsTheirLabelsInOneFamily) {
  MetricRegistry registry;
  int depth0 = 3;
  registry.AddGaugeFunction("x_depth", "Depth.", "worker=\"0\"", [&] { return depth0; });
  registry.AddCounter("x_total", "X.");
  registry.AddGaugeFunction("x_depth", "Depth.", "worker=\"1\"", [] { return 0.5; });
  depth0 = 7;  // read when rendered, not when registered
  EXPECT_EQ(registry.Render(),
            "# HELP x_depth Depth.\n# TYPE x_depth gauge\n"
            "x_depth{worker=\"0\"} 7\n"
            "x_depth{worker=\"1\"} 0.5\n"
            "# HELP x_total X.\n# TYPE x_total counter\nx_total 0\n");
}

TEST(MetricRegistry, RendersAGaugeFamilyWithTheSamplesItHasWhenItRenders) {
  MetricRegistry registry;
  std::vector<MetricRegistry::LabeledValue> restoring;
  registry.AddGaugeFamily("x_progress", "Progress.", [&] { return restoring; });
  EXPECT_EQ(registry.Render(), "# HELP x_progress Progress.\n# TYPE x_progress gauge\n");
  restoring = {{"partition=\"2\"", 0.25}, {"partition=\"5\"", 1}};
  EXPECT_EQ(registry.Render(),
            "# HELP x_progress Progress.\n# TYPE x_progress gauge\n"
            "x_progress{partition=\"2\"} 0.25\n"
            "x_progress{partition=\"5\"} 1\n");
}

TEST(MetricRegistry, EscapesBackslashesAndLineFeedsInHelp) {
  MetricRegistry registry;
  registry.AddGauge("x", "a\\b\nc");
  EXPECT_EQ(registry.Render(), "# HELP x a\\\\b\\nc\n# TYPE x gauge\nx 0\n");
}

TEST(Histogram, CountsEveryObservationFromManyThreads) {
  Histogram h(DurationBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 10000; ++i) h.Observe(0.002);
    });
  }
  for (std::thread& t : threads) t.join();
  const Histogram::Reading r = h.Read();
  EXPECT_EQ(r.count, 40000u);
  EXPECT_NEAR(r.sum, 80.0, 1e-6);
  EXPECT_EQ(r.cumulative.front(), 0u) << "0.002 s is above the first bound, 1 ms";
  EXPECT_EQ(r.cumulative[1], 40000u);
}

TEST(DurationBuckets, DoubleFromAMillisecondToOverAMinute) {
  const std::vector<double> bounds = DurationBuckets();
  ASSERT_GE(bounds.size(), 2u);
  EXPECT_DOUBLE_EQ(bounds.front(), 0.001);
  EXPECT_GT(bounds.back(), 60.0);
  for (size_t i = 1; i < bounds.size(); ++i) EXPECT_DOUBLE_EQ(bounds[i], 2 * bounds[i - 1]);
}

}  // namespace
}  // namespace oncecount::base
