// `oncecount serve` as a real process against an embedded cluster hosted by the test,
// whose broker answers the transactional requests with the error codes a real broker
// returns, through librdkafka's own handling of each (librdkafka 2.0.2,
// src/rdkafka_txnmgr.c; ARCHITECTURE.md "Exactly once under a real broker's rules"):
//
//   TxnOffsetCommit ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID: abortable;
//     the group moved on (kGroupFenced): serve aborts, drops the shards without a claim
//     and restores them after a back-off (1 s, doubling), then counts exactly;
//   PRODUCER_FENCED and INVALID_PRODUCER_EPOCH on AddPartitionsToTxn, AddOffsetsToTxn and
//     EndTxn: serve exits 1 naming its instance id, writes nothing more, and a restart
//     with the same id counts exactly. librdkafka raises them as a fatal _FENCED, except
//     PRODUCER_FENCED on AddOffsetsToTxn (and TxnOffsetCommit), which it raises as an
//     abortable _FENCED; ClassifyTxnError treats every _FENCED as fenced, so serve stops
//     at once there too instead of learning it from the abort's EndTxn;
//   TRANSACTION_COORDINATOR_FENCED on all four: abortable: serve aborts, restores the
//     shards from their changelog and counts exactly;
//   CONCURRENT_TRANSACTIONS and NOT_COORDINATOR: retried inside librdkafka: no abort,
//     exact;
//   on InitProducerId (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
//     TRANSACTION_COORDINATOR_FENCED) while serve starts: retried inside librdkafka; they
//     only delay serve.
//
// The errors are pushed on the stack of the cluster's only broker, so that the test
// can wait until the broker has answered each of them (and fail if it never does).
//
// ONCECOUNT_TEST_SCALE (default 1) scales the number of events.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <simdjson.h>

#include <chrono>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "tests/processor/cmd/service_fixture.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;

constexpr int16_t kFindCoordinator = 10, kInitProducerId = 22, kAddPartitionsToTxn = 24,
                  kAddOffsetsToTxn = 25, kEndTxn = 26, kTxnOffsetCommit = 28;
constexpr int kPartitions = 8;
constexpr const char* kChangelog = "events.changelog";

const char* ApiName(int16_t api) {
  switch (api) {
    case kFindCoordinator:
      return "FindCoordinator";
    case kInitProducerId:
      return "InitProducerId";
    case kAddPartitionsToTxn:
      return "AddPartitionsToTxn";
    case kAddOffsetsToTxn:
      return "AddOffsetsToTxn";
    case kEndTxn:
      return "EndTxn";
    case kTxnOffsetCommit:
      return "TxnOffsetCommit";
    default:
      return "Unknown";
  }
}

// The broker answers the next `times` requests `api` with `error`.
struct TxnError {
  int16_t api = 0;
  rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR_NO_ERROR;
  int times = 1;
  // The error librdkafka raises (it reports PRODUCER_FENCED and INVALID_PRODUCER_EPOCH
  // as _FENCED); only where the test looks for it.
  rd_kafka_resp_err_t raised = RD_KAFKA_RESP_ERR_NO_ERROR;
  // Whether librdkafka raises it as fatal (else abortable).
  bool fatal_in_librdkafka = true;
};

// How gtest (and ctest's test list) shows a case.
void PrintTo(const TxnError& e, std::ostream* out) {
  *out << ApiName(e.api) << " answered " << rd_kafka_err2name(e.error) << " " << e.times
       << " time(s)";
}

std::string CaseName(const ::testing::TestParamInfo<TxnError>& info) {
  return std::string(ApiName(info.param.api)) + "_" + rd_kafka_err2name(info.param.error);
}

std::string ErrorName(const ::testing::TestParamInfo<rd_kafka_resp_err_t>& info) {
  return rd_kafka_err2name(info.param);
}

// One record of a changelog partition.
struct ChangelogEntry {
  int64_t offset = 0;
  changelog::Record record;
};

