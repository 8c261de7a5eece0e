// The oncecount binary: the composition root. It parses the command line, builds
// the modules a subcommand needs and owns every thread the process runs.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "config/config.h"
#include "processor/cmd/demo.h"
#include "processor/cmd/dev_kafka.h"
#include "processor/cmd/filter_eval.h"
#include "processor/cmd/inject.h"
#include "processor/cmd/log_sink.h"
#include "processor/cmd/serve.h"
#include "processor/cmd/verify.h"

namespace {

constexpr int kUsageError = 2;

// CLI11 reads an integer with strtoll or strtoull in base 0: "-1" given to an unsigned
// option wrapped to 2^64 - 1 (`inject --events -1` ran without end) and "010" read as
// 8. Integer options take plain decimal digits; each command checks its ranges.
const CLI::Validator& WholeNumber() {
  static const CLI::Validator kWholeNumber(
      [](std::string& s) -> std::string {
        const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
          return std::isdigit(c) != 0;
        });
        if (!digits || (s.size() > 1 && s[0] == '0')) {
          return "expected a whole number in decimal digits, got \"" + s + "\"";
        }
        return {};
      },
      "WHOLE NUMBER");
  return kWholeNumber;
}

// A number that is finite: NaN passes every range check written with < and >.
const CLI::Validator& FiniteNumber() {
  static const CLI::Validator kFiniteNumber(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
          return "expected a finite number, got \"" + s + "\"";
        }
        return {};
      },
      "NUMBER");
  return kFiniteNumber;
}

void AddFilterEval(CLI::App& app, oncecount::cmd::FilterEvalOptions& o) {
  CLI::App* cmd = app.add_subcommand("filter-eval", "run one dedup filter on a simulated clock");
  cmd->add_option("--mode", o.mode, "fbf | bloom | exact | gaussian")->capture_default_str();
  cmd->add_option("--bits", o.bits, "bits per constituent filter")->check(WholeNumber());
  cmd->add_option("--hashes", o.hashes, "hash functions (bits set per id) per filter")
      ->check(WholeNumber());
  cmd->add_option("--past", o.past, "past filters N of the N-FBF")->check(WholeNumber());
  cmd->add_option("--refresh-ms", o.refresh_ms, "refresh period t in ms")->check(WholeNumber());
  cmd->add_option("--check", o.check, "membership check: paper | pairs | any (Sec. III-A)")
      ->capture_default_str();
  CLI::Option* rate = cmd->add_option("--rate", o.rate, "inserts per simulated second (constant)")
                          ->check(FiniteNumber());
  cmd->add_option("--rate-schedule", o.rate_schedule, "CSV file of `second,rate` rows")
      ->excludes(rate);
  cmd->add_option("--duration-ms", o.duration_ms, "simulated duration")
      ->capture_default_str()
      ->check(WholeNumber());
  cmd->add_option("--queries", o.queries, "never-inserted ids queried at the end")
      ->capture_default_str()
      ->check(WholeNumber());
  cmd->add_flag("--adaptive", o.adaptive,
                "adapt to the load (Bloom constituents: --policy once per simulated second; "
                "fingerprint slices: their own adaptation)");
  cmd->add_option("--target-fpp", o.target_fpp, "target false-positive probability")
      ->capture_default_str()
      ->check(FiniteNumber());
  cmd->add_option("--window-ms", o.window_ms, "dedup window (guaranteed retry horizon)")
      ->check(WholeNumber());
  cmd->add_option("--expected-rate", o.expected_rate,
                  "ids per second a self-sized filter is sized for (default: the first rate)")
      ->check(FiniteNumber());
  cmd->add_option("--seed", o.seed, "seed of ids and filters")
      ->capture_default_str()
      ->check(WholeNumber());
  cmd->add_flag("--trace", o.trace, "add one trace entry per simulated second");
  cmd->add_option("--trace-queries", o.trace_queries, "never-inserted ids queried per trace entry")
      ->capture_default_str()
      ->check(WholeNumber());
  cmd->add_option("--refresh-step-ms", o.refresh_step_ms,
                  "additive step of the refresh period (default: refresh / 10)")
      ->check(WholeNumber());
  cmd->add_option("--max-filters", o.max_filters, "upper bound on constituent filters")
      ->capture_default_str()
      ->check(WholeNumber());
  cmd->add_option("--model", o.model, "FPP model adaptation follows: blocked | classic")
      ->capture_default_str();
  cmd->add_option("--policy", o.policy, "resizing: guarded | paper (Algorithm 3 as published)")
      ->capture_default_str();
  cmd->add_option("--cell-bits", o.cell_bits,
                  "bits per cell (gaussian): 4, 8 or 64 (double); default 8")
      ->check(WholeNumber());
  cmd->add_option("--filter", o.filter, "fbf constituent filters: bloom | gaussian | fingerprint")
      ->capture_default_str();
  cmd->add_option("--exp", o.exp, "gaussian kernel exponential: fast | exact")
      ->capture_default_str();
}

