// Hot standbys end to end (SPEC §2, guarantees 4 and 5): two `oncecount serve`
// processes with processing.standby_replicas: 1 on an embedded cluster hosted by the
// test (so that it can slow the brokers down): failover after SIGKILL, also inside a
// transaction commit, with retries of events the dead instance applied; standby
// filters bit-identical to their actives'; cluster-wide answers from every
// instance; a paused active that lost its shards.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <simdjson.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "processor/json/json_writer.h"
#include "tests/processor/cmd/service_fixture.h"

namespace oncecount::cmd {
namespace {

constexpr const char* kWithOneStandby = "  commit_interval_ms: 100\n  standby_replicas: 1\n";

struct ShardOnInstance {
  std::string role;
  std::string phase;
  std::string digest;
  uint64_t digest_seq = 0;
};

// Every shard an instance holds, by partition, from GET /v1/stats.
std::map<int64_t, ShardOnInstance> Shards(const std::string& url) {
  std::map<int64_t, ShardOnInstance> out;
  const std::string body = Get(url, "/v1/stats");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (body.empty() || parser.parse(body).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array shards;
  if (doc["shards"].get_array().get(shards) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element s : shards) {
    ShardOnInstance st;
    st.role = std::string(s["role"].get_string().value_unsafe());
    st.phase = std::string(s["phase"].get_string().value_unsafe());
    st.digest = std::string(s["digest"].get_string().value_unsafe());
    st.digest_seq = s["digest_seq"].get_uint64().value_unsafe();
    out[s["partition"].get_int64().value_unsafe()] = st;
  }
  return out;
}

// Every counter an instance lists (all pages of GET /v1/counters), by name.
std::map<std::string, int64_t> Counters(const std::string& url) {
  std::map<std::string, int64_t> out;
  std::string after;
  simdjson::dom::parser parser;
  for (int page = 0; page < 100; ++page) {
    const std::string body =
        Get(url, "/v1/counters?limit=1000" + (after.empty() ? "" : "&after=" + after));
    simdjson::dom::element doc;
    if (body.empty() || parser.parse(body).get(doc) != simdjson::SUCCESS) return {};
    simdjson::dom::array counters;
    if (doc["counters"].get_array().get(counters) != simdjson::SUCCESS) return {};
    for (simdjson::dom::element c : counters) {
      out[std::string(c["counter"].get_string().value_unsafe())] =
          c["value"].get_int64().value_unsafe();
    }
    std::string_view next;
    if (doc["next"].get_string().get(next) != simdjson::SUCCESS) return out;
    after = std::string(next);  // the workload's names need no escaping
  }
  return {};
}

std::set<int64_t> Running(const std::string& url, const std::string& role) {
  std::set<int64_t> out;
  for (const auto& [p, s] : Shards(url)) {
    if (s.role == role && s.phase == "running") out.insert(p);
  }
  return out;
}

// The sum of inject's truth files: what the service must show when all of them
// were injected (files injected twice count once: pass them once).
void WriteMergedTruth(const std::vector<std::string>& files, const std::string& out) {
  std::map<std::string, int64_t> sum;
  simdjson::dom::parser parser;
  for (const std::string& f : files) {
    simdjson::dom::element doc = parser.load(f);
    for (auto [name, value] : doc["counters"].get_object()) {
      sum[std::string(name)] += value.get_int64().value();
    }
  }
  json::JsonWriter j;
  j.BeginObject().Key("counters").BeginObject();
  for (const auto& [name, value] : sum) j.Key(name).Int(value);
  j.EndObject().EndObject();
  std::ofstream(out) << j.str();
}

class StandbyTest : public ServiceFixture {
 protected:
  void StartCluster() override { StartClusterInProcess(1); }

  // Two instances with one standby each; returns once every shard is active on one
  // of them and stood by for on the other.
  void StartPair() {
    std::tie(a_, a_url_) = Serve("a", {}, kWithOneStandby);
    std::tie(b_, b_url_) = Serve("b", {}, kWithOneStandby);
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto a = Running(a_url_, "active"), b = Running(b_url_, "active");
          return a.size() + b.size() == 8 && Running(a_url_, "standby") == b &&
                 Running(b_url_, "standby") == a;
        },
        60s))
        << "the pair never settled into 8 actives, each stood by for";
  }

  // The instance with the most active shards, as {process, url, other process,
  // other url}.
  bool AIsBusier() { return Running(a_url_, "active").size() >= Running(b_url_, "active").size(); }

  testing::ChildProcess a_, b_;
  std::string a_url_, b_url_;
};