rd_kafka_t* NewClient(rd_kafka_type_t type, const std::string& bootstrap,
                      const std::vector<std::pair<std::string, std::string>>& settings = {}) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  for (const auto& [name, value] : settings) {
    rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof error);
  }
  return rd_kafka_new(type, conf, error, sizeof error);
}

// The next offset of every changelog partition (-1 where it cannot be read).
std::vector<int64_t> ChangelogEnds(const std::string& bootstrap) {
  rd_kafka_t* rk = NewClient(RD_KAFKA_PRODUCER, bootstrap);
  std::vector<int64_t> ends(kPartitions, -1);
  for (int32_t p = 0; p < kPartitions; ++p) {
    int64_t low = 0, high = -1;
    if (rd_kafka_query_watermark_offsets(rk, kChangelog, p, &low, &high, 10000) == 0) {
      ends[static_cast<size_t>(p)] = high;
    }
    EXPECT_GE(ends[static_cast<size_t>(p)], 0) << "cannot read the end of changelog " << p;
  }
  rd_kafka_destroy(rk);
  return ends;
}

// Every record of every changelog partition (read_uncommitted: aborted records too),
// decoded; a record that does not decode fails the test.
std::vector<std::vector<ChangelogEntry>> ReadChangelog(const std::string& bootstrap) {
  const std::vector<int64_t> ends = ChangelogEnds(bootstrap);
  std::vector<std::vector<ChangelogEntry>> out(kPartitions);
  rd_kafka_t* rk = NewClient(RD_KAFKA_CONSUMER, bootstrap,
                             {{"group.id", "serve-txn-errors-test-reader"},
                              {"enable.auto.commit", "false"},
                              {"isolation.level", "read_uncommitted"},
                              {"auto.offset.reset", "earliest"}});
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(kPartitions);
  for (int32_t p = 0; p < kPartitions; ++p) {
    rd_kafka_topic_partition_list_add(list, kChangelog, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  std::vector<int64_t> next(kPartitions, 0);
  auto done = [&] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (next[static_cast<size_t>(p)] < ends[static_cast<size_t>(p)]) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const auto p = static_cast<size_t>(m->partition);
      next[p] = m->offset + 1;
      auto decoded =
          changelog::DecodeRecord(std::string_view(static_cast<const char*>(m->payload), m->len));
      if (decoded) {
        out[p].push_back({m->offset, std::move(decoded.value())});
      } else {
        ADD_FAILURE() << "changelog partition " << p << " offset " << m->offset
                      << " does not decode: " << decoded.error();
      }
    }
    rd_kafka_message_destroy(m);
  }
  EXPECT_TRUE(done()) << "the changelog could not be read to its end";
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

// The test hosts a one-broker cluster and injects errors on that broker.
class ServeTxnErrorsTest : public ServiceFixture {
 protected:
  static constexpr int32_t kBroker = 1;
  static constexpr size_t npos = std::string::npos;

  void StartCluster() override { StartClusterInProcess(1); }

  void TearDown() override {
    if (inject_.joinable()) inject_.join();
    ServiceFixture::TearDown();
  }

  void Push(const TxnError& e) {
    for (int i = 0; i < e.times; ++i) {
      ASSERT_EQ(rd_kafka_mock_broker_push_request_error_rtts(cluster_->mock(), kBroker, e.api, 1,
                                                             e.error, 0),
                RD_KAFKA_RESP_ERR_NO_ERROR);
    }
  }

  // How many injected errors on `api` the broker has not answered yet.
  size_t Pending(int16_t api) {
    size_t count = 0;
    EXPECT_EQ(rd_kafka_mock_broker_error_stack_cnt(cluster_->mock(), kBroker, api, &count),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    return count;
  }

  static bool Ready(const std::string& url) {
    auto got = http::HttpGet(url, "/readyz", 5s);
    auto* r = (got.ok() ? &got.value() : nullptr);
    return r != nullptr && r->status == 200;
  }

  // A total of GET /v1/stats ("transactions_committed", "transactions_aborted"); -1
  // when it cannot be read.
  static int64_t Total(const std::string& url, const char* field) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string body = Get(url, "/v1/stats");
    if (body.empty() || parser.parse(body).get(doc) != simdjson::SUCCESS) return -1;
    uint64_t value = 0;
    if (doc["totals"][field].get_uint64().get(value) != simdjson::SUCCESS) return -1;
    return static_cast<int64_t>(value);
  }

  std::string LogOf(const std::string& name) const {
    return testing::ReadFile(dir_ + "/" + name + ".log");
  }

  // The whole line of `log` that holds `needle` at or after `from` ("" if none).
  static std::string LineWith(const std::string& log, const std::string& needle, size_t from = 0) {
    const size_t at = log.find(needle, from);
    if (at == npos) return "";
    const size_t begin = log.rfind('\n', at);
    const size_t end = log.find('\n', at);
    const size_t b = begin == npos ? 0 : begin + 1;
    return log.substr(b, end == npos ? npos : end - b);
  }

  // Waits until the log of instance `name` holds `needle` at or after `from`; returns
  // where (npos after `timeout`).
  size_t WaitForLog(const std::string& name, const std::string& needle, size_t from,
                    std::chrono::milliseconds timeout) {
    size_t at = npos;
    WaitFor(
        [&] {
          at = LogOf(name).find(needle, from);
          return at != npos;
        },
        timeout);
    return at;
  }

  // Waits until the log of instance `name` says, at or after `from`, that every shard
  // was restored and claimed ("shard <p>: restored ...").
  // Every shard (`all`), or at least one, logged its restore after log offset `from`.
  bool WaitUntilShardsAreClaimed(const std::string& name, size_t from, bool all) {
    return WaitFor(
        [&] {
          const std::string log = LogOf(name);
          int restored = 0;
          for (int p = 0; p < kPartitions; ++p) {
            restored += log.find("shard " + std::to_string(p) + ": restored ", from) != npos;
          }
          return all ? restored == kPartitions : restored > 0;
        },
        30s);
  }

  std::string Truth() const { return dir_ + "/truth.json"; }

  // The fixture's workload with retries at most 500 ms late (2 s there): a scenario
  // waits for its last retry before it verifies.
  int InjectEvents(uint64_t events, double rate) {
    InjectOptions o;
    o.bootstrap = bootstrap_;
    o.workload.events = events;
    o.workload.counters = 1000;
    o.workload.clients = 200;
    o.workload.max_retry_delay_ms = 500;
    o.workload.seed = 7;
    o.rate = rate;
    o.truth_file = Truth();
    std::ostringstream err;
    return RunInject(o, err);
  }

  void FinishInput() {
    inject_.join();
    ASSERT_EQ(injected_, 0);
  }

  // How many shards of the instance at `url` have committed a transaction.
  static int ShardsCommitted(const std::string& url) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string body = Get(url, "/v1/stats");
    simdjson::dom::array shards;
    if (body.empty() || parser.parse(body).get(doc) != simdjson::SUCCESS ||
        doc["shards"].get_array().get(shards) != simdjson::SUCCESS) {
      return -1;
    }
    int committed = 0;
    for (simdjson::dom::element s : shards) {
      uint64_t transactions = 0;
      if (s["transactions_committed"].get_uint64().get(transactions) == simdjson::SUCCESS &&
          transactions > 0) {
        ++committed;
      }
    }
    return committed;
  }

  // Once `serve` at `url` is ready, injects 10,000 events a second (scaled) for
  // `seconds` on a thread of its own (retries of them follow for up to 0.5 s more), and
  // waits until every shard has committed input, about a second later: an error
  // injected then lands on a commit of a running instance whose shards all have an
  // input position (send_offsets_to_transaction leaves out logical offsets).
  void StartInputOnceReady(const std::string& url, int seconds = 2) {
    ASSERT_TRUE(WaitFor([&] { return Ready(url); }, 30s)) << "serve never became ready";
    const uint64_t events = Scaled(10000 * static_cast<uint64_t>(seconds));
    inject_ = std::thread([this, events, seconds] {
      injected_ = InjectEvents(events, static_cast<double>(events) / seconds);
    });
    ASSERT_TRUE(WaitFor([&] { return ShardsCommitted(url) == kPartitions; }, 30s))
        << "not every shard committed input";
  }

  void ExpectExact(const std::string& url) {
    std::string report;
    EXPECT_EQ(Verify(Truth(), url, 60, &report), 0) << report;
  }

  std::thread inject_;
  int injected_ = -1;
};