void AddDevKafka(CLI::App& app, oncecount::cmd::DevKafkaOptions& o) {
  CLI::App* dev =
      app.add_subcommand("dev-kafka", "an embedded Kafka cluster for development and tests");
  dev->add_option("--brokers", o.brokers, "brokers, 1..16")
      ->capture_default_str()
      ->check(WholeNumber());
  dev->add_option("--partitions", o.partitions, "partitions per topic")
      ->capture_default_str()
      ->check(WholeNumber());
  dev->add_option("--topic", o.topics,
                  "a topic to create (repeatable; default the service's four: events, events.dlq, "
                  "events.changelog, events.members)");
  dev->add_option("--bootstrap-file", o.bootstrap_file, "also write the bootstrap servers here");
}

void AddInject(CLI::App& app, oncecount::cmd::InjectOptions& o) {
  CLI::App* inj = app.add_subcommand("inject", "produce a test workload of events with retries");
  inj->add_option("--bootstrap", o.bootstrap, "Kafka bootstrap servers")->required();
  inj->add_option("--topic", o.topic, "input topic")->capture_default_str();
  inj->add_option("--events", o.workload.events, "unique events")->required()->check(WholeNumber());
  inj->add_option("--duplicate-rate", o.workload.duplicate_rate,
                  "fraction of events sent again as retries")
      ->capture_default_str()
      ->check(FiniteNumber());
  inj->add_option("--counters", o.workload.counters, "distinct counters")
      ->capture_default_str()
      ->check(WholeNumber());
  inj->add_option("--clients", o.workload.clients, "distinct client ids")
      ->capture_default_str()
      ->check(WholeNumber());
  inj->add_option(
         "--rate", o.rate,
         "events per second (0: as fast as possible, in full batches that wait up to 100 ms)")
      ->capture_default_str()
      ->check(FiniteNumber());
  inj->add_option("--max-retry-delay-ms", o.workload.max_retry_delay_ms,
                  "a retry follows its event after up to this long")
      ->capture_default_str()
      ->check(WholeNumber());
  inj->add_option("--malformed-rate", o.workload.malformed_rate,
                  "extra malformed messages per event")
      ->capture_default_str()
      ->check(FiniteNumber());
  inj->add_option("--seed", o.workload.seed, "workload seed")
      ->capture_default_str()
      ->check(WholeNumber());
  inj->add_option("--first-seq", o.workload.first_seq,
                  "first sequence number of the events' ids (runs with disjoint ranges send "
                  "events new to each other; the same seed and range sends "
                  "the same events)")
      ->capture_default_str()
      ->check(WholeNumber());
  inj->add_option("--truth", o.truth_file, "write the expected counters here (JSON)");
  inj->add_option("--timeline", o.timeline_file,
                  "write the expected sum of all counters every 100 ms here (CSV)");
}

void AddVerify(CLI::App& app, oncecount::cmd::VerifyOptions& o) {
  CLI::App* ver = app.add_subcommand("verify", "compare the service's counters with a truth file");
  ver->add_option("--truth", o.truth_file, "the truth file inject wrote")->required();
  ver->add_option("--api", o.api_url, "the service's HTTP API, http://host:port")->required();
  ver->add_option("--timeout-s", o.timeout_s, "give up after this long")
      ->capture_default_str()
      ->check(FiniteNumber());
}