// Kills the busier active mid-stream, then sends every event of the first phase
// again (all of them retries now, some of events the dead instance applied) and
// new events: the survivor takes the shards over from its hot replicas and counts
// every event once.
TEST_F(StandbyTest, TakesOverFromTheStandbyAndStaysExactWhenTheBusiestActiveIsKilled) {
  StartPair();
  const std::string first = dir_ + "/first.json", again = dir_ + "/again.json",
                    later = dir_ + "/later.json", truth = dir_ + "/truth.json";
  Workload w;
  w.events = Scaled(30000);
  w.rate = static_cast<double>(w.events) / 5.0;
  ASSERT_EQ(Inject(w, first), 0);
  const bool a_dies = AIsBusier();
  testing::ChildProcess& victim = a_dies ? a_ : b_;
  const std::string survivor_url = a_dies ? b_url_ : a_url_;
  const std::string survivor_log = dir_ + (a_dies ? "/b.log" : "/a.log");
  const std::set<int64_t> victims_shards = Running(a_dies ? a_url_ : b_url_, "active");
  victim.Signal(SIGKILL);
  EXPECT_EQ(victim.Wait(10s), -2);
  const auto killed_at = std::chrono::steady_clock::now();

  ASSERT_EQ(Inject(w, again), 0) << "the first phase once more: every event is a retry";
  Workload fresh = w;
  fresh.seed = 8;
  fresh.first_seq = 10'000'000;
  ASSERT_EQ(Inject(fresh, later), 0);
  WriteMergedTruth({first, later}, truth);
  std::string report;
  EXPECT_EQ(Verify(truth, survivor_url, 180, &report), 0) << report;
  EXPECT_EQ(Running(survivor_url, "active").size(), 8u);
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, 180s);
  // The dead instance's shards came from the survivor's replicas, not from scratch.
  const std::string log = testing::ReadFile(survivor_log);
  for (int64_t p : victims_shards) {
    EXPECT_NE(log.find("shard " + std::to_string(p) + ": taken over from its standby replica"),
              std::string::npos)
        << "shard " << p;
  }
}

