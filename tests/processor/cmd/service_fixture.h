// ServiceFixture: end-to-end tests of `oncecount serve` as real processes against
// an embedded Kafka cluster over loopback — `dev-kafka` as a child process, or (for
// tests that inject broker faults) a cluster hosted by the test process itself.
// It starts serve instances, injects workloads, verifies counters and, when a test
// fails, prints the tail of every process's log.
//
// ONCECOUNT_TEST_SCALE (default 1) scales the number of events, so that the
// sanitizer build runs the same scenarios on a smaller stream.
//
// Test code only.
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka_mock.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "http/client.h"
#include "processor/cmd/inject.h"
#include "processor/cmd/verify.h"
#include "processor/kafka/embedded_cluster.h"
#include "tests/processor/cmd/child_process.h"

namespace oncecount::cmd {

using namespace std::chrono_literals;

inline uint64_t Scaled(uint64_t events) {
  const char* scale = std::getenv("ONCECOUNT_TEST_SCALE");
  const double s = scale ? std::atof(scale) : 1.0;
  return std::max<uint64_t>(1000, static_cast<uint64_t>(static_cast<double>(events) * s));
}

// A top-level number of inject's truth file ("events", "duplicates", "malformed").
inline int64_t TruthField(const std::string& truth_file, const std::string& field) {
  const std::string json = testing::ReadFile(truth_file);
  const std::string key = "\"" + field + "\":";
  const size_t at = json.rfind(key);
  return at == std::string::npos ? -1 : std::stoll(json.substr(at + key.size()));
}

// The body of GET url+target, or "" when the request failed.
inline std::string Get(const std::string& url, const std::string& target) {
  auto got = http::HttpGet(url, target, 10s);
  if (auto* r = (got.ok() ? &got.value() : nullptr)) return r->body;
  return "";
}

// What a test injects; the defaults are the service tests' usual workload.
struct Workload {
  uint64_t events = 1000;
  double rate = 0;  // events per second; 0: as fast as possible
  uint64_t seed = 7;
  uint64_t first_seq = 0;
  double malformed_rate = 0;
  double duplicate_rate = 0.1;
};

class ServiceFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "serve-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    StartCluster();
  }

  // dev-kafka as a child process, 8 partitions.
  virtual void StartCluster() {
    kafka_ = testing::ChildProcess({ONCECOUNT_BINARY, "dev-kafka", "--partitions", "8"}, {},
                                   dir_ + "/dev-kafka.log");
    bootstrap_ = kafka_.NextLine(30s);
    ASSERT_EQ(bootstrap_.rfind("127.0.0.1:", 0), 0u) << "dev-kafka said: " << bootstrap_;
  }

  // A cluster hosted by the test process, so that the test can inject faults.
  void StartClusterInProcess(int brokers) {
    auto started = kafka::EmbeddedCluster::Start(
        brokers,
        {{"events", 8}, {"events.dlq", 8}, {"events.changelog", 8}, {"events.members", 1}});
    ASSERT_TRUE(started.ok());
    cluster_ = std::move(started).value();
    bootstrap_ = cluster_->bootstrap_servers();
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        if (entry.path().extension() == ".log") {
          std::string log = testing::ReadFile(entry.path());
          if (log.size() > 6000) log = "..." + log.substr(log.size() - 6000);
          std::cerr << "---- " << entry.path() << "\n" << log << "\n";
        }
      }
    }
  }

  // Starts `serve` as instance `name`; returns the process and its API URL.
  // `processing` goes into the config file's processing section.
  std::pair<testing::ChildProcess, std::string> Serve(
      const std::string& name, const std::vector<std::string>& env = {},
      const std::string& processing = "  commit_interval_ms: 100\n") {
    testing::ChildProcess p = SpawnServe(name, env, processing);
    std::string url = p.NextLine(60s);
    EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << "serve said: " << url;
    return {std::move(p), url};
  }

  // Starts `serve` as instance `name` without waiting for its URL; its log is
  // dir_/<name>.log.
  testing::ChildProcess SpawnServe(const std::string& name,
                                   const std::vector<std::string>& env = {},
                                   const std::string& processing = "  commit_interval_ms: 100\n") {
    const std::string config = dir_ + "/" + name + ".yaml";
    // Fast failover, under the start-up check: 2000 + 1000 + 500 < 6000 (config.cc).
    std::ofstream(config) << "kafka:\n"
                          << "  bootstrap_servers: " << bootstrap_ << "\n"
                          << "  transaction_timeout_ms: 2000\n"
                          << "  transaction_abort_interval_ms: 1000\n"
                          << "  properties:\n"
                          << "    session.timeout.ms: \"6000\"\n"
                          << "    heartbeat.interval.ms: \"500\"\n"
                          << "processing:\n"
                          << processing << "dedup:\n  expected_rate: 2000\n  window_ms: 30000\n"
                          << "http:\n  listen: 127.0.0.1:0\n"
                          << "state:\n  dir: " << dir_ << "/" << name << "-state\n";
    return testing::ChildProcess(
        {ONCECOUNT_BINARY, "serve", "--config", config, "--instance-id", name}, env,
        dir_ + "/" + name + ".log");
  }

  int Inject(const Workload& w, const std::string& truth) {
    InjectOptions o;
    o.bootstrap = bootstrap_;
    o.workload.events = w.events;
    o.workload.counters = 1000;
    o.workload.clients = 200;
    o.workload.duplicate_rate = w.duplicate_rate;
    o.workload.max_retry_delay_ms = 2000;
    o.workload.malformed_rate = w.malformed_rate;
    o.workload.seed = w.seed;
    o.workload.first_seq = w.first_seq;
    o.rate = w.rate;
    o.truth_file = truth;
    std::ostringstream err;
    return RunInject(o, err);
  }

  int Inject(uint64_t events, double rate, const std::string& truth, uint64_t seed = 7,
             double malformed_rate = 0) {
    Workload w;
    w.events = events;
    w.rate = rate;
    w.seed = seed;
    w.malformed_rate = malformed_rate;
    return Inject(w, truth);
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

  // Polls `done` every 100 ms until it holds or `timeout` passes.
  static bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return done();
  }

  std::string dir_;
  testing::ChildProcess kafka_;
  std::unique_ptr<kafka::EmbeddedCluster> cluster_;
  std::string bootstrap_;
};

}  // namespace oncecount::cmd
