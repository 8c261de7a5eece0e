// ShardWorker on its own thread, fed real input messages: produced to the embedded
// cluster and read back over loopback with the service's Kafka clients, as the
// processor hands them over.
#include "processor/service/shard_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/kafka/embedded_cluster.h"
#include "processor/kafka/rdkafka_clients.h"
#include "tests/testing/out_of_memory_filter.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using changelog::BatchRecord;

constexpr int64_t kNowMs = 1'700'000'000'000;

struct Input {
  std::optional<std::string> key;
  std::string value;
  std::map<std::string, std::string> headers;
};

std::string Event(const std::string& counter, int64_t delta) {
  return "{\"counter\":\"" + counter + "\",\"delta\":" + std::to_string(delta) + "}";
}

// An embedded cluster with topic "events" (2 partitions) and a reader that reads
// what the test produced to it, message by message, through the service's own Kafka
// clients.
class Feed {
 public:
  Feed() {
    auto started = kafka::EmbeddedCluster::Start(1, {{"events", 2}});
    if (auto* error = (started.ok() ? nullptr : &started.message())) {
      ADD_FAILURE() << *error;
      return;
    }
    cluster_ = std::move(started).value();
    clients_ = kafka::MakeRdKafkaClients(cluster_->bootstrap_servers(), {});
    auto producer = clients_->NewPlainProducer({});
    auto reader = clients_->NewPartitionReader("shard-worker-test");
    EXPECT_TRUE(producer.ok() && reader.ok());
    if (!producer.ok() || !reader.ok()) return;
    producer_ = std::move(producer.value());
    reader_ = std::move(reader.value());
    EXPECT_FALSE(reader_->Assign({{"events", base::Partition(0), kafka::kOffsetBeginning},
                                  {"events", base::Partition(1), kafka::kOffsetBeginning}}));
  }

  // Produces `inputs` to `partition` and returns them as the reader delivers them, as
  // the router hands them over (one run of the shard).
  std::vector<InputRun> RoundTrip(base::Partition partition, const std::vector<Input>& inputs) {
    for (const Input& in : inputs) {
      kafka::OutgoingRecord r{"events", partition, std::nullopt, in.value, {}};
      if (in.key) r.key = *in.key;
      for (const auto& [name, value] : in.headers) r.headers.push_back({name, value});
      EXPECT_FALSE(producer_->Produce(r));
    }
    producer_->Flush(10s);
    std::vector<kafka::Message> out;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (out.size() < inputs.size() && std::chrono::steady_clock::now() < deadline) {
      std::optional<kafka::Message> m = reader_->Poll(100ms);
      if (m && m->kind == kafka::MessageKind::kRecord) out.push_back(std::move(*m));
    }
    EXPECT_EQ(out.size(), inputs.size());
    std::vector<InputRun> runs;
    runs.push_back({partition, std::move(out)});
    return runs;
  }

 private:
  std::unique_ptr<kafka::EmbeddedCluster> cluster_;
  std::unique_ptr<kafka::Clients> clients_;
  std::unique_ptr<kafka::PlainProducer> producer_;
  std::unique_ptr<kafka::PartitionReader> reader_;
};

// A worker running on its own thread for the test's lifetime.
class RunningWorker {
 public:
  explicit RunningWorker(WorkerOptions options) : worker_(std::move(options)) {
    thread_ = std::thread([this] { worker_.Run(); });
  }
  ~RunningWorker() {
    worker_.Close();
    thread_.join();
  }
  ShardWorker* operator->() { return &worker_; }

 private:
  ShardWorker worker_;
  std::thread thread_;
};

WorkerOptions Options() {
  WorkerOptions o;
  o.input_topic = "events";
  o.target_fpp = 1e-6;
  o.now_ms = [] { return kNowMs; };
  return o;
}