// The brokers answer EndTxn two seconds late, so both instances sit inside
// rd_kafka_commit_transaction when the busier one is killed.
TEST_F(StandbyTest, StaysExactWhenTheActiveIsKilledInsideATransactionCommit) {
  constexpr int16_t kEndTxn = 26;
  StartPair();
  const std::string first = dir_ + "/first.json", later = dir_ + "/later.json",
                    truth = dir_ + "/truth.json";
  Workload w;
  w.events = Scaled(20000);
  w.rate = static_cast<double>(w.events) / 6.0;
  int injected = -1;
  std::thread inject([&] { injected = Inject(w, first); });
  std::this_thread::sleep_for(3s);
  const bool a_dies = AIsBusier();
  ASSERT_EQ(rd_kafka_mock_broker_push_request_error_rtts(
                cluster_->mock(), 1, kEndTxn, 3, RD_KAFKA_RESP_ERR_NO_ERROR, 2000,
                RD_KAFKA_RESP_ERR_NO_ERROR, 2000, RD_KAFKA_RESP_ERR_NO_ERROR, 2000),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  // Commits come every 100 ms: within half a second both are waiting for EndTxn.
  std::this_thread::sleep_for(500ms);
  (a_dies ? a_ : b_).Signal(SIGKILL);
  inject.join();
  ASSERT_EQ(injected, 0);
  Workload again = w;
  again.rate = 0;
  ASSERT_EQ(Inject(again, dir_ + "/again.json"), 0) << "every event once more, as retries";
  Workload fresh = w;
  fresh.seed = 9;
  fresh.first_seq = 10'000'000;
  ASSERT_EQ(Inject(fresh, later), 0);
  WriteMergedTruth({first, later}, truth);
  std::string report;
  EXPECT_EQ(Verify(truth, a_dies ? b_url_ : a_url_, 180, &report), 0) << report;
}

// At quiescence every standby's filter is bit-identical to its active's at the
// same changelog batch.
TEST_F(StandbyTest, KeepsEveryStandbysFilterBitIdenticalToItsActives) {
  StartPair();
  const std::string truth = dir_ + "/truth.json";
  Workload w;
  w.events = Scaled(40000);
  ASSERT_EQ(Inject(w, truth), 0);
  std::string report;
  ASSERT_EQ(Verify(truth, a_url_, 120, &report), 0) << report;
  std::map<int64_t, ShardOnInstance> a, b;
  const bool settled = WaitFor(
      [&] {
        a = Shards(a_url_);
        b = Shards(b_url_);
        if (a.size() != 8 || b.size() != 8) return false;
        for (int64_t p = 0; p < 8; ++p) {
          if (a[p].digest_seq == 0 || a[p].digest_seq != b[p].digest_seq) return false;
        }
        return true;
      },
      30s);
  ASSERT_TRUE(settled) << "the views never reached the same batch on both instances";
  for (int64_t p = 0; p < 8; ++p) {
    EXPECT_NE(a[p].role, b[p].role) << "shard " << p;
    EXPECT_EQ(a[p].digest, b[p].digest) << "shard " << p << " at batch " << a[p].digest_seq;
    EXPECT_FALSE(a[p].digest.empty());
  }
}

// A new instance answers before it holds every shard — saying so — and then with
// the same cluster-wide totals as the other one. Its reads of the changelog are
// slowed down so that the incomplete phase lasts long enough to be seen.
TEST_F(StandbyTest, AnswersWithTheClusterTotalFromEveryInstanceAndSaysWhenIncomplete) {
  constexpr int16_t kFetch = 1;
  std::tie(a_, a_url_) = Serve("a", {}, kWithOneStandby);
  const std::string truth = dir_ + "/truth.json";
  Workload w;
  w.events = Scaled(20000);
  ASSERT_EQ(Inject(w, truth), 0);
  std::string report;
  ASSERT_EQ(Verify(truth, a_url_, 120, &report), 0) << report;

  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(rd_kafka_mock_broker_push_request_error_rtts(cluster_->mock(), 1, kFetch, 1,
                                                           RD_KAFKA_RESP_ERR_NO_ERROR, 300),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  std::tie(b_, b_url_) = Serve("b", {}, kWithOneStandby);
  const std::string early = Get(b_url_, "/v1/counters?limit=1");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(early).get(doc), simdjson::SUCCESS) << early;
  EXPECT_FALSE(doc["complete"].get_bool().value()) << early;

  EXPECT_EQ(Verify(truth, b_url_, 120, &report), 0) << report;
  simdjson::dom::element truth_doc;
  ASSERT_EQ(parser.load(truth).get(truth_doc), simdjson::SUCCESS);
  const size_t expected_counters = truth_doc["counters"].get_object().value().size();
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto listed = Counters(a_url_);
        return listed.size() == expected_counters && listed == Counters(b_url_);
      },
      30s))
      << "the instances never listed the same counters";
  const std::string later = Get(b_url_, "/v1/counters/counter-1");
  ASSERT_EQ(parser.parse(later).get(doc), simdjson::SUCCESS) << later;
  EXPECT_TRUE(doc["complete"].get_bool().value()) << later;
}

// A paused active loses its shards to the other instance; when it wakes it must
// drop them instead of committing, and the counts stay exact on both instances.
TEST_F(StandbyTest, FencesAPausedActiveThatLostItsShards) {
  StartPair();
  const std::string first = dir_ + "/first.json", later = dir_ + "/later.json",
                    truth = dir_ + "/truth.json";
  Workload w;
  w.events = Scaled(30000);
  w.rate = static_cast<double>(w.events) / 15.0;
  int injected = -1;
  std::thread inject([&] { injected = Inject(w, first); });
  std::this_thread::sleep_for(3s);
  const bool a_pauses = AIsBusier();
  testing::ChildProcess& paused = a_pauses ? a_ : b_;
  const std::string awake_url = a_pauses ? b_url_ : a_url_;
  paused.Signal(SIGSTOP);
  // The group gives the paused instance's shards to the other one.
  EXPECT_TRUE(WaitFor([&] { return Running(awake_url, "active").size() == 8; }, 60s));
  paused.Signal(SIGCONT);
  inject.join();
  ASSERT_EQ(injected, 0);
  Workload fresh = w;
  fresh.seed = 10;
  fresh.first_seq = 10'000'000;
  fresh.rate = 0;
  ASSERT_EQ(Inject(fresh, later), 0);
  WriteMergedTruth({first, later}, truth);
  std::string report;
  EXPECT_EQ(Verify(truth, awake_url, 180, &report), 0) << report;
  EXPECT_EQ(Verify(truth, a_pauses ? a_url_ : b_url_, 180, &report), 0) << report;
  const std::string log = testing::ReadFile(dir_ + (a_pauses ? "/a.log" : "/b.log"));
  EXPECT_NE(log.find("lost "), std::string::npos) << "the paused instance never saw it lost";
}

}  // namespace
}  // namespace oncecount::cmd
