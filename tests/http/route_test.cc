#include "http/route.h"

#include <gtest/gtest.h>

namespace oncecount::http {
namespace {

std::variant<Route, HttpError> Match(std::string_view method, std::string_view target) {
  auto parsed = ParseRequestTarget(target);
  if (auto* e = std::get_if<HttpError>(&parsed)) return *e;
  return MatchRoute(method, std::get<RequestTarget>(parsed));
}

Route Ok(std::string_view method, std::string_view target) {
  auto r = Match(method, target);
  if (auto* e = std::get_if<HttpError>(&r)) {
    ADD_FAILURE() << target << ": " << e->status << " " << e->message;
    return {};
  }
  return std::get<Route>(r);
}

HttpError Err(std::string_view method, std::string_view target) {
  auto r = Match(method, target);
  if (auto* e = std::get_if<HttpError>(&r)) return *e;
  ADD_FAILURE() << target << " matched";
  return {};
}

TEST(MatchRoute, FindsEveryEndpointOfTheSpec) {
  EXPECT_EQ(Ok("GET", "/").endpoint, Endpoint::kDashboard);
  EXPECT_EQ(Ok("GET", "/healthz").endpoint, Endpoint::kHealthz);
  EXPECT_EQ(Ok("GET", "/readyz").endpoint, Endpoint::kReadyz);
  EXPECT_EQ(Ok("GET", "/metrics").endpoint, Endpoint::kMetrics);
  EXPECT_EQ(Ok("GET", "/v1/stats").endpoint, Endpoint::kStats);
  EXPECT_EQ(Ok("HEAD", "/v1/stats").endpoint, Endpoint::kStats);
  const Route counter = Ok("GET", "/v1/counters/ad%20clicks%2Fus");
  EXPECT_EQ(counter.endpoint, Endpoint::kCounter);
  EXPECT_EQ(counter.name, "ad clicks/us");
  const Route shard = Ok("GET", "/v1/shards/7");
  EXPECT_EQ(shard.endpoint, Endpoint::kShard);
  EXPECT_EQ(shard.partition.value(), 7);
  const Route history = Ok("GET", "/v1/history");
  EXPECT_EQ(history.endpoint, Endpoint::kHistory);
  EXPECT_EQ(history.since_ms, 0);
  EXPECT_EQ(Ok("GET", "/v1/history?since=1700000000000").since_ms, 1'700'000'000'000);
}

TEST(MatchRoute, ReadsTheCounterListParametersWithDefaults) {
  const Route all = Ok("GET", "/v1/counters");
  EXPECT_EQ(all.endpoint, Endpoint::kCounterList);
  EXPECT_EQ(all.limit, kDefaultListLimit);
  EXPECT_EQ(all.prefix, "");
  EXPECT_FALSE(all.after.has_value());
  const Route page = Ok("GET", "/v1/counters?prefix=likes%3A&limit=1000&after=likes%3A9");
  EXPECT_EQ(page.prefix, "likes:");
  EXPECT_EQ(page.limit, 1000);
  EXPECT_EQ(page.after, "likes:9");
  EXPECT_EQ(all.order, CounterOrder::kName);
  EXPECT_EQ(Ok("GET", "/v1/counters?order=recent&limit=20").order, CounterOrder::kRecent);
  EXPECT_EQ(Ok("GET", "/v1/counters?order=name").order, CounterOrder::kName);
}

TEST(MatchRoute, AnswersUnknownPathsWith404) {
  for (const char* target :
       {"/v2/stats", "/v1/counters/a/b", "/v1/counters//", "/metrics/x", "/v1", "/favicon.ico"}) {
    const HttpError e = Err("GET", target);
    EXPECT_EQ(e.status, 404) << target;
    EXPECT_EQ(e.code, "not_found") << target;
  }
}

TEST(MatchRoute, AnswersOtherMethodsWith405AndTheAllowedOnes) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    const HttpError e = Err(method, "/v1/counters/x");
    EXPECT_EQ(e.status, 405) << method;
    EXPECT_EQ(e.code, "method_not_allowed");
    EXPECT_EQ(e.allow, "GET, HEAD");
  }
  EXPECT_EQ(Err("POST", "/nowhere").status, 404);
}

TEST(MatchRoute, RejectsBadParametersWith400NamingThem) {
  for (const char* limit : {"0", "1001", "-1", "ten", "5x", ""}) {
    const HttpError e = Err("GET", std::string("/v1/counters?limit=") + limit);
    EXPECT_EQ(e.status, 400) << limit;
    EXPECT_NE(e.message.find("limit"), std::string::npos) << e.message;
  }
  EXPECT_NE(Err("GET", "/v1/counters?sort=desc").message.find("sort"), std::string::npos);
  EXPECT_NE(Err("GET", "/v1/counters?order=largest").message.find("order"), std::string::npos);
  EXPECT_NE(Err("GET", "/v1/counters?order=recent&after=x").message.find("after"),
            std::string::npos);
  for (const char* since : {"-1", "soon", "1e3", "", "9223372036854775808"}) {
    const HttpError e = Err("GET", std::string("/v1/history?since=") + since);
    EXPECT_EQ(e.status, 400) << since;
    EXPECT_NE(e.message.find("since"), std::string::npos) << e.message;
  }
  EXPECT_NE(Err("GET", "/v1/history?from=1").message.find("from"), std::string::npos);
  for (const char* p : {"-1", "x", "2147483648", "1.5"}) {
    const HttpError e = Err("GET", std::string("/v1/shards/") + p);
    EXPECT_EQ(e.status, 400) << p;
    EXPECT_NE(e.message.find("partition"), std::string::npos);
  }
}

// Regression: the resources without parameters ignored any, so /v1/stats?partition=3
// answered for every shard.
TEST(MatchRoute, RejectsAParameterOnAResourceThatTakesNone) {
  for (const char* target :
       {"/v1/stats?partition=3", "/v1/counters/likes?limit=5", "/v1/shards/1?verbose",
        "/readyz?verbose=1", "/healthz?x=1", "/metrics?name=oncecount_up", "/?theme=dark"}) {
    const HttpError e = Err("GET", target);
    EXPECT_EQ(e.status, 400) << target;
    EXPECT_NE(e.message.find("takes none"), std::string::npos) << target << ": " << e.message;
  }
  EXPECT_EQ(Ok("GET", "/v1/stats").endpoint, Endpoint::kStats);
}

TEST(ErrorBody, IsTheSpecsJsonErrorObject) {
  EXPECT_EQ(ErrorBody({404, "not_found", "no such counter: \"a\""}),
            R"({"error":"not_found","message":"no such counter: \"a\""})");
}

}  // namespace
}  // namespace oncecount::http
