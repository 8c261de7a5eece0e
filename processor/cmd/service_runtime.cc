#include "processor/cmd/service_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <ostream>

#include "http/api.h"
#include "http/server.h"
#include "processor/cmd/broker_fencing_check.h"
#include "processor/cmd/previous_group_check.h"
#include "processor/kafka/rdkafka_clients.h"
#include "processor/kafka/topics.h"

namespace oncecount::cmd {

struct ServiceRuntime::Http {
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::shared_ptr<http::Server> server;
  // After the io_context, so destroyed before it: its timer must not outlive the
  // io_context's services (the io_context's destruction drops the handlers' copies).
  std::shared_ptr<http::HistorySampler> history_sampler;
};

namespace {

// Names show in top -H, perf and gdb (15 characters at most).
void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace

bool DefaultInstanceIdIsStable(const std::string& http_listen) {
  const size_t colon = http_listen.rfind(':');
  return colon != std::string::npos && http_listen.substr(colon + 1) != "0";
}

std::string DefaultInstanceId(const std::string& http_listen, uint64_t random) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string id = host[0] ? host : "oncecount";
  const size_t colon = http_listen.rfind(':');
  const std::string address = colon == std::string::npos ? "" : http_listen.substr(0, colon);
  const std::string port = colon == std::string::npos ? "0" : http_listen.substr(colon + 1);
  if (!DefaultInstanceIdIsStable(http_listen)) {
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
base::Status AwaitServiceTopics(const RuntimeOptions& o, kafka::Clients& clients,
                                base::StartWait wait) {
  const config::KafkaConfig& k = o.config.kafka;
  const std::string hint = "deploy/create-topics.sh or docs/operations.md create it";
  std::vector<kafka::RequiredTopic> topics = {
      {k.input_topic, hint}, {k.EffectiveDlqTopic(), hint}, {k.ChangelogTopic(), hint}};
  if (o.config.processing.standby_replicas > 0) topics.push_back({k.MembersTopic(), hint});
  wait.log = o.log.Child("topics");
  auto found = kafka::AwaitTopics(clients, topics, std::chrono::milliseconds(10000), wait);
  if (!found) return std::move(found).error();
  return {};
}

// The processor's options from the configuration; creates state.dir when the shards
// keep local checkpoints.
base::Result<service::ProcessorOptions> ProcessorOptionsOf(const RuntimeOptions& options) {
  const config::Config& c = options.config;
  service::ProcessorOptions po;
  po.transaction_timeout = std::chrono::milliseconds(c.kafka.transaction_timeout_ms);
  po.input_topic = c.kafka.input_topic;
  po.dlq_topic = c.kafka.EffectiveDlqTopic();
  po.changelog_topic = c.kafka.ChangelogTopic();
  po.group_id = c.kafka.group_id;
  po.previous_group_id = c.kafka.previous_group_id;
  po.instance_id = options.instance_id;
  if (c.kafka.static_membership && options.stable_instance_id) {
    po.group_instance_id = options.instance_id;
  } else if (c.kafka.static_membership) {
    options.log.Warn(
        "a dynamic member of the group despite kafka.static_membership: the instance id " +
        options.instance_id +
        " has a random suffix (http.listen has port 0), so a restart would not be the same "
        "member; give --instance-id to make it static");
  }
  po.leave_group_on_stop = c.kafka.leave_group_on_stop;
  po.commit_interval = std::chrono::milliseconds(c.processing.commit_interval_ms);
  po.dedup = config::DedupSpecOf(c.dedup);
  po.timestamp_tolerance = std::chrono::milliseconds(c.dedup.timestamp_tolerance_ms);
  po.late_records = c.dedup.late_records;
  po.changelog_retention_bytes = options.changelog_retention_bytes;
  if (const auto it = c.kafka.properties.find("max.poll.interval.ms");
      it != c.kafka.properties.end()) {
    const long long ms = std::strtoll(it->second.c_str(), nullptr, 10);
    if (ms > 0) po.max_poll_interval = std::chrono::milliseconds(ms);
  }
  if (options.local_checkpoints) {
    std::error_code error;
    std::filesystem::create_directories(c.state.dir, error);
    if (error) {
      return base::Error(base::Errc::kIo, "cannot create " + c.state.dir + ": " + error.message(),
                         "state.dir");
    }
    po.checkpoint_dir = c.state.dir;
  }
  po.log = options.log.Child("processor");
  return po;
}

replica::ReplicatorOptions ReplicatorOptionsOf(const RuntimeOptions& options,
                                               const service::ProcessorOptions& po) {
  const config::Config& c = options.config;
  replica::ReplicatorOptions ro;
  ro.changelog_topic = po.changelog_topic;
  if (c.processing.standby_replicas > 0) ro.members_topic = c.kafka.MembersTopic();
  ro.group_id = c.kafka.group_id;
  ro.instance_id = options.instance_id;
  ro.standby_replicas = c.processing.standby_replicas;
  ro.dedup = po.dedup;
  ro.log = options.log.Child("replicas");
  return ro;
}

}  // namespace

void ServiceRuntime::CreateWorkers(const RuntimeOptions& options,
                                   const service::ProcessorOptions& po) {
  const config::Config& c = options.config;
  const unsigned threads = c.processing.threads > 0
                               ? static_cast<unsigned>(c.processing.threads)
                               : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < threads; ++i) {
    service::WorkerOptions wo;
    wo.input_topic = c.kafka.input_topic;
    wo.target_fpp = c.dedup.target_fpp;
    wo.now_ms = [] { return base::DefaultClock().WallMs(); };
    wo.log = options.log.Child("worker " + std::to_string(i));
    wo.checkpoint_dir = po.checkpoint_dir;
    wo.changelog_topic = po.changelog_topic;
    wo.group_id = po.group_id;
    workers_.push_back(std::make_unique<service::ShardWorker>(std::move(wo)));
    metrics_.AddGaugeFunction(
        "oncecount_worker_mailbox_depth",
        "Commands waiting in a shard worker's mailbox (at most 64): a full mailbox makes the "
        "consumer loop wait for the worker.",
        "worker=\"" + std::to_string(i) + "\"",
        [w = workers_.back().get()] { return static_cast<double>(w->MailboxDepth()); });
  }
}

// Listens, and answers probes from here on (/readyz: not ready), also while topics
// are awaited.
base::Status ServiceRuntime::StartHttp(const RuntimeOptions& options) {
  const config::Config& c = options.config;
  http_ = std::make_unique<Http>();
  http::ApiOptions api;
  api.instance_id = options.instance_id;
  api.input_topic = c.kafka.input_topic;
  api.target_fpp = c.dedup.target_fpp;
  api.metrics = &metrics_;
  api.history = &history_;
  http::ServerEvents events;
  events.warn = [log = options.log](const std::string& line) { log.Warn(line); };
  events.refused = &metrics_.AddCounter(
      "oncecount_http_refused_connections_total",
      "HTTP connections answered 503 overloaded (every connection busy, or the responses "
      "waiting to be sent at their bound) or closed at once (past twice the cap).");
  events.accept_errors = &metrics_.AddCounter(
      "oncecount_http_accept_errors_total",
      "Failed accepts of HTTP connections; for want of resources (file descriptors, "
      "memory) the next accept waits 100 ms.");
  auto listening =
      http::Server::Listen(http_->io, c.http.listen, http::MakeApiHandler(board_, std::move(api)),
                           {}, std::move(events));
  if (!listening) return std::move(listening).error();
  http_->server = std::move(listening).value();
  metrics_.AddGaugeFunction("oncecount_http_connections", "Open HTTP connections.", "",
                            [server = std::weak_ptr<http::Server>(http_->server)] {
                              const auto live = server.lock();
                              return live ? static_cast<double>(live->open_connections()) : 0.0;
                            });
  const auto endpoint = http_->server->local_endpoint();
  url_ = "http://" + endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  http_->history_sampler = http::HistorySampler::Start(http_->io, board_, history_, [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
  http_thread_ = std::thread([this] {
    NameThisThread("oc-http");
    http_->io.run();
  });
  return {};
}

void ServiceRuntime::StartThreads() {
  for (size_t i = 0; i < workers_.size(); ++i) {
    worker_threads_.emplace_back([w = workers_[i].get(), i] {
      NameThisThread("oc-worker-" + std::to_string(i));
      w->Run();
    });
  }
  replicator_thread_ = std::thread([this] {
    NameThisThread("oc-replicas");
    replicator_status_ = replicator_->Run();
    if (!replicator_status_) {
      Log("replicas stopped: " + replicator_status_.error().ToString() +
          "; the instance stops, to be restarted");
      replicator_failed_.store(true);
    }
  });
  processor_thread_ = std::thread([this] {
    NameThisThread("oc-processor");
    processor_status_ = processor_->Run();
    processor_done_.store(true);
  });
}

base::Result<std::unique_ptr<ServiceRuntime>> ServiceRuntime::Start(RuntimeOptions options) {
  std::unique_ptr<ServiceRuntime> rt(new ServiceRuntime());
  rt->log_ = options.log;
  // librdkafka's own lines (a broker that cannot be reached, authentication refused)
  // join the service's log, its format and its level, and are counted.
  kafka::ClientLog client_log{
      options.log.Child("kafka"),
      &rt->metrics_.AddCounter(
          "oncecount_kafka_client_warnings_total",
          "librdkafka's own log lines at warning level or worse, from its background threads "
          "(a broker that cannot be reached, authentication refused, a consumer past "
          "max.poll.interval.ms): each is in the service's log, under the \"kafka\" context.")};
  rt->clients_ = kafka::MakeRdKafkaClients(options.bootstrap_servers,
                                           options.config.kafka.properties, std::move(client_log));
  auto po = ProcessorOptionsOf(options);
  if (!po) return std::move(po).error();
  po->clients = rt->clients_.get();
  po->metrics = &rt->metrics_;
  rt->CreateWorkers(options, *po);
  if (base::Status s = rt->StartHttp(options); !s) return std::move(s).error();
  // What the start waits for is also /readyz's reason.
  base::StartWait wait;
  wait.stop_requested = options.stop_requested;
  wait.waiting_for = [board = &rt->board_](const std::string& why) {
    board->SetStartWaitingFor(why);
  };
  if (base::Status s = AwaitServiceTopics(options, *rt->clients_, wait); !s) {
    return std::move(s).error();
  }
  wait.log = options.log.Child("group");
  auto previous = AwaitPreviousGroupStopped(options.config.kafka, *rt->clients_, wait);
  if (!previous) return std::move(previous).error();
  rt->metrics_
      .AddGauge("oncecount_previous_group_unverified",
                "1 when kafka.previous_group_id is set and the brokers would not tell whether "
                "that group still has members at start (the start then trusted that every "
                "instance of it stopped); 0 otherwise.")
      .Set(previous.value().verdict == PreviousGroup::kUnverified ? 1 : 0);
  po->previous_group_unverified = previous.value().why_unverified;
  if (options.check_brokers_abort_interval) {
    if (base::Status s = CheckBrokersAbortInterval(options.config.kafka, *rt->clients_,
                                                   options.log.Child("topics"));
        !s) {
      return std::move(s).error();
    }
  }

  replica::ReplicatorOptions ro = ReplicatorOptionsOf(options, *po);
  ro.clients = rt->clients_.get();
  ro.api_url = rt->url_;
  ro.metrics = &rt->metrics_;
  auto replicator = replica::Replicator::Create(std::move(ro), rt->board_);
  if (!replicator) return std::move(replicator).error();
  rt->replicator_ = std::move(replicator).value();

  std::vector<service::ShardWorker*> workers;
  for (auto& w : rt->workers_) workers.push_back(w.get());
  auto made = service::Processor::Create(std::move(po).value(), rt->board_, std::move(workers),
                                         rt->replicator_.get());
  if (!made) return std::move(made).error();
  rt->processor_ = std::move(made).value();
  rt->StartThreads();
  return rt;
}

base::Status ServiceRuntime::Stop() {
  if (stopped_) return processor_status_.ok() ? replicator_status_ : processor_status_;
  stopped_ = true;
  if (processor_) processor_->Stop();
  if (processor_thread_.joinable()) processor_thread_.join();
  for (auto& worker : workers_) worker->Close();
  for (std::thread& t : worker_threads_) t.join();
  // After the processor: its revocations hand the shards back to the replicator.
  if (replicator_) replicator_->Stop();
  if (replicator_thread_.joinable()) replicator_thread_.join();
  if (http_) {
    if (http_->history_sampler) http_->history_sampler->Stop();
    if (http_->server) http_->server->Stop();
    http_->work.reset();
    http_->io.stop();
  }
  if (http_thread_.joinable()) http_thread_.join();
  return processor_status_.ok() ? replicator_status_ : processor_status_;
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
  (void)Stop();  // the owner asked Stop for the outcome already, or no longer can
}

}  // namespace oncecount::cmd
