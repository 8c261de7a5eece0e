// The producer settings `inject` and `demo` send their workloads with.
#include "processor/cmd/workload_producer.h"

#include <gtest/gtest.h>

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;

TEST(WorkloadProducer, AnUnpacedLoadLingersUntilItsBatchesFill) {
  const kafka::PlainProducerSpec bulk = WorkloadProducerSpec(Pacing::kUnpaced);
  EXPECT_EQ(bulk.linger, kUnpacedLinger);
  // Long enough for a batch of thousands of records at the rate a generator that
  // keeps a million counters' truth writes (about 300,000 records a second).
  EXPECT_GE(kUnpacedLinger, 50ms);
  EXPECT_EQ(bulk.max_in_flight, 1);
}

TEST(WorkloadProducer, APacedLoadKeepsItsLatencyShort) {
  const kafka::PlainProducerSpec paced = WorkloadProducerSpec(Pacing::kPaced);
  EXPECT_EQ(paced.linger, 5ms);
  EXPECT_EQ(paced.max_in_flight, 1);
  EXPECT_EQ(paced.max_queued, WorkloadProducerSpec(Pacing::kUnpaced).max_queued);
}

}  // namespace
}  // namespace oncecount::cmd