// A fresh shard, claimed at `epoch`, as the processor adopts it after a restore.
std::unique_ptr<shard::ShardState> FreshShard(base::Partition partition, uint64_t epoch = 1) {
  filter::DedupSpec spec;
  spec.expected_rate = 1000;
  spec.window = filter::Millis{10'000};
  auto made = shard::ShardState::Create(partition, spec, filter::Millis{0});
  EXPECT_TRUE(made.ok());
  made.value()->SetClaim(base::Epoch(epoch), 0xc1a1 + epoch, filter::IdHashKey{0x5eed});
  return std::move(made).value();
}

// The one encoded batch of a seal that stayed under the record limit.
const std::string& OnlyOne(const std::vector<std::string>& batches) {
  EXPECT_EQ(batches.size(), 1u) << "the batch was cut";
  static const std::string kNone;
  return batches.empty() ? kNone : batches.front();
}

BatchRecord DecodedBatch(const std::string& bytes) {
  auto decoded = changelog::DecodeRecord(bytes);
  EXPECT_TRUE(decoded.ok()) << decoded.error();
  return std::get<BatchRecord>(decoded.value());
}

std::optional<int64_t> CounterIn(const shard::ShardView& view, const std::string& name) {
  return view.counters->Find(name);
}

std::map<std::string, std::string> HeadersOf(const DeadLetter& d) {
  std::map<std::string, std::string> out;
  for (const kafka::Header& h : d.headers) out[h.name] = h.value.value_or("");
  return out;
}

TEST(ShardWorker, AppliesHandedOverMessagesAndSealsThemIntoOneChangelogBatch) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(0), 3));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/1", Event("likes", 2), {}},
                                                    {"c-1/2", Event("likes", 5), {}},
                                                    {"c-1/1", Event("likes", 2), {}},  // a retry
                                                    {"c-2/1", Event("views", 1), {}}}));
  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  const SealedShard& s = sealed[0];
  EXPECT_EQ(s.partition.value(), 0);
  EXPECT_EQ(s.seq.value(), 1u);
  EXPECT_EQ(s.next_offset.value(), 4);
  EXPECT_TRUE(s.dead_letters.empty());
  EXPECT_TRUE(s.snapshot.empty());
  const BatchRecord batch = DecodedBatch(OnlyOne(s.batches));
  EXPECT_EQ(batch.epoch.value(), 3u);
  EXPECT_EQ(batch.seq.value(), 1u);
  EXPECT_EQ(batch.sealed_at_ms, kNowMs);
  EXPECT_EQ(batch.input_from.value(), 0);
  EXPECT_EQ(batch.input_to.value(), 4);
  EXPECT_EQ(batch.stats.applied, 3u);
  EXPECT_EQ(batch.stats.duplicates, 1u);
  ASSERT_EQ(batch.counters.size(), 2u);
  EXPECT_EQ(batch.counters[0].name, "likes");
  EXPECT_EQ(batch.counters[0].value, 7);
  // The view describes the sealed batch, to be published once it is committed.
  ASSERT_NE(s.view, nullptr);
  EXPECT_EQ(s.view->changelog_seq.value(), 1u);
  EXPECT_EQ(s.view->input_offset.value(), 4);
  EXPECT_EQ(CounterIn(*s.view, "likes"), 7);
  EXPECT_EQ(CounterIn(*s.view, "views"), 1);
  EXPECT_EQ(s.view->duplicates_dropped, 1u);
  EXPECT_FALSE(s.view->digest.empty());
}

// One fresh shard on a worker whose wall clock the test sets, given one event of counter
// "likes" at a time, sealed and committed at once.
class ClockedShard {
 public:
  ClockedShard() : worker_(WithClock(now_ms)) { worker_->Adopt(FreshShard(base::Partition(0))); }

  // The view the commit of event `id` publishes (`backlog`: ShardWorker::Seal's).
  std::shared_ptr<const shard::ShardView> Seal(const std::string& id, bool backlog) {
    worker_->Apply(feed_.RoundTrip(base::Partition(0), {{id, Event("likes", 1), {}}}));
    std::vector<SealedShard> sealed = worker_->Seal(backlog).get();
    EXPECT_EQ(sealed.size(), 1u);
    worker_->Committed();
    return sealed.empty() ? nullptr : sealed[0].view;
  }
  ShardWorker* worker() { return worker_.operator->(); }

