// The API's endpoints over a StateBoard of hand-made shard views: called directly,
// and once over a real loopback socket.
#include "http/api.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/client.h"
#include "processor/event/increment_event.h"

namespace oncecount::http {
namespace {

using shard::CounterSnapshot;
using shard::ShardPhase;
using shard::ShardRole;
using shard::ShardView;
using namespace std::chrono_literals;

constexpr int64_t kNow = 10'000;

ShardView View(base::Partition partition, std::unordered_map<std::string, int64_t> counters,
               int64_t published_at_ms) {
  ShardView v;
  v.partition = partition;
  v.role = ShardRole::kActive;
  v.phase = ShardPhase::kRunning;
  v.counters = std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(counters));
  v.published_at_ms = published_at_ms;
  return v;
}

// Partition 0 has every statistic set, so that stats, detail and metrics can be
// checked field by field.
ShardView DetailedView() {
  ShardView v = View(base::Partition(0), {{"likes", 3}, {"a/b", 1}, {"two words", 5}}, 9'000);
  v.input_offset = base::Offset(100);
  v.high_watermark = base::Offset(120);
  v.epoch = base::Epoch(2);
  v.changelog_seq = base::Seq(17);
  v.events_applied = 40;
  v.duplicates_dropped = 6;
  v.near_edge_duplicates = 1;
  v.dead_lettered = 3;
  v.dead_lettered_by_reason = {0, 0, 2, 0, 0, 0, 1};  // invalid_json 2, overflow 1
  v.transactions_committed = 12;
  v.transactions_aborted = 1;
  v.input_lost = 9;
  v.changelog_unreadable_records = 2;
  v.hash_keyed = true;
  v.filter.mode = filter::DedupMode::kFbf;
  v.filter.constituent = filter::Constituent::kFingerprint;
  v.filter.inserted = 40;
  v.filter.duplicates = 6;
  v.filter.near_edge_duplicates = 1;
  v.filter.early_refreshes = 4;
  v.filter.estimated_fpp = 0.0005;
  v.filter.estimated_fpp_eq1 = 0.0004;
  v.filter.bits_total = 65'540;  // not a whole number of bytes: rounds up
  v.filter.filters = 3;
  v.filter.refresh_ms = 1'500;
  v.filter.window_ms_guaranteed = 3'000;
  v.filter.window_ms_configured = 3'000;
  v.filter.memory_limit_bytes = uint64_t{256} << 20;
  v.filter.forgotten_early = 0;
  v.filter.constituents = {{0, 0, 0}, {25, 0.125, 0.0001}, {15, 0.0625, 0.00002}};
  v.target_fpp = 0.001;
  v.digest = "00112233aabbccdd";
  return v;
}

ShardView SecondView() {
  ShardView v = View(base::Partition(1), {{"likes", 4}, {"views", -2}}, 9'500);
  v.input_offset = base::Offset(50);
  v.high_watermark = base::Offset(50);
  v.events_applied = 8;
  v.duplicates_dropped = 2;
  v.dead_lettered = 1;
  v.dead_lettered_by_reason = {1, 0, 0, 0, 0, 0, 0};
  v.transactions_committed = 5;
  v.filter.mode = filter::DedupMode::kBloom;
  v.filter.filters = 1;
  v.filter.window_ms_guaranteed = -1;
  return v;  // target_fpp 0: reported with the configured one
}

ShardView ThirdView() {
  return View(base::Partition(2), {{"clicks", 7}}, 9'800);
}

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() { board_.SetAssignmentKnown(true); }

  ApiOptions Options() {
    ApiOptions o;
    o.instance_id = "instance-a";
    o.input_topic = "events";
    o.target_fpp = 0.002;
    o.now_ms = [this] { return now_.load(); };
    o.steady_ms = [this] { return steady_.load(); };
    return o;
  }

  void Publish(ShardView v) { board_.Publish(std::make_shared<const ShardView>(std::move(v))); }
  void PublishAll() {
    Publish(DetailedView());
    Publish(SecondView());
    Publish(ThirdView());
  }

  Response Call(const std::string& method, const std::string& target) {
    return handler_(Request{method, target});
  }
  Response Get(const std::string& target) { return Call("GET", target); }

  // Valid until the next call: the document lives in the one parser.
  simdjson::dom::element Json(const Response& r) { return parser_.parse(r.body); }

  // The error code of an error response ({"error", "message"}).
  std::string ErrorCode(const Response& r) {
    return std::string(Json(r)["error"].get_string().value());
  }

  shard::StateBoard board_{3};
  std::atomic<int64_t> now_{kNow};
  std::atomic<int64_t> steady_{kNow};
  Handler handler_ = MakeApiHandler(board_, Options());
  simdjson::dom::parser parser_;
};

TEST_F(ApiTest, SumsACounterOverEveryShard) {
  PublishAll();
  const Response r = Get("/v1/counters/likes");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"counter":"likes","value":7,"complete":true,"staleness_ms":1000})");
}

// Regression: each shard refuses an update that overflows its own part (the
// overflow dead letter), but two shards' parts of one counter could sum past int64,
// and the answer was the capped value, complete, with nothing to say it was capped.
TEST_F(ApiTest, SaysWhenACountersSumOverTheShardsLeftInt64) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ShardView zero = View(base::Partition(0), {{"huge", kMax}, {"fine", kMax}}, 9'000);
  zero.recent_counters =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"huge"});
  Publish(zero);
  Publish(View(base::Partition(1), {{"huge", 1}, {"fine", -1}}, 9'000));
  Publish(ThirdView());
  EXPECT_EQ(Get("/v1/counters/huge").body,
            R"({"counter":"huge","value":9223372036854775807,"saturated":true,)"
            R"("complete":true,"staleness_ms":1000})");
  EXPECT_EQ(Get("/v1/counters/fine").body,
            R"({"counter":"fine","value":9223372036854775806,"complete":true,)"
            R"("staleness_ms":1000})");
  const Response list = Get("/v1/counters?prefix=f");
  EXPECT_NE(list.body.find(R"({"counter":"fine","value":9223372036854775806})"), std::string::npos)
      << list.body;
  EXPECT_NE(Get("/v1/counters?prefix=h")
                .body.find(R"({"counter":"huge","value":9223372036854775807,"saturated":true})"),
            std::string::npos);
  EXPECT_NE(Get("/v1/counters?order=recent")
                .body.find(R"({"counter":"huge","value":9223372036854775807,"saturated":true})"),
            std::string::npos)
      << Get("/v1/counters?order=recent").body;
}

TEST_F(ApiTest, AnswersNotFoundForACounterNoShardHasSeen) {
  PublishAll();
  const Response r = Get("/v1/counters/nobody");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(ErrorCode(r), "not_found");
  EXPECT_NE(r.body.find("nobody"), std::string::npos);
}

// Regression: an instance still restoring answered 404 for a counter that lives on a
// shard it did not hold yet; SPEC §4 keeps 404 for a counter no shard has seen.
TEST_F(ApiTest, AnswersIncompleteForAnUnseenCounterWhileItDoesNotHoldEveryShard) {
  Publish(DetailedView());
  Publish(SecondView());
  ShardView restoring = ThirdView();
  restoring.phase = ShardPhase::kRestoring;
  Publish(restoring);
  Response r = Get("/v1/counters/nobody");
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_EQ(ErrorCode(r), "incomplete");
  EXPECT_NE(r.body.find("nobody"), std::string::npos) << r.body;
  EXPECT_EQ(Get("/v1/counters/likes").status, 200u) << "a counter it holds is answered";
  Publish(ThirdView());
  r = Get("/v1/counters/nobody");
  EXPECT_EQ(r.status, 404u) << r.body;
  EXPECT_EQ(ErrorCode(r), "not_found");
}

TEST_F(ApiTest, DecodesPercentEncodedCounterNames) {
  PublishAll();
  const Response slash = Get("/v1/counters/a%2Fb");
  EXPECT_EQ(slash.status, 200u);
  EXPECT_EQ(Json(slash)["counter"].get_string().value(), "a/b");
  EXPECT_EQ(Json(slash)["value"].get_int64().value(), 1);
  const Response space = Get("/v1/counters/two%20words");
  EXPECT_EQ(space.status, 200u);
  EXPECT_EQ(Json(space)["value"].get_int64().value(), 5);
}

TEST_F(ApiTest, IsIncompleteUntilEveryPartitionHasARunningView) {
  Publish(DetailedView());
  Publish(SecondView());
  EXPECT_FALSE(Json(Get("/v1/counters/likes"))["complete"].get_bool().value());
  ShardView restoring = ThirdView();
  restoring.phase = ShardPhase::kRestoring;
  Publish(restoring);
  EXPECT_FALSE(Json(Get("/v1/counters/likes"))["complete"].get_bool().value());
  Publish(ThirdView());
  EXPECT_TRUE(Json(Get("/v1/counters/likes"))["complete"].get_bool().value());
}

TEST_F(ApiTest, CountsTheAgeOfCountersKeptFromAnEarlierViewInTheStaleness) {
  PublishAll();
  ShardView backlogged = SecondView();  // published at 9,500 with counters from 7,500
  backlogged.counters_behind_ms = 2'000;
  Publish(backlogged);
  now_ = 12'345;
  EXPECT_EQ(Json(Get("/v1/counters/clicks"))["staleness_ms"].get_int64().value(), 4'845);
  EXPECT_EQ(Json(Get("/v1/counters"))["staleness_ms"].get_int64().value(), 4'845);
  EXPECT_EQ(Json(Get("/v1/shards/1"))["counters_behind_ms"].get_int64().value(), 2'000);
}

TEST_F(ApiTest, MeasuresStalenessFromTheOldestViewWithTheInjectedClock) {
  EXPECT_EQ(Json(Get("/v1/counters"))["staleness_ms"].get_int64().value(), 0);  // no views
  PublishAll();
  now_ = 12'345;
  EXPECT_EQ(Json(Get("/v1/counters/clicks"))["staleness_ms"].get_int64().value(), 3'345);
  EXPECT_EQ(Json(Get("/v1/counters"))["staleness_ms"].get_int64().value(), 3'345);
  now_ = 0;  // a clock behind the views is not a negative age
  EXPECT_EQ(Json(Get("/v1/counters/clicks"))["staleness_ms"].get_int64().value(), 0);
}

TEST_F(ApiTest, PagesThroughTheListingWithPrefixLimitAndAfter) {
  PublishAll();
  EXPECT_EQ(Get("/v1/counters").body,
            R"({"counters":[{"counter":"a/b","value":1},{"counter":"clicks","value":7},)"
            R"({"counter":"likes","value":7},{"counter":"two words","value":5},)"
            R"({"counter":"views","value":-2}],"next":null,"complete":true,"staleness_ms":1000})");
  const Response first = Get("/v1/counters?limit=2");
  EXPECT_EQ(first.status, 200u);
  EXPECT_NE(first.body.find(R"("next":"clicks")"), std::string::npos) << first.body;
  const Response second = Get("/v1/counters?limit=2&after=clicks");
  EXPECT_NE(
      second.body.find(R"([{"counter":"likes","value":7},{"counter":"two words","value":5}])"),
      std::string::npos)
      << second.body;
  EXPECT_NE(second.body.find(R"("next":"two words")"), std::string::npos) << second.body;
  const Response last = Get("/v1/counters?limit=2&after=two+words");
  EXPECT_NE(last.body.find(R"([{"counter":"views","value":-2}],"next":null)"), std::string::npos)
      << last.body;
  const Response prefixed = Get("/v1/counters?prefix=a%2F");
  EXPECT_NE(prefixed.body.find(R"({"counters":[{"counter":"a/b","value":1}],"next":null)"),
            std::string::npos)
      << prefixed.body;
}

// order=recent: each shard's recently changed counters rank by rank, each name once,
// with its value summed over every shard that holds it.
TEST_F(ApiTest, ListsTheCountersChangedMostRecentlyAcrossTheShards) {
  ShardView zero = View(base::Partition(0), {{"likes", 3}, {"clicks", 1}, {"views", 4}}, 9'000);
  zero.recent_counters =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"views", "likes"});
  ShardView one = View(base::Partition(1), {{"likes", 10}, {"shares", 2}}, 9'000);
  one.recent_counters =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"shares", "likes"});
  Publish(zero);
  Publish(one);
  Publish(View(base::Partition(2), {{"other", 1}}, 9'000));  // no recent list yet

  const Response r = Get("/v1/counters?order=recent");
  ASSERT_EQ(r.status, 200u) << r.body;
  std::vector<std::pair<std::string, int64_t>> listed;
  for (auto c : Json(r)["counters"].get_array()) {
    listed.emplace_back(std::string(c["counter"].get_string().value()),
                        c["value"].get_int64().value());
  }
  EXPECT_EQ(listed, (std::vector<std::pair<std::string, int64_t>>{
                        {"views", 4}, {"shares", 2}, {"likes", 13}}));
  const auto limited = Json(Get("/v1/counters?order=recent&limit=2"))["counters"];
  EXPECT_EQ(limited.get_array().size(), 2u);
  const auto prefixed = Json(Get("/v1/counters?order=recent&prefix=li"))["counters"];
  ASSERT_EQ(prefixed.get_array().size(), 1u);
  EXPECT_EQ(prefixed.at(0)["counter"].get_string().value(), "likes");
  EXPECT_EQ(Get("/v1/counters?order=recent&after=likes").status, 400u);
}

TEST_F(ApiTest, RejectsALimitOutsideOneToAThousandAndBadPercentEncoding) {
  PublishAll();
  for (const char* target : {"/v1/counters?limit=0", "/v1/counters?limit=1001", "/v1/counters/%G1",
                             "/v1/counters?prefix=%4"}) {
    const Response r = Get(target);
    EXPECT_EQ(r.status, 400u) << target;
    EXPECT_EQ(ErrorCode(r), "bad_request") << target;
  }
  EXPECT_EQ(Get("/v1/counters?limit=1000").status, 200u);
}

TEST_F(ApiTest, Answers405WithTheAllowedMethodsToAPost) {
  const Response r = Call("POST", "/v1/counters/likes");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "GET, HEAD");
  EXPECT_EQ(ErrorCode(r), "method_not_allowed");
}

TEST_F(ApiTest, AnswersHeadLikeGet) {
  PublishAll();
  EXPECT_EQ(Call("HEAD", "/v1/counters/likes").body, Get("/v1/counters/likes").body);
}

TEST_F(ApiTest, Answers404ToAnUnknownPath) {
  const Response r = Get("/v2/counters");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(ErrorCode(r), "not_found");
}

TEST_F(ApiTest, SeesANewlyPublishedViewAfterAMergeWasCached) {
  PublishAll();
  EXPECT_EQ(Json(Get("/v1/counters/likes"))["value"].get_int64().value(), 7);
  EXPECT_EQ(Json(Get("/v1/counters/likes"))["value"].get_int64().value(), 7);
  Publish(View(base::Partition(2), {{"clicks", 7}, {"likes", 10}}, 9'900));
  EXPECT_EQ(Json(Get("/v1/counters/likes"))["value"].get_int64().value(), 17);
  board_.Remove(base::Partition(1));
  EXPECT_EQ(Json(Get("/v1/counters/likes"))["value"].get_int64().value(), 13);
  // "views" lived on the shard removed: this instance cannot say no shard has seen it.
  EXPECT_EQ(Get("/v1/counters/views").status, 503u);
}

// Regression: the distinct-counter count is cost-limited by time, and took its time
// from the wall clock: a clock stepped back (NTP) kept an old count for as long as the
// step, however the shards changed.
TEST_F(ApiTest, CountsDistinctCountersAgainAfterTheWallClockSteppedBack) {
  PublishAll();
  const auto counters = [this] {
    return Json(Get("/v1/stats"))["totals"]["counters"].get_uint64().value();
  };
  EXPECT_EQ(counters(), 5u);
  now_ -= 3'600'000;  // an hour back
  steady_ += 10;
  Publish(View(base::Partition(2), {{"clicks", 7}, {"shares", 1}}, now_.load()));
  EXPECT_EQ(counters(), 6u);
}

TEST_F(ApiTest, ReportsEveryShardAndTheirTotalsInStats) {
  PublishAll();
  const auto stats = Json(Get("/v1/stats"));
  EXPECT_EQ(stats["instance"].get_string().value(), "instance-a");
  EXPECT_EQ(stats["input_topic"].get_string().value(), "events");
  EXPECT_EQ(stats["partitions"].get_int64().value(), 3);
  EXPECT_TRUE(stats["complete"].get_bool().value());
  EXPECT_TRUE(stats["ready"].get_bool().value());

  const auto shards = stats["shards"].get_array().value();
  ASSERT_EQ(shards.size(), 3u);
  const auto s0 = shards.at(0).value();
  EXPECT_EQ(s0["partition"].get_int64().value(), 0);
  EXPECT_EQ(s0["role"].get_string().value(), "active");
  EXPECT_EQ(s0["phase"].get_string().value(), "running");
  EXPECT_EQ(s0["input_offset"].get_int64().value(), 100);
  EXPECT_EQ(s0["high_watermark"].get_int64().value(), 120);
  EXPECT_EQ(s0["lag"].get_int64().value(), 20);
  EXPECT_EQ(s0["epoch"].get_uint64().value(), 2u);
  EXPECT_EQ(s0["changelog_seq"].get_uint64().value(), 17u);
  EXPECT_EQ(s0["events_applied"].get_uint64().value(), 40u);
  EXPECT_EQ(s0["duplicates_dropped"].get_uint64().value(), 6u);
  EXPECT_EQ(s0["near_edge_duplicates"].get_uint64().value(), 1u);
  EXPECT_EQ(s0["dead_lettered"].get_uint64().value(), 3u);
  EXPECT_EQ(s0["dead_lettered_by_reason"]["invalid_json"].get_uint64().value(), 2u);
  EXPECT_EQ(s0["dead_lettered_by_reason"]["overflow"].get_uint64().value(), 1u);
  EXPECT_EQ(s0["transactions_committed"].get_uint64().value(), 12u);
  EXPECT_EQ(s0["transactions_aborted"].get_uint64().value(), 1u);
  EXPECT_EQ(s0["input_lost"].get_uint64().value(), 9u);
  EXPECT_EQ(s0["changelog_unreadable_records"].get_uint64().value(), 2u);
  EXPECT_TRUE(s0["hash_keyed"].get_bool().value());
  EXPECT_EQ(s0["digest"].get_string().value(), "00112233aabbccdd");
  EXPECT_TRUE(s0["replica_lag_ms"].is_null()) << "an active shard has no replica lag";
  const auto f0 = s0["filter"];
  EXPECT_EQ(f0["mode"].get_string().value(), "fbf");
  EXPECT_EQ(f0["constituent"].get_string().value(), "fingerprint");
  EXPECT_EQ(f0["filters"].get_uint64().value(), 3u);
  EXPECT_EQ(f0["refresh_ms"].get_int64().value(), 1'500);
  EXPECT_DOUBLE_EQ(f0["estimated_fpp"].get_double().value(), 0.0005);
  EXPECT_DOUBLE_EQ(f0["target_fpp"].get_double().value(), 0.001);
  EXPECT_EQ(f0["window_ms_guaranteed"].get_int64().value(), 3'000);
  EXPECT_EQ(f0["bits_total"].get_uint64().value(), 65'540u);
  EXPECT_EQ(f0["inserted"].get_uint64().value(), 40u);
  EXPECT_EQ(f0["duplicates"].get_uint64().value(), 6u);
  EXPECT_EQ(f0["near_edge_duplicates"].get_uint64().value(), 1u);
  EXPECT_EQ(f0["early_refreshes"].get_uint64().value(), 4u);
  // A shard without a target of its own shows the configured one.
  EXPECT_DOUBLE_EQ(shards.at(1)["filter"]["target_fpp"].get_double().value(), 0.002);
  // A filter that is not a forgetful one has no constituents to name.
  EXPECT_TRUE(shards.at(1)["filter"]["constituent"].is_null());

  const auto totals = stats["totals"];
  EXPECT_EQ(totals["counters"].get_uint64().value(), 5u);
  EXPECT_EQ(totals["events_applied"].get_uint64().value(), 48u);
  EXPECT_EQ(totals["duplicates_dropped"].get_uint64().value(), 8u);
  EXPECT_EQ(totals["near_edge_duplicates"].get_uint64().value(), 1u);
  EXPECT_EQ(totals["dead_lettered"].get_uint64().value(), 4u);
  EXPECT_EQ(totals["dead_lettered_by_reason"]["missing_key"].get_uint64().value(), 1u);
  EXPECT_EQ(totals["dead_lettered_by_reason"]["invalid_json"].get_uint64().value(), 2u);
  EXPECT_EQ(totals["transactions_committed"].get_uint64().value(), 17u);
  EXPECT_EQ(totals["transactions_aborted"].get_uint64().value(), 1u);
  EXPECT_EQ(totals["lag"].get_int64().value(), 20);
}

// GET /v1/history: per shard view, one array per quantity aligned with `times`,
// null where the view was absent; `since` returns only newer samples.
TEST_F(ApiTest, ServesTheHistoryColumnsPerShardAlignedWithTheSampleTimes) {
  History history;
  ApiOptions o = Options();
  o.history = &history;
  const Handler handler = MakeApiHandler(board_, std::move(o));
  Publish(DetailedView());
  history.Record(board_.Read(), 1000);
  ShardView more = DetailedView();
  more.events_applied += 25;
  more.late_events = 2;
  Publish(more);
  Publish(SecondView());
  history.Record(board_.Read(), 2000);

  const Response r = handler(Request{"GET", "/v1/history"});
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto doc = Json(r);
  EXPECT_EQ(doc["interval_ms"].get_int64().value(), 1000);
  EXPECT_EQ(doc["max_samples"].get_uint64().value(), 600u);
  EXPECT_EQ(doc["bytes"].get_uint64().value(), 3 * sizeof(ShardSample));
  EXPECT_EQ(doc["phases"].at(1).get_string().value(), "running");
  ASSERT_EQ(doc["times"].get_array().size(), 2u);
  EXPECT_EQ(doc["times"].at(1).get_int64().value(), 2000);
  const auto shards = doc["shards"].get_array();
  ASSERT_EQ(shards.size(), 2u);
  const auto first = shards.at(0);
  EXPECT_EQ(first["partition"].get_int64().value(), 0);
  EXPECT_EQ(first["role"].get_string().value(), "active");
  EXPECT_EQ(first["events_applied"].at(1).get_uint64().value(), 25u);
  EXPECT_EQ(first["late_events"].at(1).get_uint64().value(), 2u);
  EXPECT_EQ(first["lag"].at(0).get_uint64().value(), 20u);
  EXPECT_EQ(first["phase"].at(0).get_uint64().value(), 1u);
  EXPECT_EQ(first["filters"].at(0).get_uint64().value(), 3u);
  EXPECT_EQ(first["window_ms_guaranteed"].at(0).get_uint64().value(), 3000u);
  EXPECT_DOUBLE_EQ(first["estimated_fpp"].at(0).get_double().value(), 0.0005);
  EXPECT_TRUE(first["replica_lag_ms"].at(0).is_null());
  const auto second = shards.at(1);
  EXPECT_EQ(second["partition"].get_int64().value(), 1);
  EXPECT_TRUE(second["events_applied"].at(0).is_null()) << "absent at the first sample";
  EXPECT_EQ(second["events_applied"].at(1).get_uint64().value(), 0u);

  const Response newer = handler(Request{"GET", "/v1/history?since=1000"});
  const auto later = Json(newer);
  ASSERT_EQ(later["times"].get_array().size(), 1u);
  EXPECT_EQ(later["shards"].at(0)["events_applied"].at(0).get_uint64().value(), 25u);
}

TEST_F(ApiTest, ServesAnEmptyHistoryWithoutARecorder) {
  const Response r = Get("/v1/history");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(Json(r)["times"].get_array().size(), 0u);
  EXPECT_EQ(Get("/v1/history?since=x").status, 400u);
}

TEST_F(ApiTest, NamesDeadLetterReasonsAsTheEventParserDoesInItsOrder) {
  PublishAll();
  const auto reasons = Json(Get("/v1/stats"))["shards"].at(0)["dead_lettered_by_reason"];
  std::vector<std::string> keys;
  const simdjson::dom::object object = reasons.get_object().value();
  for (auto field : object) keys.emplace_back(field.key);
  std::vector<std::string> expected;
  for (size_t i = 0; i < shard::kDlqReasonCount; ++i) {
    expected.emplace_back(event::DlqReasonName(static_cast<event::DlqReason>(i)));
  }
  EXPECT_EQ(keys, expected);
}

TEST_F(ApiTest, ShowsOneShardInDetailWithItsDigestAndConstituents) {
  PublishAll();
  const Response r = Get("/v1/shards/0");
  ASSERT_EQ(r.status, 200u);
  const auto detail = Json(r);
  EXPECT_EQ(detail["instance"].get_string().value(), "instance-a");
  EXPECT_EQ(detail["partition"].get_int64().value(), 0);
  EXPECT_EQ(detail["digest"].get_string().value(), "00112233aabbccdd");
  EXPECT_EQ(detail["lag"].get_int64().value(), 20);
  EXPECT_EQ(detail["staleness_ms"].get_int64().value(), 1'000);
  EXPECT_DOUBLE_EQ(detail["filter"]["estimated_fpp_eq1"].get_double().value(), 0.0004);
  EXPECT_EQ(detail["filter"]["window_ms_guaranteed"].get_int64().value(), 3'000);
  const auto constituents = detail["constituents"].get_array().value();
  ASSERT_EQ(constituents.size(), 3u);
  EXPECT_EQ(constituents.at(1)["inserted"].get_uint64().value(), 25u);
  EXPECT_DOUBLE_EQ(constituents.at(1)["fill"].get_double().value(), 0.125);
  EXPECT_DOUBLE_EQ(constituents.at(2)["estimated_fpp"].get_double().value(), 0.00002);
}

TEST_F(ApiTest, Answers404ForAShardThisInstanceDoesNotHold) {
  PublishAll();
  const Response r = Get("/v1/shards/7");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(ErrorCode(r), "not_found");
  EXPECT_EQ(Get("/v1/shards/x").status, 400u);
}

TEST_F(ApiTest, IsUnreadyUntilTheAssignmentIsKnownAndEveryActiveShardRuns) {
  board_.SetAssignmentKnown(false);
  Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(ErrorCode(r), "not_ready");

  board_.SetAssignmentKnown(true);
  ShardView restoring = SecondView();
  restoring.phase = ShardPhase::kRestoring;
  Publish(DetailedView());
  Publish(restoring);
  r = Get("/readyz");
  EXPECT_EQ(r.status, 503u);
  EXPECT_NE(r.body.find("1 (restoring)"), std::string::npos) << r.body;

  ShardView standby = ThirdView();  // a restoring standby does not hold readiness back
  standby.role = ShardRole::kStandby;
  standby.phase = ShardPhase::kRestoring;
  Publish(standby);
  Publish(SecondView());
  r = Get("/readyz");
  EXPECT_EQ(r.status, 200u);
  const auto body = Json(r);
  EXPECT_TRUE(body["ready"].get_bool().value());
  EXPECT_FALSE(body["complete"].get_bool().value());
}

TEST_F(ApiTest, ReadinessShowsShardsByRoleAndTheFurthestReplicaLag) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  ShardView standby = SecondView();
  standby.role = ShardRole::kStandby;
  standby.replica_lag_ms = 180;
  Publish(standby);
  ShardView counters_only = ThirdView();
  counters_only.role = ShardRole::kReplica;
  counters_only.replica_lag_ms = 40;
  Publish(counters_only);
  const Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto body = Json(r);
  EXPECT_EQ(body["shards"]["active"].get_uint64().value(), 1u);
  EXPECT_EQ(body["shards"]["standby"].get_uint64().value(), 1u);
  EXPECT_EQ(body["shards"]["replica"].get_uint64().value(), 1u);
  EXPECT_EQ(body["max_replica_lag_ms"].get_int64().value(), 180);
}

// An instance whose input topic is gone holds no shard (its group gives every member
// an empty share): /readyz is 503 and says why.
TEST_F(ApiTest, ReadinessNamesAnInputTopicTheClusterNoLongerLists) {
  board_.SetAssignmentKnown(true);
  board_.SetTopicsUnavailable("topic events is not in the cluster's list of topics");
  const Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_NE(r.body.find("topic events is not in the cluster's list of topics"), std::string::npos)
      << r.body;
}

// Before the processor runs, the start may wait for a topic or for the instances of a
// renamed group: a probe says which rather than "no partition assignment".
TEST_F(ApiTest, ReadinessSaysWhatTheStartWaitsFor) {
  board_.SetAssignmentKnown(false);
  board_.SetStartWaitingFor("waiting for consumer group \"counts-old\" to stop");
  Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_EQ(ErrorCode(r), "not_ready");
  EXPECT_NE(r.body.find("starting: waiting for consumer group \\\"counts-old\\\" to stop"),
            std::string::npos)
      << r.body;
  board_.SetStartWaitingFor("");
  r = Get("/readyz");
  EXPECT_NE(r.body.find("no partition assignment"), std::string::npos) << r.body;
}

// A 503 has no `degraded` list: the instance-wide reasons go into its message, so
// that a missing changelog does not hide a missing dead-letter topic.
TEST_F(ApiTest, ANotReadyAnswerAlsoNamesTheInstancesDegradedReasons) {
  board_.SetAssignmentKnown(true);
  board_.SetTopicsUnavailable("topic events.changelog is not in the cluster's list of topics");
  board_.SetInstanceDegraded({"topic events.dlq is not in the cluster's list of topics"});
  const Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_NE(r.body.find("topic events.changelog is not in the cluster's list of topics; and: "
                        "topic events.dlq is not in"),
            std::string::npos)
      << r.body;
}

// The processor's thread is blocked in a commit that hangs: its shards still look
// running, but nothing commits. Past the transaction timeout, /readyz says so.
TEST_F(ApiTest, ReadinessIsNotReadyWhileTheInstancesTransactionIsOpenPastItsTimeout) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  board_.SetTransactionTimeout(10'000);
  board_.SetTransactionOpenSince(kNow - 9'000);
  EXPECT_EQ(Get("/readyz").status, 200u);
  now_ = kNow + 60'000;  // a wall-clock step changes nothing
  EXPECT_EQ(Get("/readyz").status, 200u);
  steady_ = kNow + 2'000;
  const Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_NE(r.body.find("the instance's transaction has been open for 11 s"), std::string::npos)
      << r.body;
  EXPECT_FALSE(Json(Get("/v1/stats"))["ready"].get_bool().value());
  board_.SetTransactionOpenSince(-1);
  EXPECT_EQ(Get("/readyz").status, 200u);
}

// A change of the input's partition count concerns every shard: it is listed under
// "degraded" with no partition, and the instance stays ready.
TEST_F(ApiTest, ReadinessListsAChangeOfTheInputsPartitionCountAsDegradedWithNoPartition) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  board_.SetInstanceDegraded({"topic events has 3 partitions now, 2 before"});
  Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  EXPECT_TRUE(degraded.at(0)["partition"].is_null()) << r.body;
  EXPECT_EQ(std::string(degraded.at(0)["reason"].get_string().value()),
            "topic events has 3 partitions now, 2 before");
  board_.SetInstanceDegraded({});
  EXPECT_EQ(Json(Get("/readyz"))["degraded"].get_array().value().size(), 0u);
}

// SPEC §2.4: a standby still being built (after a restart, say) cannot take its shard
// over hot yet. The instance is ready, and says so under "degraded": a rolling restart
// that moved on before would restore the next instance's shards cold.
TEST_F(ApiTest, ReadinessNamesAStandbyStillBeingBuilt) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  ShardView building = SecondView();
  building.role = ShardRole::kStandby;
  building.phase = shard::ShardPhase::kRestoring;
  Publish(building);
  Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  EXPECT_EQ(degraded.at(0)["partition"].get_int64().value(), 1);
  const std::string reason(degraded.at(0)["reason"].get_string().value());
  EXPECT_NE(reason.find("its standby is being built"), std::string::npos) << reason;
  building.phase = shard::ShardPhase::kRunning;
  Publish(building);
  EXPECT_EQ(Json(Get("/readyz"))["degraded"].get_array().value().size(), 0u);
}

// SPEC §2.1: a filter that cannot keep its window says so. The shard still runs, so
// the instance stays ready, with the shard and the reason under "degraded".
TEST_F(ApiTest, ReadinessNamesTheShardsWhoseFilterHoldsLessThanItsWindow) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["degraded"].get_array().value().size(), 0u);

  ShardView forgetting = DetailedView();
  forgetting.filter.window_ms_guaranteed = 1'200;
  forgetting.filter.forgotten_early = 5'000;
  Publish(forgetting);
  ShardView standby = SecondView();  // a standby's filter is its active's concern
  standby.role = ShardRole::kStandby;
  standby.filter = forgetting.filter;
  Publish(standby);
  r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  auto first = degraded.at(0);
  EXPECT_EQ(first["partition"].get_int64().value(), 0);
  const std::string reason(first["reason"].get_string().value());
  EXPECT_NE(reason.find("holds 1200 ms of its 3000 ms window"), std::string::npos) << reason;
  EXPECT_NE(reason.find("256 MiB, dedup.max_filter_mib"), std::string::npos) << reason;
  EXPECT_NE(reason.find("forgot 5000 ids early"), std::string::npos) << reason;
  const std::string stats = Get("/v1/shards/0").body;
  EXPECT_NE(stats.find("\"forgotten_early\":5000"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"window_ms_configured\":3000"), std::string::npos) << stats;
}

// A shard whose filter was made for a shorter window than dedup.window_ms says so in
// the readiness details and in its stats: retries beyond that may count twice.
TEST_F(ApiTest, ReadinessNamesAShardWhoseFilterWasMadeForAShorterWindow) {
  board_.SetAssignmentKnown(true);
  ShardView shorter = DetailedView();
  shorter.record_window_held_ms = 61'000;
  shorter.record_window_ms = 300'000;
  Publish(shorter);
  Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  const std::string reason(degraded.at(0)["reason"].get_string().value());
  EXPECT_NE(reason.find("holds retries up to 61000 ms after their first copy, and "
                        "dedup.window_ms is 300000 ms"),
            std::string::npos)
      << reason;
  EXPECT_NE(Get("/v1/shards/0").body.find("\"record_window_held_ms\":61000"), std::string::npos);
  const std::string sample = "oncecount_dedup_record_window_held_seconds{partition=\"0\"} 61\n";
  EXPECT_NE(Get("/metrics").body.find(sample), std::string::npos);
  Publish(DetailedView());
  EXPECT_EQ(Get("/metrics").body.find("oncecount_dedup_record_window_held_seconds{"),
            std::string::npos);
  EXPECT_EQ(Json(Get("/readyz"))["degraded"].get_array().value().size(), 0u);
  EXPECT_NE(Get("/v1/shards/0").body.find("\"record_window_held_ms\":null"), std::string::npos);
}

TEST_F(ApiTest, ReadinessNamesAShardWhoseFilterHasNoMemoryBound) {
  board_.SetAssignmentKnown(true);
  ShardView unbounded = DetailedView();
  unbounded.filter_unbounded = true;
  Publish(unbounded);
  Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  const std::string reason(degraded.at(0)["reason"].get_string().value());
  EXPECT_NE(reason.find("held more than dedup.max_filter_mib already and has no bound"),
            std::string::npos)
      << reason;
  EXPECT_NE(Get("/v1/shards/0").body.find("\"filter_unbounded\":true"), std::string::npos);
  EXPECT_NE(Get("/metrics").body.find("\noncecount_filter_unbounded{partition=\"0\"} 1\n"),
            std::string::npos);
  Publish(DetailedView());
  EXPECT_EQ(Json(Get("/readyz"))["degraded"].get_array().value().size(), 0u);
  EXPECT_NE(Get("/v1/shards/0").body.find("\"filter_unbounded\":false"), std::string::npos);
  const std::string metrics = Get("/metrics").body;
  EXPECT_NE(metrics.find("# TYPE oncecount_filter_unbounded gauge"), std::string::npos);
  EXPECT_EQ(metrics.find("\noncecount_filter_unbounded{"), std::string::npos) << metrics;
}

// Regression: a standby that failed was left out of /readyz's details and of the lag
// gauge, so an instance whose failover promise no longer held looked healthy.
TEST_F(ApiTest, ReadinessNamesAFailedStandbyAndTheLagGaugeShowsIt) {
  board_.SetAssignmentKnown(true);
  Publish(DetailedView());
  ShardView standby = SecondView();
  standby.role = ShardRole::kStandby;
  standby.phase = shard::ShardPhase::kFailed;
  standby.failure = "out of memory replaying its changelog";
  standby.replica_lag_ms = 4'000;
  Publish(standby);
  const Response r = Get("/readyz");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto degraded = Json(r)["degraded"].get_array().value();
  ASSERT_EQ(degraded.size(), 1u) << r.body;
  EXPECT_EQ(degraded.at(0)["partition"].get_int64().value(), 1);
  const std::string reason(degraded.at(0)["reason"].get_string().value());
  EXPECT_NE(reason.find("its standby failed (out of memory replaying its changelog)"),
            std::string::npos)
      << reason;
  EXPECT_EQ(Json(Get("/readyz"))["max_replica_lag_ms"].get_int64().value(), 4'000);
  const std::string m = Get("/metrics").body;
  EXPECT_NE(m.find("oncecount_replica_lag_seconds{partition=\"1\",role=\"standby\"} 4\n"),
            std::string::npos)
      << m;
}

TEST_F(ApiTest, IsHealthyWhileItRuns) {
  const Response r = Get("/healthz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, R"({"status":"ok"})");
}

TEST_F(ApiTest, ServesTheBuiltInDashboardWholeAndWithoutExternalAssets) {
  const Response r = Get("/");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(r.body.find("</html>"), std::string::npos);
  for (const char* endpoint :
       {"getJson('/v1/stats')", "getJson('/v1/history'", "getJson('/v1/counters", "'/metrics'"}) {
    EXPECT_NE(r.body.find(endpoint), std::string::npos) << endpoint;
  }
  for (const char* external :
       {"<link rel=\"stylesheet", "<script src", "src=\"http", "href=\"http", "@import"}) {
    EXPECT_EQ(r.body.find(external), std::string::npos) << external;
  }
  // Its icon is inline, so the browser asks for no /favicon.ico (a 404).
  EXPECT_NE(r.body.find("<link rel=\"icon\" href=\"data:,\">"), std::string::npos);
}

TEST_F(ApiTest, ServesTheConfiguredDashboard) {
  ApiOptions options = Options();
  options.dashboard_html = "<html>mine</html>";
  EXPECT_EQ(MakeApiHandler(board_, options)(Request{"GET", "/"}).body, "<html>mine</html>");
}

TEST_F(ApiTest, ExposesPrometheusMetricsPerPartition) {
  PublishAll();
  const Response r = Get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = r.body;
  const auto has = [&m](const std::string& line) {
    return m.find("\n" + line + "\n") != std::string::npos || m.rfind(line + "\n", 0) == 0;
  };
  for (const char* line : {
           "# TYPE oncecount_up gauge",
           "oncecount_up 1",
           "# TYPE oncecount_counters gauge",
           "oncecount_counters 5",
           "# TYPE oncecount_shard_ready gauge",
           "oncecount_shard_ready{partition=\"0\"} 1",
           "# TYPE oncecount_events_applied_total counter",
           "oncecount_events_applied_total{partition=\"0\"} 40",
           "oncecount_events_applied_total{partition=\"1\"} 8",
           "oncecount_events_applied_total{partition=\"2\"} 0",
           "oncecount_duplicates_dropped_total{partition=\"0\"} 6",
           "oncecount_near_edge_duplicates_total{partition=\"0\"} 1",
           "# TYPE oncecount_dead_lettered_total counter",
           "oncecount_dead_lettered_total{partition=\"0\",reason=\"invalid_json\"} 2",
           "oncecount_dead_lettered_total{partition=\"0\",reason=\"overflow\"} 1",
           "oncecount_dead_lettered_total{partition=\"1\",reason=\"missing_key\"} 1",
           "oncecount_dead_lettered_total{partition=\"1\",reason=\"overflow\"} 0",
           "oncecount_transactions_committed_total{partition=\"0\"} 12",
           "oncecount_transactions_aborted_total{partition=\"0\"} 1",
           "# TYPE oncecount_input_lost_messages_total counter",
           "oncecount_input_lost_messages_total{partition=\"0\"} 9",
           "# TYPE oncecount_changelog_unreadable_records gauge",
           "oncecount_changelog_unreadable_records{partition=\"0\"} 2",
           "# TYPE oncecount_input_lag_messages gauge",
           "oncecount_input_lag_messages{partition=\"0\"} 20",
           "oncecount_input_lag_messages{partition=\"1\"} 0",
           "oncecount_input_offset{partition=\"0\"} 100",
           "oncecount_filter_estimated_fpp{partition=\"0\"} 0.0005",
           "oncecount_filter_target_fpp{partition=\"0\"} 0.001",
           "oncecount_filter_target_fpp{partition=\"1\"} 0.002",
           "# TYPE oncecount_filter_forgotten_early_total counter",
           "oncecount_filter_forgotten_early_total{partition=\"0\"} 0",
           "# TYPE oncecount_filter_early_refreshes_total counter",
           "oncecount_filter_early_refreshes_total{partition=\"0\"} 4",
           "oncecount_filter_constituents{partition=\"0\"} 3",
           "oncecount_filter_refresh_period_seconds{partition=\"0\"} 1.5",
           "oncecount_filter_guaranteed_window_seconds{partition=\"0\"} 3",
           "oncecount_filter_guaranteed_window_seconds{partition=\"1\"} +Inf",
           "oncecount_filter_memory_bytes{partition=\"0\",role=\"active\"} 8193",
       }) {
    EXPECT_TRUE(has(line)) << "missing line: " << line << "\nin:\n" << m;
  }
  EXPECT_NE(m.find("# HELP oncecount_events_applied_total "), std::string::npos);
  EXPECT_EQ(m.back(), '\n');

  // Every family is announced by HELP then TYPE before its first sample.
  std::string last_typed;
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      last_typed = line.substr(7, line.find(' ', 7) - 7);
    } else if (line[0] != '#') {
      EXPECT_EQ(line.rfind(last_typed, 0), 0u) << line;
    }
  }
}

// A replica (here partition 1: a standby of another instance's shard) answers for
// its shard, says how far behind it is, and is left out of the per-shard metrics
// so that sums over instances count every shard once.
TEST_F(ApiTest, ShowsReplicasWithTheirLagAndKeepsThemOutOfPerShardMetrics) {
  ShardView standby = SecondView();
  standby.role = shard::ShardRole::kStandby;
  standby.replica_lag_ms = 250;
  ShardView counters_only = ThirdView();
  counters_only.role = shard::ShardRole::kReplica;
  counters_only.replica_lag_ms = 0;
  Publish(DetailedView());
  Publish(standby);
  Publish(counters_only);

  EXPECT_EQ(Json(Get("/v1/counters/likes"))["value"].get_int64().value(), 7) << "3 + 4";
  const auto shards = Json(Get("/v1/stats"))["shards"].get_array().value();
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards.at(1)["role"].get_string().value(), "standby");
  EXPECT_EQ(shards.at(1)["replica_lag_ms"].get_int64().value(), 250);
  EXPECT_EQ(shards.at(2)["role"].get_string().value(), "replica");
  EXPECT_EQ(shards.at(2)["replica_lag_ms"].get_int64().value(), 0);

  const std::string m = Get("/metrics").body;
  for (const char* line : {
           "oncecount_shards{role=\"active\"} 1\n",
           "oncecount_shards{role=\"standby\"} 1\n",
           "oncecount_shards{role=\"replica\"} 1\n",
           "oncecount_replica_lag_seconds{partition=\"1\",role=\"standby\"} 0.25\n",
           "oncecount_replica_lag_seconds{partition=\"2\",role=\"replica\"} 0\n",
           "oncecount_events_applied_total{partition=\"0\"} 40\n",
       }) {
    EXPECT_NE(m.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << m;
  }
  EXPECT_EQ(m.find("oncecount_events_applied_total{partition=\"1\"}"), std::string::npos);
  EXPECT_EQ(m.find("oncecount_dead_lettered_total{partition=\"1\""), std::string::npos);
  // Filter memory is the instance's own: the standby holds its filter, the
  // counters-only replica holds none.
  EXPECT_NE(m.find("oncecount_filter_memory_bytes{partition=\"1\",role=\"standby\"} 0\n"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("oncecount_filter_memory_bytes{partition=\"2\""), std::string::npos);
  EXPECT_EQ(m.find("oncecount_replica_lag_seconds{partition=\"0\""), std::string::npos);
}

// Sums every sample of each family in a Prometheus text exposition, whatever its
// labels.
std::map<std::string, double> SumByFamily(const std::string& exposition) {
  std::map<std::string, double> sums;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    const size_t value_at = line.rfind(' ');
    sums[line.substr(0, name_end)] += std::stod(line.substr(value_at + 1));
  }
  return sums;
}

// Two instances with one standby each hold every shard, each shard active on one of
// them: summing a per-shard counter over both instances (as the dashboards do) gives
// the cluster's figure, which either instance's /v1/stats totals show.
TEST_F(ApiTest, PerShardCountersSummedOverTheInstancesEqualTheClusterTotals) {
  ShardView third = ThirdView();
  third.events_applied = 5;
  third.dead_lettered = 2;
  third.dead_lettered_by_reason = {0, 1, 0, 0, 0, 0, 1};
  // This instance: 0 active, a standby of 1, a counters-only replica of 2.
  ShardView standby_of_1 = SecondView();
  standby_of_1.role = ShardRole::kStandby;
  ShardView replica_of_2 = third;
  replica_of_2.role = ShardRole::kReplica;
  Publish(DetailedView());
  Publish(standby_of_1);
  Publish(replica_of_2);
  // The other: a standby of 0, 1 and 2 active.
  shard::StateBoard other_board(3);
  other_board.SetAssignmentKnown(true);
  ShardView standby_of_0 = DetailedView();
  standby_of_0.role = ShardRole::kStandby;
  for (ShardView v : {standby_of_0, SecondView(), third}) {
    other_board.Publish(std::make_shared<const ShardView>(std::move(v)));
  }
  const Handler other = MakeApiHandler(other_board, Options());

  std::map<std::string, double> cluster = SumByFamily(Get("/metrics").body);
  for (const auto& [family, sum] : SumByFamily(other(Request{"GET", "/metrics"}).body)) {
    cluster[family] += sum;
  }
  const auto totals = Json(Get("/v1/stats"))["totals"];
  EXPECT_EQ(cluster["oncecount_events_applied_total"], 40 + 8 + 5);
  EXPECT_EQ(cluster["oncecount_events_applied_total"],
            static_cast<double>(totals["events_applied"].get_uint64().value()));
  EXPECT_EQ(cluster["oncecount_dead_lettered_total"], 3 + 1 + 2);
  EXPECT_EQ(cluster["oncecount_dead_lettered_total"],
            static_cast<double>(totals["dead_lettered"].get_uint64().value()));
  EXPECT_EQ(cluster["oncecount_duplicates_dropped_total"],
            static_cast<double>(totals["duplicates_dropped"].get_uint64().value()));
  EXPECT_EQ(cluster["oncecount_transactions_committed_total"],
            static_cast<double>(totals["transactions_committed"].get_uint64().value()));
  EXPECT_EQ(cluster["oncecount_transactions_aborted_total"],
            static_cast<double>(totals["transactions_aborted"].get_uint64().value()));
}

TEST_F(ApiTest, AppendsWhatTheComponentsCountToTheMetrics) {
  base::MetricRegistry registry;
  registry.AddCounter("oncecount_replica_rebuilds_total", "Rebuilds.").Add(2);
  ApiOptions options = Options();
  options.metrics = &registry;
  const Handler handler = MakeApiHandler(board_, options);
  PublishAll();
  const std::string m = handler(Request{"GET", "/metrics"}).body;
  EXPECT_NE(m.find("# TYPE oncecount_replica_rebuilds_total counter\n"
                   "oncecount_replica_rebuilds_total 2\n"),
            std::string::npos)
      << m;
  EXPECT_LT(m.find("oncecount_events_applied_total"), m.find("oncecount_replica_rebuilds_total"));
}

// Regression (the second half): a restoring shard's counts read 0 and then jumped
// back, which Prometheus takes for a reset followed by that many new events. The
// filter's figures did the same (forgotten_early_total is kept in the filter's state),
// and its estimated FPP read 0, as if perfect.
TEST_F(ApiTest, MarksARestoringShardUnreadyInMetricsAndLeavesOutTheCountsItsStateHolds) {
  ShardView restoring = SecondView();
  restoring.phase = ShardPhase::kRestoring;
  restoring.transactions_aborted = 1;
  Publish(restoring);
  const std::string m = Get("/metrics").body;
  EXPECT_NE(m.find("oncecount_shard_ready{partition=\"1\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("oncecount_transactions_aborted_total{partition=\"1\"} 1\n"), std::string::npos)
      << m;
  for (const char* family :
       {"oncecount_events_applied_total{", "oncecount_duplicates_dropped_total{",
        "oncecount_near_edge_duplicates_total{", "oncecount_dead_lettered_total{",
        "oncecount_late_events_total{", "oncecount_input_offset{", "oncecount_input_lag_messages{",
        "oncecount_filter_estimated_fpp{", "oncecount_filter_constituents{",
        "oncecount_filter_refresh_period_seconds{", "oncecount_filter_guaranteed_window_seconds{",
        "oncecount_filter_forgotten_early_total{", "oncecount_filter_early_refreshes_total{",
        "oncecount_filter_memory_bytes{"}) {
    EXPECT_EQ(m.find(family), std::string::npos) << family << " in:\n" << m;
  }
  EXPECT_NE(m.find("# TYPE oncecount_events_applied_total counter"), std::string::npos) << m;
}

TEST_F(ApiTest, AnswersConsistentlyWhileShardsPublishConcurrently) {
  PublishAll();
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    for (int64_t i = 0; !stop; ++i) {
      Publish(View(base::Partition(static_cast<int32_t>(i % 3)), {{"likes", 1}, {"n", i}}, 9'000));
    }
  });
  std::vector<std::thread> readers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        for (const char* target : {"/v1/counters/likes", "/v1/counters", "/v1/stats", "/metrics"}) {
          if (handler_(Request{"GET", target}).status != 200) ++failures;
        }
      }
    });
  }
  for (auto& r : readers) r.join();
  stop = true;
  publisher.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ApiTest, ServesCountersAndMetricsOverALoopbackSocket) {
  PublishAll();
  boost::asio::io_context io;
  auto listening = Server::Listen(io, "127.0.0.1:0", handler_);
  ASSERT_TRUE(listening.ok()) << listening.message();
  auto server = listening.value();
  std::thread thread([&io] { io.run(); });
  const std::string base = "http://127.0.0.1:" + std::to_string(server->local_endpoint().port());

  const auto counter = HttpGet(base, "/v1/counters/likes", 5s);
  const auto metrics = HttpGet(base, "/metrics", 5s);
  const auto missing = HttpGet(base, "/v1/counters/a%2Fc", 5s);
  server->Stop();
  io.stop();
  thread.join();

  ASSERT_TRUE(counter.ok()) << counter.message();
  EXPECT_EQ(counter.value().status, 200u);
  EXPECT_EQ(counter.value().body,
            R"({"counter":"likes","value":7,"complete":true,"staleness_ms":1000})");
  ASSERT_TRUE(metrics.ok()) << metrics.message();
  EXPECT_EQ(metrics.value().status, 200u);
  EXPECT_NE(metrics.value().body.find("oncecount_events_applied_total{partition=\"0\"} 40\n"),
            std::string::npos);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing.value().status, 404u);
}

}  // namespace
}  // namespace oncecount::http
