#include "processor/cmd/broker_fencing_check.h"

#include <charconv>
#include <chrono>
#include <string>

namespace oncecount::cmd {

base::Status CheckBrokersAbortInterval(const config::KafkaConfig& k, kafka::Clients& clients,
                                       const base::Logger& log) {
  const std::string stated = "kafka.transaction_abort_interval_ms (" +
                             std::to_string(k.transaction_abort_interval_ms) + " ms)";
  const auto asked = clients.DescribeBrokerSetting(kBrokersAbortInterval, std::chrono::seconds(10));
  std::string untold;
  if (!asked) {
    untold = asked.error().message();
  } else {
    for (const std::string& why : asked.value().untold)
      untold += (untold.empty() ? "" : "; ") + why;
  }
  if (!untold.empty()) {
    // A broker that did not tell may run a longer interval than those that did.
    log.Warn("cannot read the brokers' " + std::string(kBrokersAbortInterval) + " (" + untold +
             "): the start-up check that a frozen instance is fenced before its session ends "
             "trusts " +
             stated +
             " for them; brokers that implement DescribeConfigs tell it to a principal allowed "
             "DescribeConfigs on the cluster");
  }
  if (!asked) return {};
  int32_t longest_broker = -1;
  int64_t longest = -1;
  for (const auto& [broker, value] : asked.value().told) {
    int64_t ms = -1;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (error != std::errc() || end != value.data() + value.size() || ms < 0) {
      log.Warn("broker " + std::to_string(broker) + " tells its " + kBrokersAbortInterval +
               " as \"" + value + "\", not a number of milliseconds: not judged");
      continue;
    }
    if (ms > longest) {
      longest = ms;
      longest_broker = broker;
    }
  }
  if (longest <= k.transaction_abort_interval_ms) return {};
  const std::string theirs = "broker " + std::to_string(longest_broker) + "'s " +
                             kBrokersAbortInterval + " is " + std::to_string(longest) + " ms";
  config::KafkaConfig as_the_brokers_run = k;
  as_the_brokers_run.transaction_abort_interval_ms = longest;
  if (base::Status rule = config::CheckZombieFencing(as_the_brokers_run); !rule) {
    return base::Error(base::Errc::kBadConfig,
                       stated + " is below what the brokers do: " + theirs + ". With theirs, " +
                           rule.error().message(),
                       "kafka.transaction_abort_interval_ms");
  }
  log.Warn(stated + " is below what the brokers do (" + theirs +
           "); the fencing rule holds with theirs too. Set it to " + std::to_string(longest));
  return {};
}

}  // namespace oncecount::cmd