  std::atomic<int64_t> now_ms{kNowMs};  // before worker_, whose clock reads it

 private:
  static WorkerOptions WithClock(std::atomic<int64_t>& now_ms) {
    WorkerOptions o = Options();
    o.now_ms = [&now_ms] { return now_ms.load(); };
    return o;
  }

  Feed feed_;
  RunningWorker worker_;
};

// While the input is backlogged, the counters of a shard's views are rebuilt at most
// once per kBacklogCountersEveryMs, and the view says how far behind they are; the
// commit that finds the input drained brings them up to date whatever their age.
TEST(ShardWorker, ViewsOfABackloggedShardRebuildItsCountersAtMostOnceASecond) {
  ClockedShard shard;
  std::atomic<int64_t>& now_ms = shard.now_ms;
  auto seal = [&shard](const std::string& id, bool backlog) { return shard.Seal(id, backlog); };
  const auto first = seal("c/1", true);  // no earlier view: built
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(CounterIn(*first, "likes"), 1);
  EXPECT_EQ(first->counters_behind_ms, 0);

  now_ms += 400;
  const auto kept = seal("c/2", true);
  EXPECT_EQ(kept->counters, first->counters);  // shared, not rebuilt
  EXPECT_EQ(CounterIn(*kept, "likes"), 1);
  EXPECT_EQ(kept->counters_behind_ms, 400);
  EXPECT_EQ(kept->events_applied, 2u);  // everything else is up to date

  now_ms += ShardWorker::kBacklogCountersEveryMs - 400;
  const auto rebuilt = seal("c/3", true);
  EXPECT_EQ(CounterIn(*rebuilt, "likes"), 3);
  EXPECT_EQ(rebuilt->counters_behind_ms, 0);

  now_ms += 10;
  const auto drained = seal("c/4", false);
  EXPECT_EQ(CounterIn(*drained, "likes"), 4);
  EXPECT_EQ(drained->counters_behind_ms, 0);

  // Regression: the age is the wall clock's, and a clock stepped back kept the counters
  // for as long as the step, with a negative age that made answers look fresh.
  now_ms -= 60'000;
  const auto stepped_back = seal("c/5", true);
  EXPECT_EQ(CounterIn(*stepped_back, "likes"), 5);
  EXPECT_EQ(stepped_back->counters_behind_ms, 0);
}

// A shard whose last batch was sealed under a backlog may keep older counters in a
// view whose filter detail is fresh (the two are rebuilt on their own clocks), and then
// see no batch for a long time: the next refresh of idle views brings its counters up
// to date, not only views whose filter detail is behind.
TEST(ShardWorker, AnIdleShardWhoseLastViewKeptOlderCountersHasThemRebuiltAtTheNextRefresh) {
  ClockedShard shard;
  std::atomic<int64_t>& now_ms = shard.now_ms;
  auto seal = [&shard](const std::string& id, bool backlog) { return shard.Seal(id, backlog); };
  ASSERT_NE(seal("c/1", true), nullptr);  // both built
  now_ms += 300;
  ASSERT_NE(seal("c/2", false), nullptr);  // drained: counters built, filter detail kept
  now_ms += 700;
  const auto last = seal("c/3", true);  // the filter detail is a second old, the counters not
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(CounterIn(*last, "likes"), 2);
  EXPECT_EQ(last->counters_behind_ms, 700);
  EXPECT_EQ(last->digest_seq, last->changelog_seq);  // its filter detail is current

  now_ms += 1000;
  const std::vector<std::shared_ptr<const shard::ShardView>> refreshed =
      shard.worker()->RefreshIdleViews().get();
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(CounterIn(*refreshed[0], "likes"), 3);
  EXPECT_EQ(refreshed[0]->counters_behind_ms, 0);
  // Up to date now: the next refresh has nothing to do.
  EXPECT_TRUE(shard.worker()->RefreshIdleViews().get().empty());
}

