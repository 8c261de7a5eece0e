#include "config/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <map>

#include "processor/changelog/changelog_record.h"
#include "processor/kafka/service_owned_properties.h"

namespace oncecount::config {
namespace {

EnvLookup NoEnv() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

EnvLookup EnvOf(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Config Ok(const base::Result<Config>& r) {
  if (!r) {
    ADD_FAILURE() << r.error();
    return Config{};
  }
  return r.value();
}

// The error, which must be a configuration error (kBadConfig; its subject is the key).
base::Error Err(const base::Result<Config>& r) {
  if (!r) {
    EXPECT_EQ(r.code(), base::Errc::kBadConfig) << r.error();
    return r.error();
  }
  ADD_FAILURE() << "expected a configuration error";
  return base::Error(base::Errc::kInternal, "");
}

TEST(Config, GivesEveryKeyItsDefaultForAnEmptyFile) {
  const Config c = Ok(ParseConfig("", NoEnv()));
  EXPECT_EQ(c.kafka.bootstrap_servers, "embedded");
  EXPECT_EQ(c.kafka.input_topic, "events");
  EXPECT_EQ(c.kafka.EffectiveDlqTopic(), "events.dlq");
  EXPECT_EQ(c.kafka.group_id, "oncecount");
  EXPECT_EQ(c.kafka.previous_group_id, "");
  EXPECT_EQ(c.kafka.transaction_abort_interval_ms, 10000);
  EXPECT_TRUE(c.kafka.static_membership);
  EXPECT_TRUE(c.kafka.leave_group_on_stop);
  EXPECT_TRUE(c.kafka.properties.empty());
  EXPECT_EQ(c.processing.commit_interval_ms, 100);
  EXPECT_EQ(c.processing.standby_replicas, 0);
  EXPECT_EQ(c.processing.threads, 0);
  EXPECT_EQ(c.dedup.mode, filter::DedupMode::kFbf);
  EXPECT_EQ(c.dedup.window_ms, 60000);
  EXPECT_EQ(c.dedup.timestamp_tolerance_ms, 1000);
  EXPECT_EQ(c.dedup.late_records, shard::LatePolicy::kApply);
  EXPECT_EQ(c.dedup.target_fpp, 1e-6);
  EXPECT_EQ(c.dedup.expected_rate, 10000);
  EXPECT_TRUE(c.dedup.adaptive);
  EXPECT_EQ(c.dedup.check, filter::MembershipCheck::kPairs);
  EXPECT_EQ(c.dedup.max_filter_mib, 256);
  EXPECT_EQ(config::DedupSpecOf(c.dedup).memory_limit_bytes, uint64_t{256} << 20);
  EXPECT_EQ(c.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.state.dir, "./state");
}

// Every claim names the group, in at most changelog::kMaxGroupIdBytes: a longer id
// would be cut, and the instance would refuse its own shards at their next restore.
TEST(Config, RefusesAGroupIdLongerThanAClaimHolds) {
  const std::string longest(changelog::kMaxGroupIdBytes, 'g');
  EXPECT_EQ(Ok(ParseConfig("kafka: {group_id: " + longest + "}\n", NoEnv())).kafka.group_id,
            longest);
  const base::Error e = Err(ParseConfig("kafka: {group_id: " + longest + "g}\n", NoEnv()));
  EXPECT_EQ(e.subject(), "kafka.group_id");
  EXPECT_NE(e.message().find("expected at most 1024 bytes, got 1025"), std::string::npos)
      << e.message();
  EXPECT_EQ(Err(ParseConfig("kafka: {previous_group_id: " + longest + "g}\n", NoEnv())).subject(),
            "kafka.previous_group_id");
}

// Regression: a setting after a "---" (a second YAML document) was not applied, and
// nothing said so.
TEST(Config, RefusesAFileOfSeveralYamlDocuments) {
  const base::Error e =
      Err(ParseConfig("dedup: {window_ms: 60000}\n---\ndedup: {window_ms: 600000}\n", NoEnv()));
  EXPECT_NE(e.message().find("line 2 starts a second YAML document"), std::string::npos)
      << e.message();
  EXPECT_NE(Err(ParseConfig("dedup: {window_ms: 60000}\n...\n\ndedup: {window_ms: 1}\n", NoEnv()))
                .message()
                .find("line 4 starts a second YAML document"),
            std::string::npos);
  EXPECT_NE(Err(ParseConfig("---\ndedup: {window_ms: 60000}\n--- {dedup: {}}\n", NoEnv()))
                .message()
                .find("line 3 starts"),
            std::string::npos);
  // One document, with its markers, a directive, comments and a string holding "---".
  const Config one = Ok(ParseConfig(
      "%YAML 1.2\n--- # settings\ndedup: {window_ms: 600000}\nkafka:\n  group_id: \"---\"\n"
      "...\n# the end\n",
      NoEnv()));
  EXPECT_EQ(one.dedup.window_ms, 600000);
  EXPECT_EQ(one.kafka.group_id, "---");
  EXPECT_EQ(Ok(ParseConfig("# nothing but a comment\n", NoEnv())).dedup.window_ms, 60000);
}

// Regression (config_fuzz, tests/fuzz/regressions/config_fuzz/crash-ef206ee...): an
// overlong UTF-8 form ("\xc0\x80", a NUL spelt in two bytes) passed the check of
// control characters, and the configuration rendered back with a NUL it refused.
TEST(Config, RefusesAValueThatIsNotWellFormedUtf8) {
  for (const char* bad :
       {"\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff", "a\xc3"}) {
    const base::Error e = Err(ParseConfig(
        std::string("kafka:\n  properties:\n    client.id: \"") + bad + "\"\n", NoEnv()));
    EXPECT_EQ(e.subject(), "kafka.properties.client.id") << bad;
    EXPECT_NE(e.message().find("expected UTF-8 text"), std::string::npos) << e.message();
    EXPECT_EQ(Err(ParseConfig(std::string("state: {dir: \"") + bad + "\"}\n", NoEnv())).subject(),
              "state.dir");
  }
  const Config ok =
      Ok(ParseConfig("state: {dir: \"/var/lib/\xc3\xa9t\xc3\xa9-\xf0\x9f\x93\x88\"}\n", NoEnv()));
  EXPECT_EQ(ok.state.dir, "/var/lib/\xc3\xa9t\xc3\xa9-\xf0\x9f\x93\x88");
}

// Regression (config_fuzz, tests/fuzz/regressions/config_fuzz/timeout-08ae6bb...):
// yaml-cpp's LoadAll, which the check of several documents first used, never returned
// on this input.
TEST(Config, AnswersAMalformedFileThatYamlCppsLoadAllLoopsOn) {
  const std::string input(
      ",b:9092\"\n \xfe Prope\x84ties:\n    a\xf3"
      "cks: all\n");
  EXPECT_FALSE(ParseConfig(input, NoEnv()).ok());
}

TEST(Config, RefusesAnInputTopicWhoseImpliedTopicsAreTooLong) {
  // <input>.changelog is the longest: 10 characters more.
  const std::string longest_ok(239, 'a');
  EXPECT_EQ(Ok(ParseConfig("kafka:\n  input_topic: " + longest_ok + "\n", NoEnv()))
                .kafka.ChangelogTopic()
                .size(),
            249u);
  const base::Error e = Err(ParseConfig("kafka:\n  input_topic: " + longest_ok + "a\n", NoEnv()));
  EXPECT_EQ(e.subject(), "kafka.input_topic");
  EXPECT_NE(e.message().find(".changelog, is longer than 249"), std::string::npos) << e.message();
}

// Regression: a dead-letter topic that was the input fed its records back as events (a
// late record set aside came back with a new timestamp and was counted after all).
TEST(Config, RefusesADeadLetterTopicThatIsATopicTheServiceReads) {
  const struct {
    const char* dlq;
    const char* names;
  } cases[] = {{"events", "\"events\" is the input topic"},
               {"events.changelog", "\"events.changelog\" is the changelog"},
               {"events_members",
                "\"events_members\" is (to Kafka, which reads '.' as '_') "
                "the members topic (\"events.members\")"}};
  for (const auto& c : cases) {
    const base::Error e = Err(ParseConfig(
        std::string("kafka:\n  input_topic: events\n  dlq_topic: ") + c.dlq + "\n", NoEnv()));
    EXPECT_EQ(e.subject(), "kafka.dlq_topic") << c.dlq;
    EXPECT_NE(e.message().find(c.names), std::string::npos) << e.message();
  }
  EXPECT_EQ(Ok(ParseConfig("kafka:\n  input_topic: events\n  dlq_topic: events.late\n", NoEnv()))
                .kafka.EffectiveDlqTopic(),
            "events.late");
}

TEST(Config, RefusesAPreviousGroupThatIsTheGroupItself) {
  const base::Error e =
      Err(ParseConfig("kafka:\n  group_id: counts\n  previous_group_id: counts\n", NoEnv()));
  EXPECT_EQ(e.subject(), "kafka.previous_group_id");
  EXPECT_NE(e.message().find("is kafka.group_id (\"counts\")"), std::string::npos) << e.message();
}

// Guarantee 3: a frozen instance must be fenced by its transaction's abort before the
// group lets its session go (processor_test's AFrozenOwner... scenarios show both sides).
TEST(Config, RefusesASessionTimeoutAFrozenInstancesTransactionCouldOutlive) {
  const base::Error e =
      Err(ParseConfig("kafka:\n  properties:\n    session.timeout.ms: \"6000\"\n", NoEnv()));
  EXPECT_EQ(e.subject(), "kafka.transaction_timeout_ms");
  for (const char* named :
       {"kafka.transaction_timeout_ms (10000)", "kafka.transaction_abort_interval_ms (10000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "heartbeat.interval.ms (3000)", "session.timeout.ms (6000"}) {
    EXPECT_NE(e.message().find(named), std::string::npos) << named << " in " << e.message();
  }
  // librdkafka's defaults (45 s session, 3 s heartbeat) leave room for ours.
  EXPECT_TRUE(ParseConfig("", NoEnv()).ok());
  // Fast failover within the rule: 2000 + 1000 + 500 < 6000.
  const Config fast = Ok(ParseConfig(R"(
kafka:
  transaction_timeout_ms: 2000
  transaction_abort_interval_ms: 1000
  properties: {session.timeout.ms: "6000", heartbeat.interval.ms: "500"}
)",
                                     NoEnv()));
  EXPECT_EQ(fast.kafka.transaction_abort_interval_ms, 1000);
  // At the boundary: equal is refused (the abort may come exactly as the session ends).
  EXPECT_EQ(Err(ParseConfig(R"(
kafka:
  transaction_timeout_ms: 2500
  transaction_abort_interval_ms: 3000
  properties: {session.timeout.ms: "6000", heartbeat.interval.ms: "500"}
)",
                            NoEnv()))
                .subject(),
            "kafka.transaction_timeout_ms");
  const base::Error bad =
      Err(ParseConfig("kafka:\n  properties:\n    heartbeat.interval.ms: soon\n", NoEnv()));
  EXPECT_EQ(bad.subject(), "kafka.properties.heartbeat.interval.ms");
  // Regression: a heartbeat near int64's top wrapped the sum below the session timeout,
  // and the check passed (librdkafka's range is 1 ms to an hour).
  EXPECT_EQ(Err(ParseConfig("kafka:\n  properties:\n    heartbeat.interval.ms: "
                            "\"9223372036854775807\"\n",
                            NoEnv()))
                .subject(),
            "kafka.properties.heartbeat.interval.ms");
}

// A dynamic member always leaves the group when it stops (librdkafka), and the
// group.instance.id is the instance id's, not a property to set by hand (two
// instances given one would fence each other's consumers).
TEST(Config, RefusesStayingInTheGroupWithoutStaticMembershipAndAHandSetInstanceId) {
  const base::Error stay = Err(
      ParseConfig("kafka:\n  static_membership: false\n  leave_group_on_stop: false\n", NoEnv()));
  EXPECT_EQ(stay.subject(), "kafka.leave_group_on_stop");
  EXPECT_NE(stay.message().find("kafka.static_membership: true"), std::string::npos)
      << stay.message();
  EXPECT_TRUE(ParseConfig("kafka:\n  static_membership: false\n", NoEnv()).ok());
  const base::Error hand_set =
      Err(ParseConfig("kafka:\n  properties:\n    group.instance.id: pod-0\n", NoEnv()));
  EXPECT_EQ(hand_set.subject(), "kafka.properties.group.instance.id");
  EXPECT_NE(hand_set.message().find("--instance-id"), std::string::npos) << hand_set.message();
}

// Regression: auto.offset.reset was only a default of the consumer's: "earliest" in
// kafka.properties hid input that retention removed, "latest" skipped the backlog.
TEST(Config, RefusesEveryServiceOwnedKafkaPropertyNamingIt) {
  for (std::string_view name : kafka::kServiceOwnedProperties) {
    const base::Error e =
        Err(ParseConfig("kafka:\n  properties:\n    " + std::string(name) + ": \"x\"\n", NoEnv()));
    EXPECT_EQ(e.subject(), "kafka.properties." + std::string(name));
    EXPECT_NE(e.message().find("remove it"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(ParseConfig("kafka:\n  properties:\n    fetch.wait.max.ms: \"10\"\n", NoEnv()).ok());
}

TEST(Config, SizesTheFilterForTheWindowPlusTheTimestampTolerance) {
  DedupConfig d;
  d.window_ms = 60000;
  d.timestamp_tolerance_ms = 5000;
  d.target_fpp = 1e-4;
  d.expected_rate = 2500;
  d.check = filter::MembershipCheck::kPaper;
  const filter::DedupSpec spec = DedupSpecOf(d);
  EXPECT_EQ(spec.window, filter::Millis{65000});
  EXPECT_EQ(spec.target_fpp, 1e-4);
  EXPECT_EQ(spec.expected_rate, 2500);
  EXPECT_EQ(spec.check, filter::MembershipCheck::kPaper);
  EXPECT_EQ(spec.mode, filter::DedupMode::kFbf);
}

TEST(Config, ShippedDefaultFileEqualsTheBuiltInDefaults) {
  const auto shipped = LoadConfigFile(ONCECOUNT_SOURCE_DIR "/config/oncecount.yaml", NoEnv());
  EXPECT_EQ(RenderConfig(Ok(shipped)), RenderConfig(Ok(ParseConfig("", NoEnv()))));
}

TEST(Config, ReadsEveryKeyFromTheFile) {
  const Config c = Ok(ParseConfig(R"(
kafka:
  bootstrap_servers: k1:9092,k2:9092
  input_topic: clicks
  dlq_topic: clicks-dead
  group_id: counters
  previous_group_id: counters-old
  static_membership: true
  leave_group_on_stop: false
  changelog_retention_bytes: 5242880
  properties:
    security.protocol: SASL_SSL
    sasl.mechanisms: PLAIN
processing:
  commit_interval_ms: 250
  standby_replicas: 1
  threads: 4
dedup:
  mode: exact
  window_ms: 30000
  late_records: dead_letter
  target_fpp: 1.0e-4
  expected_rate: 500
  adaptive: false
  check: paper
  filter: bloom
  max_filter_mib: 64
http:
  listen: "[::1]:0"
state:
  dir: /var/lib/oncecount
)",
                                  NoEnv()));
  EXPECT_EQ(c.kafka.bootstrap_servers, "k1:9092,k2:9092");
  EXPECT_EQ(c.kafka.EffectiveDlqTopic(), "clicks-dead");
  EXPECT_EQ(c.kafka.group_id, "counters");
  EXPECT_EQ(c.kafka.previous_group_id, "counters-old");
  EXPECT_TRUE(c.kafka.static_membership);
  EXPECT_FALSE(c.kafka.leave_group_on_stop);
  EXPECT_EQ(c.kafka.changelog_retention_bytes, 5242880);
  EXPECT_EQ(c.kafka.properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(c.kafka.properties.at("sasl.mechanisms"), "PLAIN");
  EXPECT_EQ(c.processing.commit_interval_ms, 250);
  EXPECT_EQ(c.processing.standby_replicas, 1);
  EXPECT_EQ(c.processing.threads, 4);
  EXPECT_EQ(c.dedup.mode, filter::DedupMode::kExact);
  EXPECT_EQ(c.dedup.window_ms, 30000);
  EXPECT_EQ(c.dedup.late_records, shard::LatePolicy::kDeadLetter);
  EXPECT_EQ(c.dedup.target_fpp, 1e-4);
  EXPECT_EQ(c.dedup.expected_rate, 500);
  EXPECT_FALSE(c.dedup.adaptive);
  EXPECT_EQ(c.dedup.check, filter::MembershipCheck::kPaper);
  EXPECT_EQ(c.dedup.max_filter_mib, 64);
  EXPECT_EQ(c.http.listen, "[::1]:0");
  EXPECT_EQ(c.state.dir, "/var/lib/oncecount");
}

TEST(Config, LetsTheEnvironmentOverrideTheFile) {
  const Config c = Ok(ParseConfig("dedup:\n  window_ms: 30000\n",
                                  EnvOf({{"ONCECOUNT_DEDUP_WINDOW_MS", "45000"},
                                         {"ONCECOUNT_KAFKA_BOOTSTRAP_SERVERS", "k9:9092"},
                                         {"ONCECOUNT_DEDUP_ADAPTIVE", "false"}})));
  EXPECT_EQ(c.dedup.window_ms, 45000);
  EXPECT_EQ(c.kafka.bootstrap_servers, "k9:9092");
  EXPECT_FALSE(c.dedup.adaptive);
}

TEST(Config, NamesTheKeyAndTheVariableOfABadEnvironmentValue) {
  const base::Error e = Err(ParseConfig("", EnvOf({{"ONCECOUNT_PROCESSING_THREADS", "many"}})));
  EXPECT_EQ(e.subject(), "processing.threads");
  EXPECT_NE(e.message().find("ONCECOUNT_PROCESSING_THREADS"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("0..256"), std::string::npos) << e.message();
}

// Regression: a misspelt override was ignored, and the file's value used.
TEST(Config, RefusesAnOverrideThatNamesNoKeyOfItsSectionNamingTheVariable) {
  for (const std::string variable :
       {"ONCECOUNT_DEDUP_WINDOWMS", "ONCECOUNT_KAFKA_PROPERTIES_SECURITY_PROTOCOL",
        "ONCECOUNT_HTTP_LISTEN_ADDRESS", "ONCECOUNT_STATE_", "ONCECOUNT_PROCESSING_THREAD"}) {
    const base::Status checked = CheckOverrideNames({"PATH", variable});
    ASSERT_FALSE(checked.ok()) << variable;
    EXPECT_EQ(checked.error().subject(), variable);
    EXPECT_EQ(checked.error().code(), base::Errc::kBadConfig);
  }
  const base::Status checked = CheckOverrideNames({"ONCECOUNT_DEDUP_WINDOWMS"});
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message().find("did you mean ONCECOUNT_DEDUP_WINDOW_MS?"),
            std::string::npos)
      << checked.error().message();
}

// Regression: an override with its section left out or misspelt was ignored, and the
// file's value used (for bootstrap_servers: the embedded cluster).
TEST(Config, RefusesAnOverrideThatIsAKeyWithItsSectionLeftOutOrMisspelt) {
  const std::pair<const char*, const char*> cases[] = {
      {"ONCECOUNT_BOOTSTRAP_SERVERS", "ONCECOUNT_KAFKA_BOOTSTRAP_SERVERS"},
      {"ONCECOUNT_DEDUPE_WINDOW_MS", "ONCECOUNT_DEDUP_WINDOW_MS"},
      {"ONCECOUNT_PROCESS_THREADS", "ONCECOUNT_PROCESSING_THREADS"},
      {"ONCECOUNT_DIR", "ONCECOUNT_STATE_DIR"}};
  for (const auto& [variable, meant] : cases) {
    const base::Status checked = CheckOverrideNames({"PATH", variable});
    ASSERT_FALSE(checked.ok()) << variable;
    EXPECT_EQ(checked.error().subject(), variable);
    EXPECT_NE(checked.error().message().find(std::string("did you mean ") + meant + "?"),
              std::string::npos)
        << checked.error().message();
  }
}

TEST(Config, AcceptsEveryKeysOverrideAndVariablesThatAreNotOverrides) {
  // The tools' own variables among them (scripts/, CMake, tests).
  std::vector<std::string> names = {"PATH",
                                    "ONCECOUNT_BIN",
                                    "ONCECOUNT_BINARY",
                                    "ONCECOUNT_TEST_SCALE",
                                    "ONCECOUNT_TEST_DEDUP_FILTER",
                                    "ONCECOUNT_SOURCE_DIR",
                                    "ONCECOUNT_HEALTHZ_URL",
                                    "ONCECOUNT_DASHBOARD_HTML",
                                    "ONCECOUNT_FUZZ_TARGETS",
                                    "ONCECOUNT_TSAN",
                                    "ONCECOUNT_",
                                    "DEDUP_WINDOWMS"};
  const Config defaults = Ok(ParseConfig("", NoEnv()));
  const YAML::Node rendered = YAML::Load(RenderConfig(defaults));
  for (const auto& section : rendered) {
    for (const auto& key : section.second) {
      if (key.first.as<std::string>() == "properties") continue;
      std::string variable =
          "ONCECOUNT_" + section.first.as<std::string>() + "_" + key.first.as<std::string>();
      for (char& c : variable) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      names.push_back(variable);
    }
  }
  ASSERT_GT(names.size(), 25u);
  const base::Status checked = CheckOverrideNames(names);
  EXPECT_TRUE(checked.ok()) << (checked.ok() ? "" : checked.error().subject());
}

TEST(Config, RejectsAnUnknownKeyNamingIt) {
  EXPECT_EQ(Err(ParseConfig("dedup:\n  windw_ms: 5\n", NoEnv())).subject(), "dedup.windw_ms");
  EXPECT_EQ(Err(ParseConfig("dedupe:\n  window_ms: 5\n", NoEnv())).subject(), "dedupe");
}

// Regression: yaml-cpp keeps both entries of a key given twice, and the last won
// silently (a 600 s window written again as 60 ms was read as 60 ms).
TEST(Config, RejectsAKeySectionOrPropertyGivenTwiceNamingIt) {
  const auto twice = [](const std::string& yaml) { return Err(ParseConfig(yaml, NoEnv())); };
  const auto key = twice("dedup:\n  window_ms: 600000\n  window_ms: 60\n");
  EXPECT_EQ(key.subject(), "dedup.window_ms");
  EXPECT_NE(key.message().find("given twice"), std::string::npos) << key.message();
  EXPECT_EQ(twice("dedup:\n  window_ms: 600000\nhttp: {}\ndedup:\n  target_fpp: 0.01\n").subject(),
            "dedup");
  EXPECT_EQ(twice("kafka:\n  properties:\n    acks: all\n    acks: \"1\"\n").subject(),
            "kafka.properties.acks");
  EXPECT_EQ(twice("kafka:\n  properties: {}\n  properties: {}\n").subject(), "kafka.properties");
  EXPECT_TRUE(
      ParseConfig("dedup:\n  window_ms: 600000\nhttp:\n  listen: 127.0.0.1:0\n", NoEnv()).ok())
      << "the same key in two sections is two keys";
}

TEST(Config, RejectsWrongTypesNamingTheKeyAndWhatWasExpected) {
  struct Case {
    std::string yaml;
    const char* key;
    const char* expected;
  };
  const Case cases[] = {
      {"dedup:\n  window_ms: soon\n", "dedup.window_ms", "integer"},
      {"dedup:\n  window_ms: 1.5\n", "dedup.window_ms", "integer"},
      {"dedup:\n  adaptive: 1\n", "dedup.adaptive", "true or false"},
      {"dedup:\n  target_fpp: tiny\n", "dedup.target_fpp", "number"},
      {"dedup:\n  mode: bloomy\n", "dedup.mode",
       "expected fbf, bloom, exact or none, got \"bloomy\""},
      {"dedup:\n  check: all\n", "dedup.check", "expected pairs or paper, got \"all\""},
      {"dedup:\n  late_records: drop\n", "dedup.late_records",
       "expected apply or dead_letter, got \"drop\""},
      {"dedup:\n  window_ms: [1, 2]\n", "dedup.window_ms", "single value"},
      {"kafka:\n  properties: [a, b]\n", "kafka.properties", "mapping"},
      {"kafka:\n  properties:\n    sasl.username: [x]\n", "kafka.properties.sasl.username",
       "string"},
      {"kafka:\n  properties:\n    \"acks!\": all\n", "kafka.properties",
       "librdkafka property names"},
      {"kafka:\n  properties:\n    " + std::string(129, 'a') + ": x\n", "kafka.properties",
       "got one of 129 bytes"},
      {"kafka:\n  properties:\n    sasl.password: \"a\\x01b\"\n", "kafka.properties.sasl.password",
       "control characters"},
      {"http:\n  listen: 8080\n", "http.listen", "host:port"},
      {"http:\n  listen: localhost:70000\n", "http.listen", "0..65535"},
      // Regression: any host passed check-config, then serve could not bind a name.
      {"http:\n  listen: my-host:8080\n", "http.listen", "a name is not resolved"},
      {"http:\n  listen: 127.0.0.1:80abc\n", "http.listen", "0..65535"},
      {"kafka:\n  input_topic: \"bad topic\"\n", "kafka.input_topic", "topic name"},
      {"kafka:\n  group_id: \"\"\n", "kafka.group_id", "non-empty"},
  };
  for (const Case& c : cases) {
    const base::Error e = Err(ParseConfig(c.yaml, NoEnv()));
    EXPECT_EQ(e.subject(), c.key) << c.yaml;
    EXPECT_NE(e.message().find(c.expected), std::string::npos) << c.yaml << " -> " << e.message();
  }
}

TEST(Config, RejectsOutOfRangeValuesNamingTheKey) {
  EXPECT_EQ(Err(ParseConfig("dedup:\n  window_ms: 0\n", NoEnv())).subject(), "dedup.window_ms");
  EXPECT_EQ(Err(ParseConfig("dedup:\n  window_ms: -5\n", NoEnv())).subject(), "dedup.window_ms");
  EXPECT_EQ(Err(ParseConfig("dedup:\n  target_fpp: 0\n", NoEnv())).subject(), "dedup.target_fpp");
  EXPECT_EQ(Err(ParseConfig("dedup:\n  target_fpp: 1\n", NoEnv())).subject(), "dedup.target_fpp");
  EXPECT_EQ(Err(ParseConfig("dedup:\n  expected_rate: -1\n", NoEnv())).subject(),
            "dedup.expected_rate");
  EXPECT_EQ(Err(ParseConfig("processing:\n  commit_interval_ms: 0\n", NoEnv())).subject(),
            "processing.commit_interval_ms");
  EXPECT_EQ(Err(ParseConfig("processing:\n  standby_replicas: 9\n", NoEnv())).subject(),
            "processing.standby_replicas");
  EXPECT_EQ(Err(ParseConfig("dedup:\n  max_filter_mib: 0\n", NoEnv())).subject(),
            "dedup.max_filter_mib");
}

// The filter's first size must fit its memory bound, or every shard would fail at
// its first adoption: refused at start, naming the key, in every bounded mode.
TEST(Config, RejectsAMemoryBoundBelowTheFiltersFirstSize) {
  for (const char* mode :
       {"mode: fbf\n  filter: bloom", "mode: fbf\n  filter: fingerprint", "mode: exact"}) {
    SCOPED_TRACE(mode);
    const std::string yaml =
        std::string("dedup:\n  ") + mode + "\n  expected_rate: 50000\n  max_filter_mib: 1\n";
    const base::Error e = Err(ParseConfig(yaml, NoEnv()));
    EXPECT_EQ(e.subject(), "dedup.max_filter_mib");
    EXPECT_NE(e.message().find("memory bound"), std::string::npos) << e.message();
    Ok(ParseConfig(std::string("dedup:\n  ") + mode + "\n  expected_rate: 50000\n", NoEnv()));
  }
}

TEST(Config, RejectsAWindowTheFilterCannotHold) {
  // A day at a million events per second per shard: far beyond one shard's memory.
  const base::Error e =
      Err(ParseConfig("dedup:\n  window_ms: 86400000\n  expected_rate: 1000000\n", NoEnv()));
  EXPECT_EQ(e.subject(), "dedup.window_ms");
  EXPECT_NE(e.message().find("GiB"), std::string::npos) << e.message();
  const base::Error exact = Err(ParseConfig(
      "dedup:\n  mode: exact\n  window_ms: 86400000\n  expected_rate: 100000\n", NoEnv()));
  EXPECT_EQ(exact.subject(), "dedup.window_ms");
  // The same window without dedup holds nothing and is accepted.
  Ok(ParseConfig("dedup:\n  mode: none\n  window_ms: 86400000\n  expected_rate: 1000000\n",
                 NoEnv()));
}

TEST(Config, AcceptsGaussianConstituentFiltersWithTheirCellBits) {
  const Config c = Ok(ParseConfig("dedup:\n  filter: gaussian\n  cell_bits: 4\n", NoEnv()));
  EXPECT_EQ(c.dedup.filter, filter::Constituent::kGaussian);
  EXPECT_EQ(c.dedup.cell_bits, 4);
  EXPECT_NE(RenderConfig(c).find("filter: gaussian"), std::string::npos);
  EXPECT_EQ(Ok(ParseConfig("", NoEnv())).dedup.cell_bits, 8);
}

TEST(Config, RejectsCellBitsOtherThanFourEightOrSixtyFour) {
  for (const char* bits : {"3", "16", "0", "x"}) {
    const base::Error e = Err(ParseConfig(
        std::string("dedup:\n  filter: gaussian\n  cell_bits: ") + bits + "\n", NoEnv()));
    EXPECT_EQ(e.subject(), "dedup.cell_bits");
  }
}

TEST(Config, RejectsAnUnknownConstituentFilter) {
  EXPECT_EQ(Err(ParseConfig("dedup:\n  filter: cuckoo\n", NoEnv())).subject(), "dedup.filter");
}

TEST(Config, ReportsYamlThatDoesNotParse) {
  const base::Error e = Err(ParseConfig("dedup: [unclosed\n", NoEnv(), "broken.yaml"));
  EXPECT_TRUE(e.subject().empty());
  EXPECT_NE(e.message().find("broken.yaml"), std::string::npos) << e.message();
  EXPECT_FALSE(Err(ParseConfig("- a\n- b\n", NoEnv())).message().empty());
}

TEST(Config, ReportsAFileThatCannotBeRead) {
  const base::Error e = Err(LoadConfigFile("/nonexistent/oncecount.yaml", NoEnv()));
  EXPECT_NE(e.message().find("/nonexistent/oncecount.yaml"), std::string::npos);
}

TEST(Config, RendersAConfigurationThatParsesBackToItself) {
  const Config c = Ok(ParseConfig(
      "kafka:\n  properties:\n    client.id: \"a: b\"\ndedup:\n  target_fpp: 0.001\n", NoEnv()));
  const std::string rendered = RenderConfig(c);
  EXPECT_EQ(RenderConfig(Ok(ParseConfig(rendered, NoEnv()))), rendered);
  EXPECT_NE(rendered.find("dlq_topic: events.dlq"), std::string::npos) << rendered;
}

}  // namespace
}  // namespace oncecount::config
