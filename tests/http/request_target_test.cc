#include "http/request_target.h"

#include <gtest/gtest.h>

namespace oncecount::http {
namespace {

RequestTarget Ok(std::string_view target) {
  auto r = ParseRequestTarget(target);
  if (auto* e = std::get_if<HttpError>(&r)) {
    ADD_FAILURE() << target << ": " << e->message;
    return {};
  }
  return std::get<RequestTarget>(r);
}

HttpError Err(std::string_view target) {
  auto r = ParseRequestTarget(target);
  if (auto* e = std::get_if<HttpError>(&r)) return *e;
  ADD_FAILURE() << target << " was accepted";
  return {};
}

TEST(PercentDecode, DecodesEscapesOfEitherCase) {
  EXPECT_EQ(PercentDecode("a%2Fb%2fc", false), "a/b/c");
  EXPECT_EQ(PercentDecode("z%C3%A4hler", false), "zähler");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
}

TEST(PercentDecode, RefusesMalformedEscapesAndNul) {
  for (const char* bad : {"%", "%4", "a%G1", "%zz", "%00", "x%"}) {
    EXPECT_EQ(PercentDecode(bad, false), std::nullopt) << bad;
  }
}

TEST(ParseRequestTarget, SplitsTheDecodedPathIntoSegments) {
  EXPECT_EQ(Ok("/v1/counters/likes%3Apost%2F42").segments,
            (std::vector<std::string>{"v1", "counters", "likes:post/42"}));
  EXPECT_TRUE(Ok("/").segments.empty());
  EXPECT_EQ(Ok("/healthz/").segments, (std::vector<std::string>{"healthz"}));
  EXPECT_EQ(Ok("//x").segments, (std::vector<std::string>{"", "x"}));
}

TEST(ParseRequestTarget, DecodesTheQuery) {
  const RequestTarget t = Ok("/v1/counters?prefix=ad+clicks%2F&limit=5&after=");
  EXPECT_EQ(t.query.at("prefix"), "ad clicks/");
  EXPECT_EQ(t.query.at("limit"), "5");
  EXPECT_EQ(t.query.at("after"), "");
  EXPECT_TRUE(Ok("/v1/counters?&&").query.empty());
}

// Regression: these decoded to names that are not UTF-8, answered 404 with the raw
// bytes inside the JSON message.
TEST(ParseRequestTarget, RejectsWhatIsNotUtf8OnceDecodedWithA400) {
  for (const char* target :
       {"/v1/counters/%C0%AF", "/v1/counters/%FF%FE", "/v1/counters/%F4%90%80%80",
        "/v1/counters/\xFF", "/v1/counters/%ED%A0%80", "/v1/counters?prefix=%C3",
        "/v1/counters?after=%E2%82"}) {
    const HttpError e = Err(target);
    EXPECT_EQ(e.status, 400) << target;
    EXPECT_NE(e.message.find("UTF-8"), std::string::npos) << e.message;
  }
  EXPECT_EQ(Ok("/v1/counters/z%C3%A4hler%F0%9F%91%8D").segments.back(), "zähler👍");
}

TEST(ParseRequestTarget, RejectsMalformedTargetsWithA400NamingTheProblem) {
  EXPECT_EQ(Err("").status, 400);
  EXPECT_EQ(Err("v1/stats").status, 400);
  EXPECT_NE(Err("http://host/v1/stats").message.find("starting with /"), std::string::npos);
  const HttpError bad_path = Err("/v1/counters/a%2");
  EXPECT_EQ(bad_path.code, "bad_request");
  EXPECT_NE(bad_path.message.find("a%2"), std::string::npos) << bad_path.message;
  EXPECT_NE(Err("/v1/counters?prefix=%ZZ").message.find("prefix=%ZZ"), std::string::npos);
  EXPECT_NE(Err("/v1/counters?limit=1&limit=2").message.find("repeated"), std::string::npos);
  EXPECT_EQ(Err("/v1/counters/%00").status, 400);
}

}  // namespace
}  // namespace oncecount::http