// A filter at its memory bound drops ids of its window (SPEC §2.1): the metric and
// /readyz say so, and the log says it once, with the window the filter still holds.
TEST(ShardWorker, SaysOnceInTheLogWhenAShardsFilterForgetsIdsOfItsWindowEarly) {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::atomic<int64_t> now_ms{kNowMs};
  WorkerOptions options = Options();
  options.now_ms = [&now_ms] { return now_ms.load(); };  // views refresh the filter's summary
  options.log = base::Logger([&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  });
  filter::DedupSpec spec;
  spec.mode = filter::DedupMode::kExact;
  spec.expected_rate = 10;
  spec.window = filter::Millis{30'000};
  spec.memory_limit_bytes = 16 * 1024;  // exact mode: 512 ids
  auto made = shard::ShardState::Create(base::Partition(0), spec, filter::Millis{0});
  ASSERT_TRUE(made.ok()) << made.error();
  made.value()->SetClaim(base::Epoch(1), 0xc1, filter::IdHashKey{0x5eed});
  Feed feed;
  RunningWorker worker(std::move(options));
  worker->Adopt(std::move(made).value());
  const auto burst = [&feed](int from, int to) {
    std::vector<Input> inputs;
    for (int i = from; i < to; ++i) inputs.push_back({"c/" + std::to_string(i), Event("n", 1), {}});
    return feed.RoundTrip(base::Partition(0), inputs);
  };
  worker->Apply(burst(0, 400));
  ASSERT_EQ(worker->Seal().get().size(), 1u);
  worker->Committed({});
  {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(lines.empty()) << lines.front();
  }

  now_ms += 10'000;
  worker->Apply(burst(400, 1000));  // 1,000 ids within the window, room for 512
  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  ASSERT_NE(sealed[0].view, nullptr);
  EXPECT_GT(sealed[0].view->filter.forgotten_early, 0u);
  worker->Committed({});
  now_ms += 10'000;
  worker->RefreshIdleViews().get();  // the shard still forgets: said once, not again
  std::lock_guard lock(mutex);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("shard 0: its filter reached its memory bound (16384 bytes"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("of its 30000 ms window"), std::string::npos) << lines[0];
}

// One shard's failure is that shard's: it seals nothing more (its input offsets are
// not committed past its last batch) and says why, while the other shards of the
// worker apply and seal on; the processor restores it (ShardFailed).
TEST(ShardWorker, AShardWhoseStateThrowsFailsAloneAndSealsNothingMore) {
  std::mutex mutex;
  std::vector<std::string> lines;
  WorkerOptions options = Options();
  options.log = base::Logger([&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  });
  Feed feed;
  RunningWorker worker(std::move(options));
  auto failing = shard::ShardState::WithFilter(base::Partition(0),
                                               std::make_unique<testing::OutOfMemoryAfter>(2));
  failing->SetClaim(base::Epoch(1), 0xc1, filter::IdHashKey{0x5eed});
  worker->Adopt(std::move(failing));
  worker->Adopt(FreshShard(base::Partition(1)));
  worker->Apply(feed.RoundTrip(
      base::Partition(0),
      {{"a/1", Event("n", 1), {}}, {"a/2", Event("n", 1), {}}, {"a/3", Event("n", 1), {}}}));
  worker->Apply(feed.RoundTrip(base::Partition(1), {{"b/1", Event("n", 1), {}}}));

  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 2u);
  const SealedShard& failed = sealed[0].partition == base::Partition(0) ? sealed[0] : sealed[1];
  const SealedShard& healthy = sealed[0].partition == base::Partition(0) ? sealed[1] : sealed[0];
  ASSERT_TRUE(failed.failure.has_value());
  EXPECT_EQ(*failed.failure, "applying its input failed: out of memory");
  EXPECT_TRUE(failed.batches.empty());
  EXPECT_EQ(failed.view, nullptr);
  EXPECT_FALSE(healthy.failure.has_value());
  EXPECT_EQ(DecodedBatch(OnlyOne(healthy.batches)).stats.applied, 1u);
  worker->Committed({});

  // Later input of the failed shard is not applied: it stays failed until dropped.
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"a/4", Event("n", 1), {}}}));
  sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  EXPECT_TRUE(sealed[0].failure.has_value());
  std::lock_guard lock(mutex);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("shard 0: applying its input failed: out of memory"), std::string::npos)
      << lines[0];
}

