#include "processor/kafka/client_config.h"

#include <librdkafka/rdkafka.h>

#include "processor/kafka/service_owned_properties.h"

namespace oncecount::kafka {

base::Result<rd_kafka_conf_s*> MakeClientConfig(const Settings& defaults,
                                                const std::map<std::string, std::string>& user,
                                                const Settings& pinned) {
  for (const auto& [name, value] : pinned) {
    if (!IsServiceOwnedProperty(name)) {
      return base::Error(base::Errc::kInternal,
                         "pinned property " + name + " is not in kServiceOwnedProperties",
                         "kafka.properties");
    }
  }
  for (const auto& [name, value] : user) {
    if (IsServiceOwnedProperty(name)) {
      return base::Error(base::Errc::kBadConfig,
                         name + " is set by the service (exactly-once depends on it); remove it",
                         "kafka.properties." + name);
    }
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char error[512];
  auto set = [&](const std::string& name, const std::string& value) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof error) ==
        RD_KAFKA_CONF_OK) {
      return std::string();
    }
    return name + "=" + value + ": " + error;
  };
  std::string failed;
  for (const auto& [name, value] : defaults) {
    if (failed.empty()) failed = set(name, value);
  }
  for (const auto& [name, value] : user) {
    if (failed.empty()) failed = set(name, value);
  }
  for (const auto& [name, value] : pinned) {
    if (failed.empty()) failed = set(name, value);
  }
  if (failed.empty()) failed = set("allow.auto.create.topics", "false");
  if (!failed.empty()) {
    rd_kafka_conf_destroy(conf);
    return base::Error(base::Errc::kBadConfig, failed, "kafka.properties");
  }
  return conf;
}

}  // namespace oncecount::kafka
