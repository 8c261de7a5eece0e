// ServiceRuntime: one running oncecount service — the processor on its own thread,
// the shard workers on theirs (processing.threads; 0: one per core), the replicator
// (replicas of the shards other instances own) on its own, and the HTTP API on an
// io_context thread — as `serve` and `demo` start it.
//
// This is part of the composition root: it is where the service's threads are
// created and joined. The processor's shards publish on the runtime's StateBoard,
// and the API answers from it.
//
// Thread-safety: Start, Stop and the accessors are for the thread that owns the
// runtime (main); log lines may come from any of the runtime's threads.
#pragma once

#include <atomic>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "http/history.h"
#include "processor/base/logger.h"
#include "processor/kafka/clients.h"
#include "processor/replica/replicator.h"
#include "processor/service/processor.h"
#include "processor/service/shard_worker.h"
#include "processor/shard/shard_view.h"

namespace oncecount::cmd {

struct RuntimeOptions {
  config::Config config;
  std::string bootstrap_servers;  // resolved: never "embedded"
  std::string instance_id;
  base::Logger log;  // thread-safe sink for log lines
  // How many bytes a changelog partition keeps when the cluster cannot say (the
  // embedded one); 0: unknown.
  size_t changelog_retention_bytes = 0;
  // Shards keep local checkpoints in config.state.dir (created if missing). Off for
  // a cluster that lives in this process: it is gone, and they with it, at exit.
  bool local_checkpoints = true;
  // Ends the wait for missing topics at start-up (null: wait as long as it takes).
  std::function<bool()> stop_requested;
  // Whether instance_id names this instance across restarts (given, or the default
  // without a random suffix): only then is it a static member of the group.
  bool stable_instance_id = true;
  // Whether the brokers are asked their transaction abort interval at start
  // (CheckBrokersAbortInterval): serve against a cluster of its own. Off for a cluster
  // that lives in this process (demo, serve on "embedded"): it cannot tell, and no
  // frozen instance outlives it.
  bool check_brokers_abort_interval = false;
};

class ServiceRuntime {
 public:
  // Starts everything, or returns why not: kStopped when a stop request ended the
  // wait for topics (nothing to undo), else what failed.
  static base::Result<std::unique_ptr<ServiceRuntime>> Start(RuntimeOptions options);
  ~ServiceRuntime();

  // "http://127.0.0.1:8080": where the API listens (the real port when 0 was asked).
  const std::string& url() const { return url_; }
  const shard::StateBoard& board() const { return board_; }
  // True once the processor's thread has ended (a fatal error, or after Stop), or
  // the replicator's with an error (it could not make its clients again): an
  // instance that no longer follows the changelog stops, to be restarted, rather
  // than serve replicas and standbys that no longer move.
  bool finished() const { return processor_done_.load() || replicator_failed_.load(); }
  // Stops the processor (it commits and leaves the group), then the API. Returns the
  // processor's fatal error, else the replicator's, or ok after a clean stop.
  base::Status Stop();

  struct Http;

 private:
  ServiceRuntime() = default;
  void CreateWorkers(const RuntimeOptions& options, const service::ProcessorOptions& po);
  base::Status StartHttp(const RuntimeOptions& options);
  void StartThreads();
  void Log(const std::string& line) const { log_.Warn(line); }
  base::Logger log_;

  shard::StateBoard board_;
  base::MetricRegistry metrics_;             // the components' own metrics, rendered by /metrics
  std::unique_ptr<kafka::Clients> clients_;  // the processor's
  std::vector<std::unique_ptr<service::ShardWorker>> workers_;
  std::vector<std::thread> worker_threads_;
  std::unique_ptr<replica::Replicator> replicator_;
  std::unique_ptr<service::Processor> processor_;
  // The board's recent past for GET /v1/history, sampled on the HTTP thread (the
  // sampler lives in Http, beside the io_context it runs on).
  http::History history_;
  std::unique_ptr<Http> http_;
  std::thread processor_thread_;
  std::thread http_thread_;
  std::thread replicator_thread_;
  std::atomic<bool> processor_done_{false};
  base::Status processor_status_;
  std::atomic<bool> replicator_failed_{false};
  base::Status replicator_status_;  // read after the replicator's thread is joined
  std::string url_;
  bool stopped_ = false;
};

// Unique among the live instances of one host, so that no two share a
// transactional.id: "<hostname>-<http port>", with the listen address when it is
// not a wildcard ("<hostname>-127_0_0_1-8080"). Stable across restarts, so that a
// restarted instance fences its previous life, except with port 0 (any free port),
// where "<hostname>-<16 hex digits of `random`>" keeps instances apart.
std::string DefaultInstanceId(const std::string& http_listen, uint64_t random);
// Whether DefaultInstanceId(http_listen, ...) is the same at every start (a port is
// given).
bool DefaultInstanceIdIsStable(const std::string& http_listen);

// Waits until SIGTERM or SIGINT arrives (main keeps them blocked; returns the
// signal) or `done` turns true (returns 0).
int WaitForStop(const std::function<bool()>& done);
// Whether SIGTERM or SIGINT is pending (blocked by main, not yet taken by WaitForStop).
bool StopSignalPending();

}  // namespace oncecount::cmd