// --- The group moved on (KIP-447) -------------------------------------------------------

class ServeGroupFencedTest : public ServeTxnErrorsTest,
                             public ::testing::WithParamInterface<rd_kafka_resp_err_t> {};

// The first error fails a commit: librdkafka reports it abortable, and serve, which
// still holds its partitions, tries the transaction once more with the group's
// metadata read anew (a generation may have moved on in the background); the second
// error refuses that too, and serve aborts and drops its shards without claiming
// them. After the 1 s back-off it claims them; the third and fourth errors refuse the
// first of those claims and its second attempt (claims may take more than one
// transaction), and 1 s later (the first back-off of a failed restore) the refused
// shards are claimed.
TEST_P(ServeGroupFencedTest,
       AGroupThatMovedOnMakesServeDropItsShardsWithoutAClaimAndClaimThemAgainAfterABackOff) {
  const rd_kafka_resp_err_t error = GetParam();
  const std::string name = rd_kafka_err2name(error);
  auto [serve, url] = Serve("a");
  ASSERT_NO_FATAL_FAILURE(StartInputOnceReady(url));
  ASSERT_NO_FATAL_FAILURE(Push({kTxnOffsetCommit, error, 4}));
  const size_t dropped_at = WaitForLog(
      "a", "the group moved on without this instance: dropping its shards without a claim", 0, 30s);
  ASSERT_NE(dropped_at, npos) << "no commit failed with " << name;
  const auto dropped = std::chrono::steady_clock::now();
  // Every shard is dropped, so the next TxnOffsetCommit is the first claim's.
  const size_t refused_at = WaitForLog("a", "its claim was refused: ", dropped_at, 30s);
  ASSERT_NE(refused_at, npos) << "no claim was refused";
  const auto refused = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntilShardsAreClaimed("a", dropped_at, /*all=*/true))
      << "some shards were never claimed again";
  const auto claimed = std::chrono::steady_clock::now();
  // No claim before the 1 s back-off; the refused ones 1 s after that (less the 100 ms
  // a poll of the log may take).
  EXPECT_GE(refused - dropped, 900ms);
  EXPECT_GE(claimed - dropped, 1800ms);
  EXPECT_EQ(Pending(kTxnOffsetCommit), 0u);

  const std::string log = LogOf("a");
  EXPECT_NE(LineWith(log, "transaction aborted: ").find(name), npos)
      << LineWith(log, "transaction aborted: ");
  EXPECT_NE(LineWith(log, "Current transaction failed").find("(" + name + ")"), npos)
      << "librdkafka did not raise " << name << " as abortable";
  EXPECT_EQ(log.find("Fatal transaction error"), npos);
  EXPECT_NE(LineWith(log, "trying once more with the group's metadata").find(name), npos)
      << LineWith(log, "trying once more with the group's metadata");
  EXPECT_NE(LineWith(log, "its claim was refused: ").find(name), npos);
  EXPECT_NE(LineWith(log, "its claim was refused: ").find("retrying in 1000 ms"), npos)
      << LineWith(log, "its claim was refused: ");

  FinishInput();
  ExpectExact(url);
  EXPECT_GE(Total(url, "transactions_aborted"), 1);
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0);
}