TEST(ShardWorker, DeadLettersKeepTheOriginalKeyValueAndHeadersAndAddReasonAndSource) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(1)));
  worker->Apply(feed.RoundTrip(base::Partition(1), {{"c-1/1", "{\"counter\": ", {{"trace", "abc"}}},
                                                    {std::nullopt, Event("likes", 1), {}},
                                                    {"c-1/2", Event("likes", 1), {}}}));
  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  ASSERT_EQ(sealed[0].dead_letters.size(), 2u);
  const DeadLetter& bad_json = sealed[0].dead_letters[0];
  EXPECT_EQ(bad_json.key, "c-1/1");
  EXPECT_EQ(bad_json.value, "{\"counter\": ");
  const auto headers = HeadersOf(bad_json);
  EXPECT_EQ(headers.at("trace"), "abc");
  EXPECT_EQ(headers.at("oncecount.error"), "invalid_json");
  EXPECT_EQ(headers.at("oncecount.source"), "events/1/0");
  const DeadLetter& no_key = sealed[0].dead_letters[1];
  EXPECT_FALSE(no_key.key.has_value());
  EXPECT_EQ(HeadersOf(no_key).at("oncecount.error"), "missing_key");
  EXPECT_EQ(HeadersOf(no_key).at("oncecount.source"), "events/1/1");
  EXPECT_EQ(sealed[0].view->dead_lettered, 2u);
  EXPECT_EQ(CounterIn(*sealed[0].view, "likes"), 1);
}

TEST(ShardWorker, IgnoresInputOfShardsItDoesNotOwnOrHasDropped) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(0)));
  worker->Apply(
      feed.RoundTrip(base::Partition(1), {{"c-1/1", Event("likes", 1), {}}}));  // not adopted
  worker->Drop({base::Partition(0)});
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/2", Event("likes", 1), {}}}));
  EXPECT_TRUE(worker->Seal().get().empty());
}

// Messages posted before a shard is dropped and adopted again (after an aborted
// transaction) are applied to the old state or not at all, never to the new one.
TEST(ShardWorker, AppliesNothingPostedBeforeADropToTheStateAdoptedAfterIt) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(0)));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/1", Event("likes", 1), {}}}));
  worker->Drop({base::Partition(0)});
  worker->Adopt(FreshShard(base::Partition(0), 2));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/2", Event("likes", 10), {}}}));
  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  const BatchRecord batch = DecodedBatch(OnlyOne(sealed[0].batches));
  EXPECT_EQ(batch.epoch.value(), 2u);
  EXPECT_EQ(batch.input_from.value(), 1);
  EXPECT_EQ(CounterIn(*sealed[0].view, "likes"), 10);
}

TEST(ShardWorker, BuildsTheNextBatchWhileOneIsInFlightAndCommitsInOrder) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(0)));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/1", Event("likes", 1), {}}}));
  std::vector<SealedShard> first = worker->Seal().get();
  ASSERT_EQ(first.size(), 1u);
  // The transaction commits while more input arrives.
  worker->Apply(feed.RoundTrip(
      base::Partition(0), {{"c-1/2", Event("likes", 1), {}}, {"c-1/1", Event("likes", 1), {}}}));
  worker->Committed();
  std::vector<SealedShard> second = worker->Seal().get();
  ASSERT_EQ(second.size(), 1u);
  const BatchRecord batch = DecodedBatch(OnlyOne(second[0].batches));
  EXPECT_EQ(batch.seq.value(), 2u);
  EXPECT_EQ(batch.input_from.value(), 1);
  EXPECT_EQ(batch.input_to.value(), 3);
  EXPECT_EQ(batch.stats.applied, 1u);
  EXPECT_EQ(batch.stats.duplicates, 1u);
  worker->Committed();
  // Idle now: a refresh gives the view of the last commit with a fresh digest.
  std::vector<std::shared_ptr<const shard::ShardView>> views = worker->RefreshIdleViews().get();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0]->changelog_seq.value(), 2u);
  EXPECT_EQ(views[0]->digest_seq.value(), 2u);
  EXPECT_EQ(views[0]->events_applied, 2u);
  EXPECT_TRUE(worker->RefreshIdleViews().get().empty()) << "nothing changed since";
}

