// Router with two shard workers on their own threads, fed messages read from the
// strict Kafka double.
#include "processor/service/router.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/strict_kafka.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::StrictKafka;

constexpr int64_t kNowMs = 1'700'000'000'000;

class RouterTest : public ::testing::Test {
 protected:
  RouterTest() {
    EXPECT_TRUE(kafka_.CreateTopic("events", 4).ok());
    for (int i = 0; i < 2; ++i) {
      WorkerOptions o;
      o.input_topic = "events";
      o.now_ms = [] { return kNowMs; };
      workers_.push_back(std::make_unique<ShardWorker>(std::move(o)));
      threads_.emplace_back([w = workers_.back().get()] { w->Run(); });
      Adopt(*workers_.back(), base::Partition(i));
    }
    Adopt(*workers_[0], base::Partition(2));  // worker 0 owns two shards
  }
  ~RouterTest() override {
    for (auto& w : workers_) w->Close();
    for (std::thread& t : threads_) t.join();
  }

  static void Adopt(ShardWorker& worker, base::Partition partition) {
    filter::DedupSpec spec;
    spec.expected_rate = 1000;
    spec.window = filter::Millis{10'000};
    auto made = shard::ShardState::Create(partition, spec, filter::Millis{0});
    ASSERT_TRUE(made.ok()) << made.error();
    made.value()->SetClaim(base::Epoch(1), 0xa1, filter::IdHashKey{0x5eed});
    worker.Adopt(std::move(made).value());
  }

  // `n` events sent to `partition`, as a consumer delivers them; `padding` bytes more
  // in each value, in a field the parser ignores.
  std::vector<kafka::Message> Messages(base::Partition partition, int n, size_t padding = 0) {
    const base::Offset first{kafka_.HighWatermark("events", partition.value())};
    for (int i = 0; i < n; ++i) {
      const std::string key =
          "c/" + std::to_string(partition.value()) + "/" + std::to_string(first.value() + i);
      const std::string value =
          R"({"counter":"n","delta":1,"pad":")" + std::string(padding, 'p') + "\"}";
      EXPECT_TRUE(kafka_.ProduceForTest("events", partition.value(), key, value).ok());
    }
    auto reader = kafka_.ClientsFor("reader")->NewPartitionReader("test");
    EXPECT_TRUE(reader.ok());
    EXPECT_TRUE(reader.value()->Assign({{"events", partition, first}}).ok());
    std::vector<kafka::Message> out;
    while (std::optional<kafka::Message> m = reader.value()->Poll(0ms)) {
      if (m->kind == kafka::MessageKind::kRecord) out.push_back(std::move(*m));
    }
    EXPECT_EQ(out.size(), static_cast<size_t>(n));
    return out;
  }

  std::vector<ShardWorker*> Workers() { return {workers_[0].get(), workers_[1].get()}; }

  // What worker `w` seals now: partition → messages applied in its batch.
  std::map<base::Partition, uint64_t> Sealed(int w) {
    std::map<base::Partition, uint64_t> out;
    for (const SealedShard& s : workers_[static_cast<size_t>(w)]->Seal().get()) {
      out[s.partition] = s.view->events_applied;
    }
    workers_[static_cast<size_t>(w)]->Committed();
    return out;
  }

  StrictKafka kafka_;
  std::vector<std::unique_ptr<ShardWorker>> workers_;
  std::vector<std::thread> threads_;
};

TEST_F(RouterTest, HandsEachShardsMessagesToTheWorkerThatOwnsIt) {
  Router router(Workers(), 1000);
  for (kafka::Message& m : Messages(base::Partition(0), 3)) router.Route(std::move(m));
  for (kafka::Message& m : Messages(base::Partition(1), 5)) router.Route(std::move(m));
  EXPECT_EQ(&router.WorkerOf(base::Partition(0)), workers_[0].get());
  EXPECT_EQ(&router.WorkerOf(base::Partition(3)), workers_[1].get());

  router.HandOverAll();

  EXPECT_EQ(Sealed(0), (std::map<base::Partition, uint64_t>{{base::Partition(0), 3}}));
  EXPECT_EQ(Sealed(1), (std::map<base::Partition, uint64_t>{{base::Partition(1), 5}}));
}

// A message below its shard's position counts as a re-delivery and is skipped, so a
// shard's run out of order would apply fewer events.
TEST_F(RouterTest, KeepsEachShardsOrderWhenTheConsumerInterleavesTheShardsOfOneWorker) {
  Router router(Workers(), 1000);
  std::vector<kafka::Message> zero = Messages(base::Partition(0), 40);
  std::vector<kafka::Message> two = Messages(base::Partition(2), 40);
  for (size_t i = 0; i < 40; i += 4) {  // runs of four, alternating, as fetches interleave
    for (size_t j = i; j < i + 4; ++j) router.Route(std::move(zero[j]));
    for (size_t j = i; j < i + 4; ++j) router.Route(std::move(two[j]));
  }
  router.HandOverAll();

  EXPECT_EQ(Sealed(0), (std::map<base::Partition, uint64_t>{{base::Partition(0), 40},
                                                            {base::Partition(2), 40}}));
}

TEST_F(RouterTest, HoldsMessagesUntilHandedOverOrUntilAWorkersGroupIsFull) {
  Router router(Workers(), 100'000);
  for (kafka::Message& m : Messages(base::Partition(0), 10)) router.Route(std::move(m));
  EXPECT_TRUE(Sealed(0).empty()) << "staged, not handed over yet";
  for (kafka::Message& m : Messages(base::Partition(0), 502)) router.Route(std::move(m));
  EXPECT_EQ(Sealed(0), (std::map<base::Partition, uint64_t>{{base::Partition(0), 512}}))
      << "a full group goes at once";
}

// A worker's mailbox is bounded in hand-overs: with events near the record limit, 512
// to a hand-over let a worker that is behind hold hundreds of MB per slot.
TEST_F(RouterTest, HandsAGroupOverOnceItHoldsAMebibyteWhateverItsCount) {
  Router router(Workers(), 100'000);
  std::vector<kafka::Message> large = Messages(base::Partition(0), 4, 300'000);
  for (size_t i = 0; i < 3; ++i) router.Route(std::move(large[i]));
  EXPECT_TRUE(Sealed(0).empty()) << "900 kB: staged still";
  router.Route(std::move(large[3]));
  EXPECT_EQ(Sealed(0), (std::map<base::Partition, uint64_t>{{base::Partition(0), 4}}))
      << "1.2 MB goes at once";
}

TEST_F(RouterTest, MakesACommitDueOnceOneShardsBatchIsFullAndCountsAgainAfterTheSeal) {
  Router router(Workers(), 4);
  for (kafka::Message& m : Messages(base::Partition(0), 3)) router.Route(std::move(m));
  for (kafka::Message& m : Messages(base::Partition(1), 3)) router.Route(std::move(m));
  EXPECT_FALSE(router.commit_due()) << "six messages, but no shard has four";
  EXPECT_EQ(router.routed_since_commit(), 6u);
  for (kafka::Message& m : Messages(base::Partition(1), 1)) router.Route(std::move(m));
  EXPECT_TRUE(router.commit_due());

  router.HandOverAll();
  router.Sealed();

  EXPECT_FALSE(router.commit_due());
  EXPECT_EQ(router.routed_since_commit(), 0u);
  for (kafka::Message& m : Messages(base::Partition(1), 3)) router.Route(std::move(m));
  EXPECT_FALSE(router.commit_due());
  router.HandOverAll();
}

}  // namespace
}  // namespace oncecount::service