INSTANTIATE_TEST_SUITE_P(TxnOffsetCommit, ServeGroupFencedTest,
                         ::testing::Values(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
                                           RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID),
                         ErrorName);

// --- The producer is fenced -----------------------------------------------------------

class ServeProducerFencedTest : public ServeTxnErrorsTest,
                                public ::testing::WithParamInterface<TxnError> {
 protected:
  // Every claim of every changelog partition: none among the records written while
  // the fenced instance was the last to run (offsets [fenced_from, fenced_to)), one
  // at least from the restart (after fenced_to), and their epochs strictly increase.
  // The restart must have applied input too, or the scenario tested no restore.
  void ExpectClaims(const std::vector<int64_t>& fenced_from,
                    const std::vector<int64_t>& fenced_to) {
    const std::vector<std::vector<ChangelogEntry>> changelog = ReadChangelog(bootstrap_);
    int restart_batches = 0;
    for (size_t p = 0; p < kPartitions; ++p) {
      base::Epoch last_epoch;
      int restart_claims = 0;
      for (const ChangelogEntry& e : changelog[p]) {
        const auto* claim = std::get_if<changelog::ClaimRecord>(&e.record);
        if (claim == nullptr) {
          const bool batch = std::holds_alternative<changelog::BatchRecord>(e.record);
          if (batch && e.offset >= fenced_to[p]) ++restart_batches;
          continue;
        }
        EXPECT_FALSE(e.offset >= fenced_from[p] && e.offset < fenced_to[p])
            << "partition " << p << ": the fenced instance wrote a claim (epoch " << claim->epoch
            << ") at offset " << e.offset << " after the fence";
        EXPECT_GT(claim->epoch, last_epoch)
            << "partition " << p << ": claim epochs do not increase at offset " << e.offset;
        last_epoch = claim->epoch;
        if (e.offset >= fenced_to[p]) ++restart_claims;
      }
      EXPECT_GE(restart_claims, 1) << "partition " << p << ": the restart claimed nothing";
    }
    EXPECT_GT(restart_batches, 0) << "the restart applied no input";
  }
};

