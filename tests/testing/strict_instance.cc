#include "tests/testing/strict_instance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "processor/base/enum_names.h"
#include "processor/changelog/changelog_record.h"
#include "processor/filter/state_frame.h"
#include "processor/service/restore.h"

namespace oncecount::testing {

using namespace std::chrono_literals;

filter::Constituent DedupFilterUnderTest() {
  const char* name = std::getenv("ONCECOUNT_TEST_DEDUP_FILTER");
  if (name == nullptr || *name == '\0') return filter::Constituent::kBlockedBloom;
  const std::optional<filter::Constituent> parsed =
      base::ParseName(filter::kConstituentNames, name);
  if (!parsed) {
    ADD_FAILURE() << "ONCECOUNT_TEST_DEDUP_FILTER: "
                  << base::ExpectedOneOf(filter::kConstituentNames, name);
    return filter::Constituent::kBlockedBloom;
  }
  return *parsed;
}

filter::DedupSpec TestDedup() {
  filter::DedupSpec spec;
  spec.expected_rate = 1000;
  spec.window = filter::Millis{600'000};
  spec.target_fpp = 1e-6;
  spec.constituent = DedupFilterUnderTest();
  return spec;
}

StrictKafka& NewCluster(std::unique_ptr<StrictKafka>& holder, int32_t partitions) {
  holder = std::make_unique<StrictKafka>();
  EXPECT_TRUE(holder->CreateTopic("events", partitions).ok());
  EXPECT_TRUE(holder->CreateTopic("events.changelog", partitions).ok());
  EXPECT_TRUE(holder->CreateTopic("events.dlq", 1).ok());
  EXPECT_TRUE(holder->CreateTopic("events.members", 1).ok());
  return *holder;
}

StrictInstance::StrictInstance(StrictKafka& kafka, StrictInstanceOptions options)
    : kafka_(kafka), options_(std::move(options)), clients_(kafka.ClientsFor(options_.process)) {
  const std::string instance_id =
      options_.instance_id.empty() ? options_.process : options_.instance_id;
  std::vector<service::ShardWorker*> workers;
  for (int i = 0; i < 2; ++i) {
    service::WorkerOptions wo;
    wo.input_topic = "events";
    wo.target_fpp = TestDedup().target_fpp;
    wo.now_ms = [&kafka] { return kafka.clock().WallMs(); };
    wo.checkpoint_dir = options_.checkpoint_dir;
    wo.group_id = options_.group_id;
    workers_.push_back(std::make_unique<service::ShardWorker>(std::move(wo)));
    workers.push_back(workers_.back().get());
    threads_.emplace_back([w = workers.back()] { w->Run(); });
  }
  auto log = [this](const std::string& line) { log_ += line + "\n"; };
  if (options_.replicas) {
    replica::ReplicatorOptions ro;
    ro.clients = clients_.get();
    ro.clock = &kafka.clock();
    ro.changelog_topic = "events.changelog";
    if (options_.standby_replicas > 0) ro.members_topic = "events.members";
    ro.instance_id = instance_id;
    ro.api_url = "http://" + options_.process;
    ro.standby_replicas = options_.standby_replicas;
    ro.dedup = TestDedup();
    ro.dedup.window = options_.dedup_window;
    ro.log = log;
    ro.metrics = &metrics_;
    auto made = replica::Replicator::Create(std::move(ro), board_);
    if (auto* error = (made.ok() ? nullptr : &made.message())) {
      ADD_FAILURE() << options_.process << ": " << *error;
      return;
    }
    replicator_ = std::move(made).value();
    replicator_->Start();
  }
  service::ProcessorOptions po;
  po.clients = clients_.get();
  po.clock = &kafka.clock();
  po.instance_id = instance_id;
  po.group_id = options_.group_id;
  po.previous_group_id = options_.previous_group_id;
  po.previous_group_unverified = options_.previous_group_unverified;
  if (options_.static_membership) po.group_instance_id = instance_id;
  po.leave_group_on_stop = options_.leave_group_on_stop;
  po.commit_interval = options_.commit_interval;
  po.transaction_timeout = options_.transaction_timeout;
  po.dedup = TestDedup();
  po.dedup.window = options_.dedup_window;
  po.late_records = options_.late_records;
  po.changelog_retention_bytes = options_.changelog_retention_bytes;
  po.checkpoint_dir = options_.checkpoint_dir;
  po.max_poll_interval = options_.max_poll_interval;
  po.log = log;
  po.metrics = &metrics_;
  auto made = service::Processor::Create(std::move(po), board_, workers, replicator_.get());
  if (options_.expect_refusal) {
    if (made.ok()) ADD_FAILURE() << options_.process << " started; a refusal was expected";
    if (!made.ok()) refusal_ = made.error().ToString();
    return;
  }
  if (auto* error = (made.ok() ? nullptr : &made.message())) {
    ADD_FAILURE() << options_.process << ": " << *error;
    return;
  }
  processor_ = std::move(made).value();
  EXPECT_TRUE(processor_->Start().ok());
}

StrictInstance::~StrictInstance() {
  if (processor_ && !dead_) (void)processor_->Finish();
  if (replicator_ && !dead_ && !replicator_ended_) (void)replicator_->Finish();
  processor_.reset();
  replicator_.reset();
  for (auto& w : workers_) w->Close();
  for (std::thread& t : threads_) t.join();
}

void StrictInstance::ReplaceShardState(std::unique_ptr<shard::ShardState> state) {
  // The router's rule: partition modulo the worker count.
  const auto w = static_cast<size_t>(state->partition().value()) % workers_.size();
  workers_[w]->Adopt(std::move(state));
  workers_[w]->Sync();
}

bool StrictInstance::Step() {
  if (!processor_ || dead_) return false;
  if (replicator_ && !replicator_ended_ && !replicator_->Step(0ms)) {
    replicator_ended_ = replicator_->Finish();
  }
  return processor_->Step(0ms);
}

void StrictInstance::StepAndCommit() {
  for (int i = 0; i < 3; ++i) Step();
  Commit();
}

void StrictInstance::Commit() {
  if (processor_ && !dead_) processor_->CommitNow();
}

void StrictInstance::CommitAndDieAt(StrictKafka::Call call) {
  for (int i = 0; i < 3; ++i) Step();
  kafka_.CrashAt(call, options_.process);
  Commit();
  dead_ = true;
}

void StrictInstance::Kill() {
  kafka_.Crash(options_.process);
  dead_ = true;
}

base::Status StrictInstance::Finish() {
  if (!processor_ || dead_) return base::Error(base::Errc::kInternal, "no running processor");
  dead_ = true;  // once only
  base::Status finished = processor_->Finish();
  if (replicator_ && !replicator_ended_) (void)replicator_->Finish();
  return finished;
}

std::shared_ptr<const shard::ShardView> StrictInstance::View(int32_t p) const {
  for (const auto& view : board_.Read().shards) {
    if (view->partition == base::Partition(p)) return view;
  }
  return nullptr;
}

bool StrictInstance::Runs(int32_t p) const {
  auto view = View(p);
  return view && view->role == shard::ShardRole::kActive &&
         view->phase == shard::ShardPhase::kRunning;
}

bool StrictInstance::RunsAll(int32_t partitions) const {
  for (int32_t p = 0; p < partitions; ++p) {
    if (!Runs(p)) return false;
  }
  return true;
}

// --- Events and checks ----------------------------------------------------------

void Send(StrictKafka& kafka, int from, int to) {
  for (int i = from; i < to; ++i) {
    const std::string value = "{\"counter\":\"n" + std::to_string(i % 3) + "\",\"delta\":1}";
    ASSERT_TRUE(
        kafka.ProduceForTest("events", i % kServicePartitions, "client/" + std::to_string(i), value)
            .ok());
  }
}

void SendMalformed(StrictKafka& kafka, int from, int to) {
  for (int i = from; i < to; ++i) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", i % kServicePartitions, "bad/" + std::to_string(i),
                                    "{\"counter\": not json " + std::to_string(i))
                    .ok());
  }
}

