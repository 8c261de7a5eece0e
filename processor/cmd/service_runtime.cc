#include "processor/cmd/service_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <ostream>

#include "http/api.h"
#include "http/server.h"
#include "processor/kafka/rdkafka_clients.h"
#include "processor/kafka/topics.h"

namespace oncecount::cmd {

struct ServiceRuntime::Http {
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::shared_ptr<http::Server> server;
};

namespace {

filter::DedupSpec DedupSpecOf(const config::DedupConfig& d) {
  filter::DedupSpec spec;
  spec.mode = d.mode;
  spec.check = d.check;
  spec.expected_rate = d.expected_rate;
  // The filter measures time on the shard's clock (the largest record timestamp
  // applied), which producers' clock disagreement can move ahead of a retry's own
  // timestamp by up to the tolerance.
  spec.window = filter::Millis{d.window_ms + d.timestamp_tolerance_ms};
  spec.target_fpp = d.target_fpp;
  spec.adaptive = d.adaptive;
  spec.constituent = d.filter == config::ConstituentFilter::kGaussian
                         ? filter::Constituent::kGaussian
                         : filter::Constituent::kBlockedBloom;
  spec.cell_bits = static_cast<uint32_t>(d.cell_bits);
  return spec;
}

// Names show in top -H, perf and gdb (15 characters at most).
void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace

std::string DefaultInstanceId(const std::string& http_listen, uint64_t random) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string id = host[0] ? host : "oncecount";
  const size_t colon = http_listen.rfind(':');
  const std::string address = colon == std::string::npos ? "" : http_listen.substr(0, colon);
  const std::string port = colon == std::string::npos ? "0" : http_listen.substr(colon + 1);
  if (port == "0") {
    // Any free port: two instances of one host would share "<host>-0". A random
    // suffix keeps them apart (the id is then not stable across restarts).
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random));
    return id + "-" + suffix;
  }
  // Two live instances cannot listen on one address and port; on different
  // addresses of one host they can, so a specific address is part of the id.
  if (!address.empty() && address != "0.0.0.0" && address != "[::]") {
    id += "-";
    for (char c : address) {
      if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
        id += c;
      } else if (c == '.' || c == ':') {
        id += '_';
      }
    }
  }
  return id + "-" + port;
}

namespace {

// Waits until the topics the service needs exist, so that an instance started beside
// the job that creates them (Kubernetes, Compose) waits with a log line instead of
// exiting into a restart loop. The processor and the replicator check them again.
std::string AwaitServiceTopics(const RuntimeOptions& o, kafka::Clients& clients) {
  const config::KafkaConfig& k = o.config.kafka;
  const std::string hint = "deploy/create-topics.sh or docs/operations.md create it";
  std::vector<kafka::RequiredTopic> topics = {
      {k.input_topic, hint}, {k.EffectiveDlqTopic(), hint}, {k.ChangelogTopic(), hint}};
  if (o.config.processing.standby_replicas > 0) topics.push_back({k.MembersTopic(), hint});
  kafka::TopicWait wait;
  wait.stop_requested = o.stop_requested;
  wait.log = o.log.Child("topics");
  auto found = kafka::AwaitTopics(clients, topics, std::chrono::milliseconds(10000), wait);
  if (found) return {};
  const bool stopped = o.stop_requested && o.stop_requested();
  return (stopped ? std::string(kStoppedWhileWaiting) : std::string()) + found.error();
}

}  // namespace