TEST_P(ServeProducerFencedTest,
       AFencedProducerEndsServeWithItsInstanceIdAndTheRestartCountsExactly) {
  const TxnError e = GetParam();
  auto [fenced, url] = Serve("a");
  // Input goes on after the fence, for the restart.
  ASSERT_NO_FATAL_FAILURE(StartInputOnceReady(url, 3));
  const std::vector<int64_t> before = ChangelogEnds(bootstrap_);
  ASSERT_NO_FATAL_FAILURE(Push(e));
  EXPECT_EQ(fenced.Wait(10s), 1) << "a fenced serve must exit promptly with status 1";
  EXPECT_EQ(Pending(e.api), 0u);
  const std::vector<int64_t> after = ChangelogEnds(bootstrap_);

  const std::string log = LogOf("a");
  const char* raised_as =
      e.fatal_in_librdkafka ? "Fatal transaction error" : "Current transaction failed";
  const size_t fence = log.find(raised_as);
  ASSERT_NE(fence, npos) << "librdkafka did not raise the error (" << raised_as << ")";
  EXPECT_NE(LineWith(log, raised_as).find(std::string("(") + rd_kafka_err2name(e.raised) + ")"),
            npos);
  const std::string last_words = LineWith(log, "the producer cannot go on");
  EXPECT_EQ(last_words.rfind("serve: ", 0), 0u) << last_words;
  EXPECT_NE(last_words.find("another instance runs with instance id a,"), npos)
      << "serve's last words should name its instance id: " << last_words;
  EXPECT_EQ(log.find("restore", fence), npos) << "a restore (and claim) after the fence";
  EXPECT_EQ(log.find("transaction aborted", fence), npos);

  FinishInput();
  auto [restarted, restarted_url] = Serve("a");
  ASSERT_TRUE(WaitFor([&] { return Ready(restarted_url); }, 30s)) << "the restart never got ready";
  ExpectExact(restarted_url);
  restarted.Signal(SIGTERM);
  EXPECT_EQ(restarted.Wait(30s), 0);
  ExpectClaims(before, after);
}