std::vector<std::string> DeadLetteredKeys(StrictKafka& kafka) {
  std::vector<std::string> keys;
  for (const auto& entry : kafka.Entries("events.dlq", 0)) {
    if (entry.state == StrictKafka::StoredEntry::kCommitted) keys.push_back(entry.key.value_or(""));
  }
  return keys;
}

void ExpectDeadLetteredOnce(StrictKafka& kafka, int from, int to) {
  std::vector<std::string> keys = DeadLetteredKeys(kafka);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> expected;
  for (int i = from; i < to; ++i) expected.push_back("bad/" + std::to_string(i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(keys, expected) << "each malformed event dead-lettered exactly once";
}

std::map<std::string, int64_t> CountsInViews(const StrictInstance& instance) {
  std::map<std::string, int64_t> counts;
  for (int32_t p = 0; p < kServicePartitions; ++p) {
    const auto view = instance.View(p);
    if (view == nullptr || view->counters == nullptr) continue;
    for (const std::string name : {"n0", "n1", "n2"}) {
      if (const auto value = view->counters->Find(name)) counts[name] += *value;
    }
  }
  return counts;
}

std::map<std::string, int64_t> Expected(int n) {
  std::map<std::string, int64_t> counts;
  for (int i = 0; i < n; ++i) ++counts["n" + std::to_string(i % 3)];
  return counts;
}

std::map<std::string, int64_t> CountsInChangelog(StrictKafka& kafka) {
  std::map<std::string, int64_t> counts;
  for (int32_t p = 0; p < kServicePartitions; ++p) {
    auto restored =
        service::RestoreCold(base::Partition(p), kafka.CommittedValues("events.changelog", p),
                             TestDedup(), service::ClaimDraw{1, filter::IdHashKey{1}});
    EXPECT_TRUE(restored.ok()) << "shard " << p << ": " << restored.error();
    if (!restored.ok()) continue;
    for (const auto& c : restored.value().state->counters()) counts[c.name] += c.value;
    // The state a new owner restores holds the filter under test (a snapshot of
    // another kind would restore as that kind).
    std::string bytes;
    restored.value().state->filter().Serialize(bytes);
    const auto frame = filter::ReadStateFrame(bytes);
    EXPECT_TRUE(frame.ok() && frame->constituent == static_cast<uint8_t>(DedupFilterUnderTest()))
        << "shard " << p << " restores a filter of another kind than the one under test";
  }
  return counts;
}

std::vector<uint64_t> ClaimEpochs(StrictKafka& kafka, int32_t p) {
  std::vector<uint64_t> epochs;
  for (const std::string& value : kafka.CommittedValues("events.changelog", p)) {
    auto record = changelog::DecodeRecord(value);
    EXPECT_TRUE(record.ok()) << record.error();
    if (!record.ok()) continue;
    if (const auto* claim = std::get_if<changelog::ClaimRecord>(&record.value())) {
      epochs.push_back(claim->epoch.value());
    }
  }
  return epochs;
}

void ExpectEveryClaimTookANewEpoch(StrictKafka& kafka) {
  for (int32_t p = 0; p < kServicePartitions; ++p) {
    const std::vector<uint64_t> epochs = ClaimEpochs(kafka, p);
    EXPECT_FALSE(epochs.empty()) << "shard " << p << " was never claimed";
    for (size_t i = 1; i < epochs.size(); ++i) {
      EXPECT_LT(epochs[i - 1], epochs[i]) << "shard " << p << ": claim " << i;
    }
  }
}

void ExpectAllInputCommitted(StrictKafka& kafka) {
  for (int32_t p = 0; p < kServicePartitions; ++p) {
    EXPECT_EQ(kafka.CommittedOffset("oncecount", "events", p), kafka.HighWatermark("events", p))
        << "shard " << p;
  }
}

void ExpectExactlyOnce(StrictKafka& kafka, int n) {
  EXPECT_EQ(CountsInChangelog(kafka), Expected(n));
  ExpectEveryClaimTookANewEpoch(kafka);
  ExpectAllInputCommitted(kafka);
}

}  // namespace oncecount::testing