// Regression: a shard whose pending batch held only dead letters counted as idle (no
// filter call pending), and a refresh published its position past the commit: lag
// and oncecount_input_offset read ahead of what was committed, and would have gone
// back had the transaction aborted.
TEST(ShardWorker, DoesNotRefreshTheViewOfAShardWhosePendingBatchHoldsOnlyDeadLetters) {
  Feed feed;
  RunningWorker worker(Options());
  worker->Adopt(FreshShard(base::Partition(0)));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/1", Event("likes", 1), {}}}));
  worker->Seal().get();
  worker->Committed();
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/2", Event("likes", 1), {}}}));
  worker->Seal().get();
  worker->Committed();  // its view reuses the digest of batch 1
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/3", "{not json", {}}}));
  for (const auto& view : worker->RefreshIdleViews().get()) {
    EXPECT_EQ(view->input_offset, base::Offset(2)) << "the committed position";
  }
  const std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  EXPECT_EQ(sealed[0].dead_letters.size(), 1u);
  worker->Committed();
  const auto views = worker->RefreshIdleViews().get();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0]->input_offset, base::Offset(3));
}

// A filter that cannot get the memory to describe itself.
class SummaryOutOfMemory final : public filter::DedupFilter {
 public:
  filter::DedupMode mode() const override { return filter::DedupMode::kNone; }
  void AdvanceTo(filter::Millis) override {}
  bool Contains(filter::IdHash) const override { return false; }
  filter::Verdict TestAndInsert(filter::IdHash) override { return filter::Verdict::kNew; }
  filter::FilterSummary Summary() const override { throw std::bad_alloc(); }
  void Serialize(std::string& out) const override { filter::NoDedup().Serialize(out); }
};

// Regression: only applying and sealing caught a shard's exceptions; one from a view
// refresh left the worker's thread and ended the process, every shard with it.
TEST(ShardWorker, AShardWhoseViewRefreshThrowsFailsAlone) {
  RunningWorker worker(Options());
  auto failing =
      shard::ShardState::WithFilter(base::Partition(0), std::make_unique<SummaryOutOfMemory>());
  failing->SetClaim(base::Epoch(1), 0xc1, filter::IdHashKey{0x5eed});
  worker->Adopt(std::move(failing));
  worker->Adopt(FreshShard(base::Partition(1)));
  const std::vector<std::shared_ptr<const shard::ShardView>> views =
      worker->RefreshIdleViews().get();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0]->partition, base::Partition(1));
  const std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  EXPECT_EQ(sealed[0].partition, base::Partition(0));
  ASSERT_TRUE(sealed[0].failure.has_value());
  EXPECT_EQ(*sealed[0].failure, "publishing its view failed: out of memory");
}

TEST(ShardWorker, AddsASnapshotOfTheSealedStateWhenOneIsDue) {
  Feed feed;
  WorkerOptions o = Options();
  o.snapshots.floor_bytes = 1;  // after every batch
  RunningWorker worker(o);
  worker->Adopt(FreshShard(base::Partition(0), 4));
  worker->Apply(feed.RoundTrip(base::Partition(0), {{"c-1/1", Event("likes", 3), {}}}));
  std::vector<SealedShard> sealed = worker->Seal().get();
  ASSERT_EQ(sealed.size(), 1u);
  ASSERT_FALSE(sealed[0].snapshot.empty());
  std::string bytes;
  for (const std::string& record : sealed[0].snapshot) {
    auto decoded = changelog::DecodeRecord(record);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    const auto& chunk = std::get<changelog::SnapshotChunk>(decoded.value());
    EXPECT_EQ(chunk.seq.value(), 1u);
    EXPECT_EQ(chunk.epoch.value(), 4u);
    bytes += chunk.bytes;
  }
  auto restored = shard::ShardState::FromSnapshot(bytes, {});
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value()->committed_seq().value(), 1u);
  EXPECT_EQ(restored.value()->position().value(), 1);
  EXPECT_EQ(restored.value()->counters().at("likes"), 3);
  EXPECT_EQ(restored.value()->filter().Digest(), sealed[0].view->digest);
}