constexpr rd_kafka_resp_err_t kFenced = RD_KAFKA_RESP_ERR__FENCED;

INSTANTIATE_TEST_SUITE_P(
    Fenced, ServeProducerFencedTest,
    ::testing::Values(
        TxnError{kAddPartitionsToTxn, RD_KAFKA_RESP_ERR_PRODUCER_FENCED, 1, kFenced},
        TxnError{kAddPartitionsToTxn, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, 1, kFenced},
        TxnError{kAddOffsetsToTxn, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, 1, kFenced},
        // Not in librdkafka's list of fatal codes for AddOffsetsToTxn: raised abortable.
        TxnError{kAddOffsetsToTxn, RD_KAFKA_RESP_ERR_PRODUCER_FENCED, 1, kFenced, false},
        TxnError{kEndTxn, RD_KAFKA_RESP_ERR_PRODUCER_FENCED, 1, kFenced},
        TxnError{kEndTxn, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, 1, kFenced}),
    CaseName);

// --- Abortable errors ----------------------------------------------------------------

class ServeAbortableTxnErrorTest : public ServeTxnErrorsTest,
                                   public ::testing::WithParamInterface<TxnError> {};

TEST_P(ServeAbortableTxnErrorTest,
       AnAbortableErrorAbortsAndRestoresTheShardsAndServeCountsExactly) {
  const TxnError e = GetParam();
  auto [serve, url] = Serve("a");
  ASSERT_NO_FATAL_FAILURE(StartInputOnceReady(url));
  ASSERT_NO_FATAL_FAILURE(Push(e));
  const size_t aborted_at = WaitForLog("a", "transaction aborted: ", 0, 30s);
  ASSERT_NE(aborted_at, npos) << "no transaction aborted";
  // Only the shards with a batch in the aborted transaction restore (an idle one at
  // that moment runs on): at least one had.
  ASSERT_TRUE(WaitUntilShardsAreClaimed("a", aborted_at, /*all=*/false)) << "no shard was restored";
  EXPECT_EQ(Pending(e.api), 0u);

  const std::string log = LogOf("a");
  EXPECT_NE(LineWith(log, "Current transaction failed")
                .find(std::string("(") + rd_kafka_err2name(e.raised) + ")"),
            npos)
      << "librdkafka did not raise " << rd_kafka_err2name(e.raised) << " as abortable";
  EXPECT_EQ(log.find("Fatal transaction error"), npos);
  EXPECT_NE(LineWith(log, "transaction aborted: ")
                .find("restoring the shards that had a batch in it from their changelog"),
            npos)
      << LineWith(log, "transaction aborted: ");

  FinishInput();
  ExpectExact(url);
  EXPECT_GE(Total(url, "transactions_aborted"), 1);
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0) << "serve stopped before it was told to";
}

constexpr rd_kafka_resp_err_t kCoordinatorFenced = RD_KAFKA_RESP_ERR_TRANSACTION_COORDINATOR_FENCED;

INSTANTIATE_TEST_SUITE_P(
    AbortableInLibrdkafka, ServeAbortableTxnErrorTest,
    ::testing::Values(TxnError{kAddPartitionsToTxn, kCoordinatorFenced, 1, kCoordinatorFenced},
                      TxnError{kAddOffsetsToTxn, kCoordinatorFenced, 1, kCoordinatorFenced},
                      TxnError{kEndTxn, kCoordinatorFenced, 1, kCoordinatorFenced},
                      TxnError{kTxnOffsetCommit, kCoordinatorFenced, 1, kCoordinatorFenced}),
    CaseName);

