// `oncecount serve` as real processes against `oncecount dev-kafka` over loopback:
// exact counts despite retries, the over-count without dedup, SIGKILL at random
// moments, and a second instance joining and leaving (SPEC §2, guarantees 1-3).
//
// ONCECOUNT_TEST_SCALE (default 1) scales the number of events, so that the
// sanitizer build runs the same scenarios on a smaller stream.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "processor/cmd/inject.h"
#include "processor/cmd/verify.h"
#include "tests/processor/cmd/child_process.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;
using oncecount::testing::ChildProcess;
using oncecount::testing::ReadFile;

uint64_t Scaled(uint64_t events) {
  const char* scale = std::getenv("ONCECOUNT_TEST_SCALE");
  const double s = scale ? std::atof(scale) : 1.0;
  return std::max<uint64_t>(1000, static_cast<uint64_t>(static_cast<double>(events) * s));
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "serve-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    kafka_ = ChildProcess({ONCECOUNT_BINARY, "dev-kafka", "--partitions", "8"}, {},
                          dir_ + "/dev-kafka.log");
    bootstrap_ = kafka_.NextLine(30s);
    ASSERT_EQ(bootstrap_.rfind("127.0.0.1:", 0), 0u) << "dev-kafka said: " << bootstrap_;
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        if (entry.path().extension() == ".log") {
          std::string log = ReadFile(entry.path());
          if (log.size() > 6000) log = "..." + log.substr(log.size() - 6000);
          std::cerr << "---- " << entry.path() << "\n" << log << "\n";
        }
      }
    }
  }

  // Starts `serve` as instance `name`; returns the process and its API URL.
  std::pair<ChildProcess, std::string> Serve(const std::string& name,
                                             const std::vector<std::string>& env = {}) {
    const std::string config = dir_ + "/" + name + ".yaml";
    std::ofstream(config) << "kafka:\n"
                          << "  bootstrap_servers: " << bootstrap_ << "\n"
                          << "  properties:\n"
                          << "    session.timeout.ms: \"6000\"\n"
                          << "    heartbeat.interval.ms: \"500\"\n"
                          << "processing:\n  commit_interval_ms: 100\n"
                          << "dedup:\n  expected_rate: 2000\n  window_ms: 30000\n"
                          << "http:\n  listen: 127.0.0.1:0\n";
    ChildProcess p({ONCECOUNT_BINARY, "serve", "--config", config, "--instance-id", name}, env,
                   dir_ + "/" + name + ".log");
    std::string url = p.NextLine(60s);
    EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << "serve said: " << url;
    return {std::move(p), url};
  }

  int Inject(uint64_t events, double rate, const std::string& truth, uint64_t seed = 7) {
    InjectOptions o;
    o.bootstrap = bootstrap_;
    o.workload.events = events;
    o.workload.counters = 1000;
    o.workload.clients = 200;
    o.workload.duplicate_rate = 0.1;
    o.workload.max_retry_delay_ms = 2000;
    o.workload.seed = seed;
    o.rate = rate;
    o.truth_file = truth;
    std::ostringstream err;
    return RunInject(o, err);
  }

  int Verify(const std::string& truth, const std::string& url, double timeout_s,
             std::string* report = nullptr) {
    VerifyOptions o;
    o.truth_file = truth;
    o.api_url = url;
    o.timeout_s = timeout_s;
    std::ostringstream out, err;
    const int code = RunVerify(o, out, err);
    if (report) *report = out.str() + err.str();
    return code;
  }

  std::string dir_;
  ChildProcess kafka_;
  std::string bootstrap_;
};

TEST_F(ServeTest, CountsEveryEventExactlyOnceDespiteRetries) {
  auto [serve, url] = Serve("a");
  const std::string truth = dir_ + "/truth.json";
  ASSERT_EQ(Inject(Scaled(200000), 0, truth), 0);
  std::string report;
  EXPECT_EQ(Verify(truth, url, 120, &report), 0) << report;
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0);
}

TEST_F(ServeTest, OverCountsWithoutDedupWhichShowsTheRetriesAreReal) {
  auto [serve, url] = Serve("a", {"ONCECOUNT_DEDUP_MODE=none"});
  const std::string truth = dir_ + "/truth.json";
  ASSERT_EQ(Inject(Scaled(20000), 0, truth), 0);
  std::string report;
  EXPECT_EQ(Verify(truth, url, 15, &report), 1) << report;
  EXPECT_NE(report.find("over"), std::string::npos) << report;
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0);
}

TEST_F(ServeTest, LosesNothingAndCountsNothingTwiceWhenKilledAtRandomMoments) {
  auto started = Serve("a");
  ChildProcess serve = std::move(started.first);
  const std::string truth = dir_ + "/truth.json";
  // About 25 s of input, so that five kills and restarts land inside it.
  const uint64_t events = Scaled(100000);
  int injected = -1;
  std::thread inject([&] { injected = Inject(events, static_cast<double>(events) / 25.0, truth); });
  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  std::string url;
  for (int kill = 0; kill < 5; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng() % 3000));
    serve.Signal(SIGKILL);
    EXPECT_EQ(serve.Wait(10s), -2);
    auto restarted = Serve("a");
    serve = std::move(restarted.first);
    url = restarted.second;
  }
  inject.join();
  ASSERT_EQ(injected, 0);
  std::string report;
  EXPECT_EQ(Verify(truth, url, 180, &report), 0) << report;
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(30s), 0);
}

TEST_F(ServeTest, StaysExactWhileASecondInstanceJoinsAndLeaves) {
  auto [first, first_url] = Serve("a");
  const std::string truth = dir_ + "/truth.json";
  const uint64_t events = Scaled(100000);
  int injected = -1;
  std::thread inject([&] { injected = Inject(events, static_cast<double>(events) / 20.0, truth); });
  std::this_thread::sleep_for(4s);
  auto [second, second_url] = Serve("b");
  std::this_thread::sleep_for(8s);
  second.Signal(SIGTERM);
  EXPECT_EQ(second.Wait(60s), 0);
  inject.join();
  ASSERT_EQ(injected, 0);
  std::string report;
  EXPECT_EQ(Verify(truth, first_url, 180, &report), 0) << report;
  first.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(30s), 0);
}

}  // namespace
}  // namespace oncecount::cmd