// Issue 34: shards adopted together (an instance's at start) would snapshot together,
// each shard's whole state in one transaction; each starts part of the way through
// its cycle instead (SnapshotPhase), and none waits longer than the cycle.
TEST(ShardWorker, ShardsAdoptedTogetherTakeTheirFirstSnapshotsAtDifferentCommits) {
  Feed feed;
  std::atomic<int64_t> now{kNowMs};
  WorkerOptions o = Options();
  o.now_ms = [&now] { return now.load(); };
  o.snapshots.floor_bytes = size_t{1} << 40;  // only the time rule bites
  o.snapshots.max_interval = std::chrono::milliseconds(10'000);
  RunningWorker worker(o);
  worker->Adopt(FreshShard(base::Partition(0)));
  worker->Adopt(FreshShard(base::Partition(1)));
  worker->Sync();  // adopted at kNowMs
  std::map<int32_t, int64_t> first_snapshot_s;
  for (int64_t second = 1; second <= 10; ++second) {
    now = kNowMs + second * 1000;
    for (int32_t p = 0; p < 2; ++p) {
      const std::string key = "c-" + std::to_string(p) + "/" + std::to_string(second);
      worker->Apply(feed.RoundTrip(base::Partition(p), {{key, Event("likes", 1), {}}}));
    }
    for (const SealedShard& s : worker->Seal().get()) {
      if (!s.snapshot.empty()) first_snapshot_s.try_emplace(s.partition.value(), second);
    }
    worker->Committed();
  }
  ASSERT_EQ(first_snapshot_s.size(), 2u) << "each within one cycle";
  EXPECT_NE(first_snapshot_s[0], first_snapshot_s[1]);
  EXPECT_EQ(first_snapshot_s[0], 10) << "partition 0 starts at the cycle's beginning";
  EXPECT_EQ(first_snapshot_s[1], 4) << "partition 1, 0.618 of the way through";
}

// The cycle an adopted shard goes on with comes with it (AdoptedSnapshotCycle): a
// changelog that holds a large snapshot and a cycle's worth of batches after it gets
// the next snapshot with the new owner's first commit; one that holds little does not.
TEST(ShardWorker, AnAdoptedShardSnapshotsAsTheCycleItsChangelogHoldsRequires) {
  Feed feed;
  RunningWorker worker(Options());
  const auto adopt = [&](std::optional<SnapshotCycleKept> kept) {
    auto state = FreshShard(base::Partition(0));
    shard::ShardRules rules;
    rules.changelog_retention_bytes = size_t{5} << 20;
    state->set_rules(rules);
    worker->Adopt(std::move(state), std::nullopt, kept);
  };
  const auto first_seal_has_snapshot = [&](int n) {
    worker->Apply(
        feed.RoundTrip(base::Partition(0), {{"c-0/" + std::to_string(n), Event("likes", 1), {}}}));
    std::vector<SealedShard> sealed = worker->Seal().get();
    worker->Committed();
    worker->Drop({base::Partition(0)});
    return sealed.size() == 1 && !sealed[0].snapshot.empty();
  };
  adopt(SnapshotCycleKept{size_t{3} << 19, size_t{2} << 20});  // 1.5 MiB, then 2 MiB
  EXPECT_TRUE(first_seal_has_snapshot(1));
  adopt(SnapshotCycleKept{size_t{1} << 19, size_t{1} << 17});  // 0.5 MiB, then 128 KiB
  EXPECT_FALSE(first_seal_has_snapshot(2));
  adopt(std::nullopt);  // a standby's state: what the changelog holds is not known
  EXPECT_TRUE(first_seal_has_snapshot(3));
}

}  // namespace
}  // namespace oncecount::service