// --- Retried errors ----------------------------------------------------------------------

class ServeRetriedTxnErrorTest : public ServeTxnErrorsTest,
                                 public ::testing::WithParamInterface<TxnError> {};

TEST_P(ServeRetriedTxnErrorTest, ARetriedErrorNeitherAbortsNorStopsServeAndItCountsExactly) {
  const TxnError e = GetParam();
  auto [serve, url] = Serve("a");
  ASSERT_NO_FATAL_FAILURE(StartInputOnceReady(url));
  ASSERT_NO_FATAL_FAILURE(Push(e));
  EXPECT_TRUE(WaitFor([&] { return Pending(e.api) == 0; }, 30s))
      << "the broker was never asked " << ApiName(e.api) << " again";
  FinishInput();
  ExpectExact(url);
  EXPECT_EQ(Total(url, "transactions_aborted"), 0);
  const std::string log = LogOf("a");
  EXPECT_EQ(log.find(" aborted: "), npos) << LineWith(log, " aborted: ");
  EXPECT_EQ(log.find("Current transaction failed"), npos)
      << LineWith(log, "Current transaction failed");
  EXPECT_EQ(log.find("Fatal transaction error"), npos);
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0) << "serve stopped before it was told to";
}

constexpr rd_kafka_resp_err_t kConcurrent = RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS;
constexpr rd_kafka_resp_err_t kNotCoordinator = RD_KAFKA_RESP_ERR_NOT_COORDINATOR;

INSTANTIATE_TEST_SUITE_P(RetriedInLibrdkafka, ServeRetriedTxnErrorTest,
                         ::testing::Values(TxnError{kAddPartitionsToTxn, kConcurrent, 2},
                                           TxnError{kAddOffsetsToTxn, kNotCoordinator, 2},
                                           TxnError{kEndTxn, kConcurrent, 2},
                                           TxnError{kTxnOffsetCommit, kNotCoordinator, 2}),
                         CaseName);

// --- Errors while serve starts --------------------------------------------------------

class ServeStartupTxnErrorTest : public ServeTxnErrorsTest,
                                 public ::testing::WithParamInterface<TxnError> {};

TEST_P(ServeStartupTxnErrorTest, ARetriedErrorAtStartOnlyDelaysServeAndItCountsExactly) {
  const TxnError e = GetParam();
  ASSERT_NO_FATAL_FAILURE(Push(e));  // before serve asks for its producer id and its coordinators
  auto [serve, url] = Serve("a");
  ASSERT_TRUE(WaitFor([&] { return Ready(url); }, 30s)) << "serve never became ready";
  EXPECT_TRUE(WaitFor([&] { return Pending(e.api) == 0; }, 30s))
      << "the broker was never asked " << ApiName(e.api) << " again";
  if (e.api == kInitProducerId) {
    // librdkafka's own retry, for the transactional producer.
    EXPECT_NE(
        LineWith(LogOf("a"), "Failed to acquire transactional PID").find(rd_kafka_err2str(e.error)),
        npos)
        << LogOf("a");
  }
  ASSERT_EQ(InjectEvents(Scaled(20000), 0), 0);
  ExpectExact(url);
  EXPECT_EQ(Total(url, "transactions_aborted"), 0);
  EXPECT_EQ(LogOf("a").find("Fatal transaction error"), npos);
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0) << "serve stopped before it was told to";
}

INSTANTIATE_TEST_SUITE_P(RetriedInLibrdkafka, ServeStartupTxnErrorTest,
                         ::testing::Values(TxnError{kInitProducerId, kConcurrent, 2},
                                           TxnError{kInitProducerId, kNotCoordinator, 2},
                                           TxnError{kInitProducerId, kCoordinatorFenced, 2}),
                         CaseName);

}  // namespace
}  // namespace oncecount::cmd
