// `verify` against a live HTTP server (the project's own, on loopback) that serves a
// paginated counter list the way SPEC §4 describes it.
#include "processor/cmd/verify.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "http/route.h"
#include "http/server.h"
#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;

// Serves GET /v1/counters from a map, and GET /v1/stats with how many messages its
// shards processed, both of which the test can change while verify polls.
class FakeService {
 public:
  FakeService() {
    auto listening = http::Server::Listen(io_, "127.0.0.1:0",
                                          [this](const http::Request& r) { return Serve(r); });
    server_ = listening.value();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeService() {
    server_->Stop();
    io_.stop();
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(server_->local_endpoint().port());
  }
  void Set(std::map<std::string, int64_t> counters) {
    std::lock_guard lock(mu_);
    counters_ = std::move(counters);
  }
  void SetProgress(uint64_t processed, bool complete) {
    std::lock_guard lock(mu_);
    processed_ = processed;
    complete_ = complete;
  }
  int requests() const { return requests_.load(); }

 private:
  http::Response Serve(const http::Request& r) {
    ++requests_;
    auto target = http::ParseRequestTarget(r.target);
    auto route = http::MatchRoute(r.method, std::get<http::RequestTarget>(target));
    const auto& rt = std::get<http::Route>(route);
    std::lock_guard lock(mu_);
    json::JsonWriter j;
    if (rt.endpoint == http::Endpoint::kStats) {
      j.BeginObject().Key("complete").Bool(complete_).Key("totals").BeginObject();
      j.Key("events_applied").Uint(processed_).Key("duplicates_dropped").Uint(0);
      j.Key("dead_lettered").Uint(0).EndObject().EndObject();
      return {200, "application/json", j.str(), ""};
    }
    j.BeginObject().Key("counters").BeginArray();
    auto it = rt.after ? counters_.upper_bound(*rt.after) : counters_.begin();
    int n = 0;
    for (; it != counters_.end() && n < rt.limit; ++it, ++n) {
      j.BeginObject().Key("counter").String(it->first).Key("value").Int(it->second).EndObject();
    }
    j.EndArray().Key("next");
    if (it != counters_.end() && n > 0) {
      j.String(std::prev(it)->first);
    } else {
      j.Null();
    }
    j.EndObject();
    return {200, "application/json", j.str(), ""};
  }

  boost::asio::io_context io_;
  std::shared_ptr<http::Server> server_;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, int64_t> counters_;
  uint64_t processed_ = 3;  // what WriteTruth says inject wrote
  bool complete_ = true;
  std::atomic<int> requests_{0};
};

std::map<std::string, int64_t> ManyCounters(int n) {
  std::map<std::string, int64_t> m;
  for (int i = 0; i < n; ++i) m["counter/" + std::to_string(i) + " ä"] = i * 3 - 7;
  return m;
}

std::string WriteTruth(const std::map<std::string, int64_t>& counters) {
  json::JsonWriter j;
  j.BeginObject().Key("counters").BeginObject();
  for (const auto& [k, v] : counters) j.Key(k).Int(v);
  j.EndObject()
      .Key("events")
      .Uint(1)
      .Key("duplicates")
      .Uint(1)
      .Key("malformed")
      .Uint(1)
      .EndObject();
  // One file per test: ctest runs the tests of this file in parallel processes.
  const std::string path = ::testing::TempDir() + "verify-truth-" + std::to_string(getpid()) + "-" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  std::ofstream(path) << j.str();
  return path;
}

TEST(Verify, ReportsExactWhenEveryCounterMatchesAcrossPages) {
  const auto counters = ManyCounters(2500);  // three pages of 1000
  FakeService service;
  service.Set(counters);
  VerifyOptions o{WriteTruth(counters), service.url(), 10, 50ms};
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify(o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("2500 exact, 0 over, 0 under"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"ok\":true"), std::string::npos);
  EXPECT_GE(service.requests(), 3);
}

TEST(Verify, ReportsOverAndUnderCountsAndFailsAtTheDeadline) {
  auto truth = ManyCounters(10);
  FakeService service;
  auto served = truth;
  served["counter/1 ä"] += 2;   // over
  served["counter/2 ä"] -= 1;   // under
  served.erase("counter/3 ä");  // never seen: under
  served["unexpected"] = 5;     // not in the truth: over
  service.Set(served);
  VerifyOptions o{WriteTruth(truth), service.url(), 0.3, 50ms};
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify(o, out, err), 1);
  EXPECT_NE(out.str().find("7 exact, 2 over, 2 under"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("over  counter/1 ä: expected -4, served -2"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("under counter/3 ä: expected 2, served 0"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\"ok\":false"), std::string::npos);
}

TEST(Verify, WaitsForTheServiceToCatchUp) {
  const auto truth = ManyCounters(5);
  FakeService service;
  service.Set({});  // nothing applied yet
  std::thread catch_up([&] {
    std::this_thread::sleep_for(300ms);
    service.Set(truth);
  });
  VerifyOptions o{WriteTruth(truth), service.url(), 20, 50ms};
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify(o, out, err), 0) << out.str() << err.str();
  catch_up.join();
}

// Regression: verify stopped at the first poll where every counter matched, though the
// service had not read the input to its end: a double count of a retry still unread
// (retries come last) went unseen.
TEST(Verify, ComparesOnlyOnceTheServiceHasProcessedEveryMessageInjectWrote) {
  const auto truth = ManyCounters(5);
  FakeService service;
  service.Set(truth);
  service.SetProgress(2, true);  // one of the 3 messages still to read
  {
    VerifyOptions o{WriteTruth(truth), service.url(), 0.3, 50ms};
    std::ostringstream out, err;
    EXPECT_EQ(RunVerify(o, out, err), 1) << out.str();
    EXPECT_NE(err.str().find("had not caught up by the deadline: 2 of 3 messages processed"),
              std::string::npos)
        << err.str();
  }
  service.SetProgress(3, false);  // read, but a shard is not held
  {
    VerifyOptions o{WriteTruth(truth), service.url(), 0.3, 50ms};
    std::ostringstream out, err;
    EXPECT_EQ(RunVerify(o, out, err), 1);
    EXPECT_NE(err.str().find("does not hold every shard"), std::string::npos) << err.str();
  }
  std::thread catch_up([&] {
    std::this_thread::sleep_for(300ms);
    service.SetProgress(3, true);
  });
  VerifyOptions o{WriteTruth(truth), service.url(), 20, 50ms};
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify(o, out, err), 0) << out.str() << err.str();
  catch_up.join();
}

TEST(Verify, RejectsBadOptionsAndUnreadableTruth) {
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify({"/nonexistent.json", "http://127.0.0.1:1", 1, 50ms}, out, err), 2);
  EXPECT_NE(err.str().find("--truth"), std::string::npos);
  EXPECT_EQ(RunVerify({"/nonexistent.json", "127.0.0.1:1", 1, 50ms}, out, err), 2);
  EXPECT_NE(err.str().find("--api"), std::string::npos);
}

TEST(Verify, FailsWhenTheServiceCannotBeReached) {
  VerifyOptions o{WriteTruth(ManyCounters(1)), "http://127.0.0.1:1", 0.2, 50ms};
  std::ostringstream out, err;
  EXPECT_EQ(RunVerify(o, out, err), 1);
  EXPECT_NE(err.str().find("cannot connect"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace oncecount::cmd
