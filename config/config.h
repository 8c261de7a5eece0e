// Config: oncecount's configuration (SPEC §5), loaded from YAML with environment
// overrides, validated key by key.
//
// Every key has a default (config/oncecount.yaml documents them). An unknown key, a
// wrong type or an out-of-range value is an error naming the key
// ("dedup.window_ms: expected an integer in 1..1000000000000, got -5"). Environment
// variables ONCECOUNT_<SECTION>_<KEY> (upper case, e.g. ONCECOUNT_DEDUP_WINDOW_MS)
// override the file; kafka.properties is set in the file only.
//
// Thread-safety: plain values; load once in main and hand copies to the modules.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "processor/base/result.h"
#include "processor/filter/bloom/membership_check.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/filter_factory.h"
#include "processor/shard/late_policy.h"

namespace oncecount::config {

struct KafkaConfig {
  std::string bootstrap_servers = "embedded";  // "embedded": the in-process dev cluster
  std::string input_topic = "events";
  std::string dlq_topic;  // empty: <input_topic>.dlq
  std::string group_id = "oncecount";
  // A group whose shards this deployment may take over: the group_id it ran under
  // before a rename. Each claim names its group, and a shard another group claimed
  // last is refused; empty: none but group_id.
  std::string previous_group_id;
  // The broker aborts an oncecount transaction open longer than this, and a dead
  // owner's open transaction delays the restore of its shards by up to this long.
  int64_t transaction_timeout_ms = 10000;
  // The brokers' transaction.abort.timed.out.transaction.cleanup.interval.ms: a
  // transaction past its timeout is aborted (and its producer fenced) up to this long
  // later. Only read by the start-up check against the session timeout.
  int64_t transaction_abort_interval_ms = 10000;
  // KIP-345: the group knows each instance by its instance id (group.instance.id), so
  // an instance that comes back within session.timeout.ms (a crash, a restart) gets
  // its shards back without a rebalance, and its previous life is fenced.
  bool static_membership = true;
  // Whether a stopping instance (SIGTERM) leaves the group, so that its shards move at
  // once. Only a static member may stay: its shards then wait for it, unread, until
  // it is back or its session times out (a restart moves nothing).
  bool leave_group_on_stop = true;
  // What one changelog partition keeps (its retention.bytes), for a cluster that does
  // not tell (DescribeConfigs unanswered: dev-kafka keeps 5242880); 0: unknown. The
  // shards time their snapshots by it, so that a complete one always stays. A cluster
  // that tells a bounded one wins.
  int64_t changelog_retention_bytes = 0;
  std::map<std::string, std::string> properties;  // passed to librdkafka as is

  std::string EffectiveDlqTopic() const {
    return dlq_topic.empty() ? input_topic + ".dlq" : dlq_topic;
  }
  // The shards' changelog: as many partitions as the input topic.
  std::string ChangelogTopic() const { return input_topic + ".changelog"; }
  // The instances' heartbeats (standbys need it): one partition.
  std::string MembersTopic() const { return input_topic + ".members"; }
};

struct ProcessingConfig {
  int64_t commit_interval_ms = 100;
  int64_t standby_replicas = 0;
  int64_t threads = 0;  // 0: one per core
};

struct DedupConfig {
  filter::DedupMode mode = filter::DedupMode::kFbf;
  int64_t window_ms = 60000;
  // How far a record's timestamp may be ahead of the wall clock and still move a
  // shard's clock; the filter remembers window_ms plus this on the shard's clock,
  // which absorbs producers whose clocks disagree by up to this much.
  int64_t timestamp_tolerance_ms = 1000;
  // What becomes of a record applied while its shard's clock is more than the
  // tolerance past its timestamp (SPEC §2.1).
  shard::LatePolicy late_records = shard::LatePolicy::kApply;
  double target_fpp = 1e-6;
  double expected_rate = 10000;  // events per second per shard, for the initial sizing
  bool adaptive = true;
  filter::MembershipCheck check = filter::MembershipCheck::kPairs;
  filter::Constituent filter = filter::Constituent::kBlockedBloom;
  int64_t cell_bits = 8;  // gaussian constituents: bits per cell, 4, 8 or 64 (double)
  // The most memory one shard's filter state takes (fbf and exact). At the bound the
  // filter forgets its oldest ids early and reports the window it really keeps.
  int64_t max_filter_mib = 256;
};

// The filter a shard builds from `dedup`. Its window is window_ms plus the timestamp
// tolerance: the filter measures time on the shard's clock (the largest record
// timestamp applied), which producers' clock disagreement can move ahead of a retry's
// own timestamp by up to the tolerance.
filter::DedupSpec DedupSpecOf(const DedupConfig& dedup);

struct HttpConfig {
  std::string listen = "127.0.0.1:8080";
};

struct StateConfig {
  std::string dir = "./state";
};

struct Config {
  KafkaConfig kafka;
  ProcessingConfig processing;
  DedupConfig dedup;
  HttpConfig http;
  StateConfig state;
};

// Looks up an environment variable; std::getenv in production, a map in tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnvironment();

// `yaml` is the file's text (empty: all defaults); `source` names it in messages.
// Errors are Errc::kBadConfig; their subject is the key ("dedup.window_ms"), empty
// when the file itself is the problem, and their message what was expected and what
// was found.
base::Result<Config> ParseConfig(const std::string& yaml, const EnvLookup& env,
                                 const std::string& source = "config");
base::Result<Config> LoadConfigFile(const std::string& path, const EnvLookup& env);

// The start-up rule that a frozen instance's transaction is aborted, and the instance
// fenced, before the group lets its session go (ParseConfig applies it with
// kafka.transaction_abort_interval_ms; the service applies it again with the brokers'
// own interval once they tell it). kBadConfig, subject kafka.transaction_timeout_ms,
// when it does not hold.
base::Status CheckZombieFencing(const KafkaConfig& k);

// An ONCECOUNT_<SECTION>_... variable (SECTION one of the file's sections) that names
// no key of it, such as ONCECOUNT_DEDUP_WINDOWMS: an override misspelt, or one the
// environment cannot give (kafka.properties), would otherwise be ignored and the
// file's value used without a word. The error's subject is the variable. Other
// ONCECOUNT_ variables (the scripts' and the tests', such as ONCECOUNT_BIN) are not
// overrides and pass.
base::Status CheckOverrideNames(const std::vector<std::string>& variable_names);
// The names of the process's environment variables.
std::vector<std::string> ProcessEnvironmentNames();
// What `serve` and `check-config` load: `path` with the process's environment, its
// override names checked first.
base::Result<Config> LoadConfigFileWithProcessEnvironment(const std::string& path);

// The effective configuration as YAML, every key spelled out.
std::string RenderConfig(const Config& config);

}  // namespace oncecount::config