void AddServe(CLI::App& app, oncecount::cmd::ServeOptions& o) {
  CLI::App* srv = app.add_subcommand("serve", "run the processor and the HTTP API");
  srv->add_option("--config", o.config_file, "the YAML configuration file")->required();
  srv->add_option(
      "--instance-id", o.instance_id,
      "this instance's name, unique in the group and stable across restarts "
      "(default: <hostname>-<http port>, with the listen address unless it is a wildcard; "
      "with port 0, <hostname>-<random>)");
  srv->add_option("--log-level", o.log_level,
                  "the least severe lines logged: " +
                      oncecount::base::ChoicesOf(oncecount::base::kLogLevelNames))
      ->capture_default_str();
  srv->add_option("--log-format", o.log_format,
                  "text lines, or json: one JSON object per line (" +
                      oncecount::base::ChoicesOf(oncecount::cmd::kLogFormatNames) + ")")
      ->capture_default_str();
}

void AddDemo(CLI::App& app, oncecount::cmd::DemoOptions& o) {
  CLI::App* dem = app.add_subcommand(
      "demo", "embedded Kafka, the processor, the HTTP API and a stream of events with retries");
  dem->add_option("--http", o.http, "where the HTTP API listens")->capture_default_str();
  dem->add_option("--rate", o.rate, "new events per second")
      ->capture_default_str()
      ->check(FiniteNumber());
  dem->add_option("--duplicate-rate", o.duplicate_rate, "share of events retried")
      ->capture_default_str()
      ->check(FiniteNumber());
  dem->add_option("--partitions", o.partitions, "input partitions (shards)")
      ->capture_default_str()
      ->check(WholeNumber());
  dem->add_option("--events", o.events,
                  "send this many new events, then check the counters against them (0: no end)")
      ->capture_default_str()
      ->check(WholeNumber());
  dem->add_option("--duration-s", o.duration_s, "stop after this long (0: at Ctrl-C)")
      ->capture_default_str()
      ->check(WholeNumber());
}

// `oncecount check-config FILE`: validate, then print the effective configuration
// (defaults, file and environment overrides applied).
int RunCheckConfig(const std::string& path) {
  const auto loaded = oncecount::config::LoadConfigFileWithProcessEnvironment(path);
  if (!loaded) {
    std::cerr << "check-config: " << loaded.error() << "\n";
    return oncecount::base::ExitCodeFor(loaded.code());
  }
  std::cout << oncecount::config::RenderConfig(loaded.value());
  return 0;
}

// SIGTERM and SIGINT are blocked before any thread exists (librdkafka's included),
// so that every thread inherits the mask and the commands that run until a signal
// receive it with sigwait on the main thread.
void BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

// Every subcommand's options; CLI11 fills the one named on the command line.
struct CommandOptions {
  oncecount::cmd::FilterEvalOptions filter_eval;
  oncecount::cmd::DevKafkaOptions dev_kafka;
  oncecount::cmd::InjectOptions inject;
  oncecount::cmd::VerifyOptions verify;
  oncecount::cmd::ServeOptions serve;
  oncecount::cmd::DemoOptions demo;
  std::string config_path;
};

int RunSubcommand(const CLI::App& app, const CommandOptions& c) {
  if (app.got_subcommand("filter-eval")) {
    return oncecount::cmd::RunFilterEval(c.filter_eval, std::cout, std::cerr);
  }
  if (app.got_subcommand("check-config")) return RunCheckConfig(c.config_path);
  if (app.got_subcommand("inject")) return oncecount::cmd::RunInject(c.inject, std::cerr);
  if (app.got_subcommand("verify"))
    return oncecount::cmd::RunVerify(c.verify, std::cout, std::cerr);
  if (app.got_subcommand("serve")) {
    BlockStopSignals();
    return oncecount::cmd::RunServe(c.serve, std::cout, std::cerr);
  }
  if (app.got_subcommand("demo")) {
    BlockStopSignals();
    return oncecount::cmd::RunDemo(c.demo, std::cout, std::cerr);
  }
  if (app.got_subcommand("dev-kafka")) {
    BlockStopSignals();
    return oncecount::cmd::RunDevKafka(c.dev_kafka, std::cout, std::cerr);
  }
  return kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oncecount: exactly-once counters on Kafka"};
  app.require_subcommand(1);
  CommandOptions c;
  AddFilterEval(app, c.filter_eval);
  AddDevKafka(app, c.dev_kafka);
  AddInject(app, c.inject);
  AddVerify(app, c.verify);
  AddServe(app, c.serve);
  AddDemo(app, c.demo);
  app.add_subcommand("check-config", "validate a config file and print the effective configuration")
      ->add_option("FILE", c.config_path, "the YAML configuration file")
      ->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kUsageError;
  }
  return RunSubcommand(app, c);
}