std::variant<std::unique_ptr<ServiceRuntime>, std::string> ServiceRuntime::Start(
    RuntimeOptions options) {
  const config::Config& c = options.config;
  std::unique_ptr<ServiceRuntime> rt(new ServiceRuntime());
  rt->log_ = options.log;
  rt->clients_ = kafka::MakeRdKafkaClients(options.bootstrap_servers, c.kafka.properties);
  service::ProcessorOptions po;
  po.clients = rt->clients_.get();
  po.transaction_timeout = std::chrono::milliseconds(c.kafka.transaction_timeout_ms);
  po.input_topic = c.kafka.input_topic;
  po.dlq_topic = c.kafka.EffectiveDlqTopic();
  po.changelog_topic = c.kafka.ChangelogTopic();
  po.group_id = c.kafka.group_id;
  po.instance_id = options.instance_id;
  po.commit_interval = std::chrono::milliseconds(c.processing.commit_interval_ms);
  po.dedup = DedupSpecOf(c.dedup);
  po.max_clock_ahead = std::chrono::milliseconds(c.dedup.timestamp_tolerance_ms);
  po.changelog_retention_bytes = options.changelog_retention_bytes;
  if (options.local_checkpoints) {
    std::error_code error;
    std::filesystem::create_directories(c.state.dir, error);
    if (error) return "state.dir: cannot create " + c.state.dir + ": " + error.message();
    po.checkpoint_dir = c.state.dir;
  }
  po.log = options.log.Child("processor");
  po.metrics = &rt->metrics_;
  const unsigned threads = c.processing.threads > 0
                               ? static_cast<unsigned>(c.processing.threads)
                               : std::max(1u, std::thread::hardware_concurrency());
  std::vector<service::ShardWorker*> workers;
  for (unsigned i = 0; i < threads; ++i) {
    service::WorkerOptions wo;
    wo.input_topic = c.kafka.input_topic;
    wo.target_fpp = c.dedup.target_fpp;
    wo.now_ms = [] { return base::DefaultClock().WallMs(); };
    wo.log = options.log.Child("worker " + std::to_string(i));
    wo.checkpoint_dir = po.checkpoint_dir;
    wo.changelog_topic = po.changelog_topic;
    rt->workers_.push_back(std::make_unique<service::ShardWorker>(std::move(wo)));
    workers.push_back(rt->workers_.back().get());
    rt->metrics_.AddGaugeFunction(
        "oncecount_worker_mailbox_depth",
        "Commands waiting in a shard worker's mailbox (at most 64): a full mailbox makes the "
        "consumer loop wait for the worker.",
        "worker=\"" + std::to_string(i) + "\"",
        [w = workers.back()] { return static_cast<double>(w->MailboxDepth()); });
  }
  rt->http_ = std::make_unique<Http>();
  http::ApiOptions api;
  api.instance_id = options.instance_id;
  api.input_topic = c.kafka.input_topic;
  api.target_fpp = c.dedup.target_fpp;
  api.metrics = &rt->metrics_;
  auto listening = http::Server::Listen(rt->http_->io, c.http.listen,
                                        http::MakeApiHandler(rt->board_, std::move(api)));
  if (auto* error = std::get_if<std::string>(&listening)) return *error;
  rt->http_->server = std::get<std::shared_ptr<http::Server>>(listening);
  const auto endpoint = rt->http_->server->local_endpoint();
  rt->url_ = "http://" + endpoint.address().to_string() + ":" + std::to_string(endpoint.port());

  // Probes are answered from here on (/readyz: not ready), also while topics are
  // awaited.
  ServiceRuntime* self = rt.get();
  rt->http_thread_ = std::thread([self] {
    NameThisThread("oc-http");
    self->http_->io.run();
  });
  if (std::string e = AwaitServiceTopics(options, *rt->clients_); !e.empty()) return e;

  replica::ReplicatorOptions ro;
  ro.clients = rt->clients_.get();
  ro.changelog_topic = po.changelog_topic;
  if (c.processing.standby_replicas > 0) ro.members_topic = c.kafka.MembersTopic();
  ro.group_id = c.kafka.group_id;
  ro.instance_id = options.instance_id;
  ro.api_url = rt->url_;
  ro.standby_replicas = c.processing.standby_replicas;
  ro.dedup = po.dedup;
  ro.log = options.log.Child("replicas");
  ro.metrics = &rt->metrics_;
  auto replicator = replica::Replicator::Create(std::move(ro), rt->board_);
  if (auto* error = std::get_if<std::string>(&replicator)) return *error;
  rt->replicator_ = std::move(std::get<std::unique_ptr<replica::Replicator>>(replicator));

  auto made = service::Processor::Create(std::move(po), rt->board_, workers, rt->replicator_.get());
  if (auto* error = std::get_if<std::string>(&made)) return *error;
  rt->processor_ = std::move(std::get<std::unique_ptr<service::Processor>>(made));

  for (size_t i = 0; i < rt->workers_.size(); ++i) {
    rt->worker_threads_.emplace_back([w = rt->workers_[i].get(), i] {
      NameThisThread("oc-worker-" + std::to_string(i));
      w->Run();
    });
  }
  rt->replicator_thread_ = std::thread([self] {
    NameThisThread("oc-replicas");
    const std::string error = self->replicator_->Run();
    if (!error.empty()) self->Log("replicas stopped: " + error);
  });
  rt->processor_thread_ = std::thread([self] {
    NameThisThread("oc-processor");
    self->processor_error_ = self->processor_->Run();
    self->processor_done_.store(true);
  });
  return rt;
}

std::string ServiceRuntime::Stop() {
  if (stopped_) return processor_error_;
  stopped_ = true;
  if (processor_) processor_->Stop();
  if (processor_thread_.joinable()) processor_thread_.join();
  for (auto& worker : workers_) worker->Close();
  for (std::thread& t : worker_threads_) t.join();
  // After the processor: its revocations hand the shards back to the replicator.
  if (replicator_) replicator_->Stop();
  if (replicator_thread_.joinable()) replicator_thread_.join();
  if (http_) {
    if (http_->server) http_->server->Stop();
    http_->work.reset();
    http_->io.stop();
  }
  if (http_thread_.joinable()) http_thread_.join();
  return processor_error_;
}

// Waits for SIGTERM/SIGINT (blocked by main) or for `done` to turn true.
int WaitForStop(const std::function<bool()>& done) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  const timespec tick{0, 200'000'000};
  while (!done()) {
    const int signal_number = sigtimedwait(&stop, nullptr, &tick);
    if (signal_number > 0) return signal_number;
  }
  return 0;
}

bool StopSignalPending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

ServiceRuntime::~ServiceRuntime() {
  Stop();
}

}  // namespace oncecount::cmd
