#include "config/config.h"

#include <unistd.h>  // environ
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "processor/base/enum_names.h"
#include "processor/base/kafka_name.h"
#include "processor/base/listen_address.h"
#include "processor/changelog/changelog_record.h"
#include "processor/filter/bloom/sizing.h"
#include "processor/filter/fingerprint/fingerprint_sizing.h"
#include "processor/kafka/service_owned_properties.h"

namespace oncecount::config {
namespace {

using Setter = std::function<base::Status(Config&, const std::string&)>;

// A value a key refuses; the caller names the key.
base::Error Refused(std::string message) {
  return base::Error(base::Errc::kBadConfig, std::move(message));
}

struct Key {
  std::string section;
  std::string name;
  Setter set;
  std::string dotted() const { return section + "." + name; }
  std::string env() const {
    std::string e = "ONCECOUNT_" + section + "_" + name;
    for (char& c : e) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return e;
  }
};

base::Status ParseInt(const std::string& v, int64_t lo, int64_t hi, int64_t& out) {
  int64_t parsed = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size() || parsed < lo || parsed > hi) {
    return Refused("expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
                   ", got \"" + v + "\"");
  }
  out = parsed;
  return {};
}

// (lo, hi] when lo_open, [lo, hi] otherwise.
base::Status ParseDouble(const std::string& v, double lo, double hi, bool lo_open,
                         const std::string& range, double& out) {
  char* end = nullptr;
  const double parsed = v.empty() ? std::nan("") : std::strtod(v.c_str(), &end);
  const bool in_range = lo_open ? parsed > lo && parsed <= hi : parsed >= lo && parsed <= hi;
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(parsed) || !in_range) {
    return Refused("expected a number in " + range + ", got \"" + v + "\"");
  }
  out = parsed;
  return {};
}

base::Status ParseBool(const std::string& v, bool& out) {
  if (v == "true") {
    out = true;
  } else if (v == "false") {
    out = false;
  } else {
    return Refused("expected true or false, got \"" + v + "\"");
  }
  return {};
}

template <typename E, size_t N>
base::Status ParseEnum(const std::string& v, const std::array<base::EnumName<E>, N>& names,
                       E& out) {
  if (const std::optional<E> value = base::ParseName(names, v)) {
    out = *value;
    return {};
  }
  return Refused(base::ExpectedOneOf(names, v));
}

// The dedup modes and membership checks the service runs (filter-eval's experiments
// take the rest).
constexpr auto kServiceModes =
    base::Subset(filter::kDedupModeNames, {filter::DedupMode::kFbf, filter::DedupMode::kBloom,
                                           filter::DedupMode::kExact, filter::DedupMode::kNone});
constexpr auto kServiceChecks =
    base::Subset(filter::kMembershipCheckNames,
                 {filter::MembershipCheck::kPairs, filter::MembershipCheck::kPaper});

base::Status NonEmpty(const std::string& v, std::string& out) {
  if (v.empty()) return Refused("expected a non-empty string");
  out = v;
  return {};
}

// A consumer group id, which every claim names: at most what a claim holds.
base::Status GroupId(const std::string& v, bool allow_empty, std::string& out) {
  if (v.empty() && !allow_empty) return Refused("expected a non-empty string");
  if (v.size() > changelog::kMaxGroupIdBytes) {
    return Refused("expected at most " + std::to_string(changelog::kMaxGroupIdBytes) +
                   " bytes, got " + std::to_string(v.size()));
  }
  out = v;
  return {};
}

// A topic name the broker takes (base::KafkaNameProblem).
base::Status TopicName(const std::string& v, bool allow_empty, std::string& out) {
  if (v.empty() && allow_empty) {
    out.clear();
    return {};
  }
  if (const std::string problem = base::KafkaNameProblem(v); !problem.empty()) {
    return Refused("expected a Kafka topic name, got \"" + v + "\": it " + problem);
  }
  out = v;
  return {};
}

// base::ParseListenAddress's: what the HTTP server can bind.
base::Status ListenAddress(const std::string& v, std::string& out) {
  base::Result<base::ListenAddress> parsed = base::ParseListenAddress(v);
  if (!parsed) return Refused(parsed.message());
  out = v;
  return {};
}

const std::vector<Key>& Schema() {
  static const std::vector<Key> keys = {
      {"kafka", "bootstrap_servers",
       [](Config& c, const std::string& v) { return NonEmpty(v, c.kafka.bootstrap_servers); }},
      {"kafka", "input_topic",
       [](Config& c, const std::string& v) { return TopicName(v, false, c.kafka.input_topic); }},
      {"kafka", "dlq_topic",
       [](Config& c, const std::string& v) { return TopicName(v, true, c.kafka.dlq_topic); }},
      {"kafka", "group_id",
       [](Config& c, const std::string& v) { return GroupId(v, false, c.kafka.group_id); }},
      {"kafka", "previous_group_id",
       [](Config& c, const std::string& v) { return GroupId(v, true, c.kafka.previous_group_id); }},
      {"kafka", "transaction_timeout_ms",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 1000, 900000, c.kafka.transaction_timeout_ms);
       }},
      {"kafka", "transaction_abort_interval_ms",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 1, 3600000, c.kafka.transaction_abort_interval_ms);
       }},
      {"kafka", "static_membership",
       [](Config& c, const std::string& v) { return ParseBool(v, c.kafka.static_membership); }},
      {"kafka", "leave_group_on_stop",
       [](Config& c, const std::string& v) { return ParseBool(v, c.kafka.leave_group_on_stop); }},
      {"kafka", "changelog_retention_bytes",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 0, int64_t{1} << 50, c.kafka.changelog_retention_bytes);
       }},
      {"processing", "commit_interval_ms",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 1, 60000, c.processing.commit_interval_ms);
       }},
      {"processing", "standby_replicas",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 0, 8, c.processing.standby_replicas);
       }},
      {"processing", "threads",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 256, c.processing.threads); }},
      {"dedup", "mode",
       [](Config& c, const std::string& v) { return ParseEnum(v, kServiceModes, c.dedup.mode); }},
      {"dedup", "window_ms",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 1, filter::kMaxPeriod.count(), c.dedup.window_ms);
       }},
      {"dedup", "timestamp_tolerance_ms",
       [](Config& c, const std::string& v) {
         return ParseInt(v, 0, 3'600'000, c.dedup.timestamp_tolerance_ms);
       }},
      {"dedup", "late_records",
       [](Config& c, const std::string& v) {
         return ParseEnum(v, shard::kLatePolicyNames, c.dedup.late_records);
       }},
      {"dedup", "target_fpp",
       [](Config& c, const std::string& v) {
         return ParseDouble(v, 0, 0.5, true, "(0, 0.5]", c.dedup.target_fpp);
       }},
      {"dedup", "expected_rate",
       [](Config& c, const std::string& v) {
         return ParseDouble(v, 0, 1e9, true, "(0, 1e9]", c.dedup.expected_rate);
       }},
      {"dedup", "adaptive",
       [](Config& c, const std::string& v) { return ParseBool(v, c.dedup.adaptive); }},
      {"dedup", "check",
       [](Config& c, const std::string& v) { return ParseEnum(v, kServiceChecks, c.dedup.check); }},
      {"dedup", "filter",
       [](Config& c, const std::string& v) {
         return ParseEnum(v, filter::kConstituentNames, c.dedup.filter);
       }},
      {"dedup", "max_filter_mib",
       [](Config& c, const std::string& v) {
         constexpr auto kMostMib = static_cast<int64_t>(filter::kMaxMemoryLimitBytes >> 20);
         return ParseInt(v, 1, kMostMib, c.dedup.max_filter_mib);
       }},
      {"dedup", "cell_bits",
       [](Config& c, const std::string& v) -> base::Status {
         int64_t bits = 0;
         if (!ParseInt(v, 4, 64, bits).ok() || (bits != 4 && bits != 8 && bits != 64)) {
           return Refused("expected 4, 8 or 64, got \"" + v + "\"");
         }
         c.dedup.cell_bits = bits;
         return {};
       }},
      {"http", "listen",
       [](Config& c, const std::string& v) { return ListenAddress(v, c.http.listen); }},
      {"state", "dir", [](Config& c, const std::string& v) { return NonEmpty(v, c.state.dir); }},
  };
  return keys;
}

const Key* FindKey(const std::string& section, const std::string& name) {
  for (const Key& k : Schema()) {
    if (k.section == section && k.name == name) return &k;
  }
  return nullptr;
}

// Levenshtein's distance, for naming the key a misspelt override meant.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substituted = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substituted, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

bool KnownSection(const std::string& section) {
  for (const Key& k : Schema()) {
    if (k.section == section) return true;
  }
  return false;
}

// The largest filter state one shard may need before start-up refuses it.
constexpr double kMaxShardFilterBytes = 16.0 * (uint64_t{1} << 30);

// A configuration error about `key` ("dedup.window_ms"; empty when the file itself
// is the problem).
base::Error BadConfig(std::string key, std::string message) {
  return base::Error(base::Errc::kBadConfig, std::move(message), std::move(key));
}

// Checks that the dedup filter can hold the configured window at the expected rate,
// without building it.
base::Status CheckDedupFeasible(const DedupConfig& d) {
  const int64_t window_ms = d.window_ms + d.timestamp_tolerance_ms;
  const double ids = d.expected_rate * static_cast<double>(window_ms) / 1000.0;
  double bytes = 0;
  switch (d.mode) {
    case filter::DedupMode::kNone:
      return {};
    case filter::DedupMode::kExact:
      bytes = ids * 32;  // table at load 1/2 plus the expiry FIFO
      break;
    case filter::DedupMode::kBloom:
    case filter::DedupMode::kGaussian: {
      auto size = filter::SizeBloom(ids, d.target_fpp);
      if (!size) return BadConfig("dedup.window_ms", size.message());
      bytes = static_cast<double>(size->bits) / 8;
      break;
    }
    case filter::DedupMode::kFbf: {
      if (d.filter == filter::Constituent::kFingerprint) {
        auto sized = filter::SizeFingerprintFilter(
            {d.expected_rate, filter::Millis{window_ms}, d.target_fpp});
        if (!sized) {
          return BadConfig("dedup.window_ms",
                           "the filter cannot hold this window: " + sized.message());
        }
        // One plane: every slice of the ring, 64 bytes a group.
        bytes = static_cast<double>(sized->groups) * 64;
        break;
      }
      auto fbf =
          filter::SizeFbf({d.expected_rate, filter::Millis{window_ms}, d.target_fpp, d.check});
      if (!fbf) {
        return BadConfig("dedup.window_ms", "the filter cannot hold this window: " + fbf.message());
      }
      const uint32_t filters =
          fbf->past_filters + (d.check == filter::MembershipCheck::kPairs ? 3 : 2);
      bytes = static_cast<double>(fbf->bits_per_filter) / 8 * filters;
      // Gaussian constituents: as many cells as the blocked filters have bits.
      if (d.filter == filter::Constituent::kGaussian) bytes *= static_cast<double>(d.cell_bits);
      break;
    }
  }
  if (bytes > kMaxShardFilterBytes) {
    std::ostringstream msg;
    msg << "a window of " << d.window_ms << " ms at dedup.expected_rate " << d.expected_rate
        << " ids/s needs " << bytes / (uint64_t{1} << 30)
        << " GiB of filter state per shard (at most " << kMaxShardFilterBytes / (uint64_t{1} << 30)
        << " GiB); shorten the window or lower the rate";
    return BadConfig("dedup.window_ms", msg.str());
  }
  if (base::Status s = filter::CheckMemoryBound(DedupSpecOf(d)); !s) {
    return BadConfig("dedup.max_filter_mib",
                     s.message() + "; raise dedup.max_filter_mib or lower dedup.expected_rate");
  }
  return {};
}

// The topics named after the input topic (<input>.changelog, .members, and .dlq unless
// kafka.dlq_topic is set) must be topic names too: at most 249 characters.
base::Status CheckDerivedTopics(const KafkaConfig& k) {
  for (const std::string& derived : {k.ChangelogTopic(), k.MembersTopic(), k.EffectiveDlqTopic()}) {
    if (derived.size() <= base::kMaxKafkaNameChars) continue;
    const bool dlq = derived == k.EffectiveDlqTopic() && k.dlq_topic.empty();
    return BadConfig("kafka.input_topic",
                     "the topic it implies, " + derived + ", is longer than " +
                         std::to_string(base::kMaxKafkaNameChars) + " characters" +
                         (dlq ? "; set kafka.dlq_topic or shorten the input topic's name"
                              : "; shorten the input topic's name"));
  }
  return {};
}

// Kafka refuses a topic whose name differs from an existing one only in '.' against
// '_' (their metrics' names would collide): such names are one topic to the cluster.
std::string CollisionName(std::string topic) {
  for (char& c : topic) {
    if (c == '.') c = '_';
  }
  return topic;
}

// Each topic the service reads or writes must be its own. A dead-letter topic that is
// the input feeds its records back as events (a late record set aside, with a new
// timestamp, counted after all; a malformed one dead-lettered for ever); one that is
// the changelog or the members topic fills it with records its readers cannot read.
// A previous group that is the group names no rename.
base::Status CheckDistinctNames(const KafkaConfig& k) {
  const std::string dlq = k.EffectiveDlqTopic();
  const std::pair<std::string, std::string> others[] = {{k.input_topic, "the input topic"},
                                                        {k.ChangelogTopic(), "the changelog"},
                                                        {k.MembersTopic(), "the members topic"}};
  for (const auto& [topic, role] : others) {
    if (CollisionName(dlq) != CollisionName(topic)) continue;
    return BadConfig(
        "kafka.dlq_topic",
        "\"" + dlq + "\" is " + (dlq == topic ? "" : "(to Kafka, which reads '.' as '_') ") + role +
            " (\"" + topic + "\"): the service's dead letters would go into " +
            "a topic it reads; give it its own name (by default " + k.input_topic + ".dlq)");
  }
  if (!k.previous_group_id.empty() && k.previous_group_id == k.group_id) {
    return BadConfig("kafka.previous_group_id",
                     "is kafka.group_id (\"" + k.group_id +
                         "\"): it names the group a deployment was renamed from; leave it unset "
                         "unless the group was renamed");
  }
  return {};
}

// librdkafka's defaults for the group timings the rule below reads.
constexpr int64_t kDefaultSessionTimeoutMs = 45000;
constexpr int64_t kDefaultHeartbeatIntervalMs = 3000;

// librdkafka's property names ("session.timeout.ms"): short, and plain enough that the
// rendered configuration reads back (YAML limits a plain key to 1024 characters).
bool IsPropertyName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
}

// Well-formed UTF-8 (RFC 3629): no overlong form, surrogate or code point past
// U+10FFFF. yaml-cpp passes other bytes through as they are, and its emitter reads
// an overlong form as the character it spells ("\xc0\x80": U+0000), so a value the
// checks here took could render as one they refuse.
bool IsUtf8(std::string_view value) {
  for (size_t i = 0; i < value.size();) {
    const auto b = static_cast<unsigned char>(value[i]);
    size_t length = 0;
    uint32_t code = 0;
    uint32_t least = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xe0) == 0xc0) {
      length = 2, code = b & 0x1f, least = 0x80;
    } else if ((b & 0xf0) == 0xe0) {
      length = 3, code = b & 0x0f, least = 0x800;
    } else if ((b & 0xf8) == 0xf0) {
      length = 4, code = b & 0x07, least = 0x10000;
    } else {
      return false;
    }
    if (i + length > value.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto c = static_cast<unsigned char>(value[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      code = (code << 6) | (c & 0x3f);
    }
    if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

bool HasControlCharacter(std::string_view value) {
  return std::any_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// A group timing from kafka.properties (librdkafka's default when absent), within
// librdkafka's range for both (1 ms to an hour): the sum it goes into cannot overflow.
base::Status GroupTiming(const KafkaConfig& k, const std::string& name, int64_t fallback,
                         int64_t& value) {
  const auto it = k.properties.find(name);
  if (it == k.properties.end()) {
    value = fallback;
    return {};
  }
  if (base::Status s = ParseInt(it->second, 1, 3'600'000, value); !s) {
    return BadConfig("kafka.properties." + name, s.message());
  }
  return {};
}

// Only a static member can stay in the group once it stops (librdkafka closes a
// dynamic one with a LeaveGroup), and group.instance.id is the service's to set.
base::Status CheckMembership(const KafkaConfig& k) {
  if (!k.leave_group_on_stop && !k.static_membership) {
    return BadConfig("kafka.leave_group_on_stop",
                     "false needs kafka.static_membership: true (a dynamic member always "
                     "leaves the group when it stops)");
  }
  if (k.properties.contains("group.instance.id")) {
    return BadConfig("kafka.properties.group.instance.id",
                     "set by the service from the instance id (--instance-id) when "
                     "kafka.static_membership is true; remove it");
  }
  for (const auto& [name, value] : k.properties) {
    if (kafka::IsServiceOwnedProperty(name)) {
      return BadConfig("kafka.properties." + name,
                       "set by the service (exactly-once depends on it, or a key of the "
                       "service's sets it); remove it");
    }
  }
  return {};
}

// Where (the line, from 1) a second YAML document begins, if one does. yaml-cpp's
// Load reads the first document and drops the rest without a word, so a setting after
// a "---" would not be applied; its LoadAll would tell, but loops for ever on some
// malformed input, where the parser makes one empty document after another without
// moving on. Asking its parser for two documents tells both cases apart from a
// file of one. Throws what the parser throws.
std::optional<size_t> SecondDocumentLine(const std::string& yaml) {
  struct Ignore : YAML::EventHandler {
    void OnDocumentStart(const YAML::Mark& mark) override { line = mark.line + 1; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
    size_t line = 0;
  };
  std::istringstream stream(yaml);
  YAML::Parser parser(stream);
  Ignore first, second;
  parser.HandleNextDocument(first);
  if (!parser.HandleNextDocument(second)) return std::nullopt;
  return std::max<size_t>(second.line, 1);
}

base::Result<Config> Parse(const std::string& yaml, const EnvLookup& env,
                           const std::string& source) {
  Config config;
  YAML::Node root;
  try {
    // YAML::Load reads the first document and drops the rest without a word: a
    // setting after a "---" would not be applied. (YAML::LoadAll would tell, but it
    // loops for ever on some malformed input.)
    if (const std::optional<size_t> line = SecondDocumentLine(yaml)) {
      return BadConfig("", source + ": line " + std::to_string(*line) +
                               " starts a second YAML document (or text yaml-cpp cannot "
                               "read as one); give every setting in one (no \"---\" or "
                               "\"...\" between them)");
    }
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return BadConfig("", source + ": not valid YAML: " + e.what());
  }
  if (root && !root.IsNull()) {
    if (!root.IsMap()) return BadConfig("", source + ": expected a mapping of sections");
    // yaml-cpp keeps every entry of a key given twice; applied in turn, the last would
    // win without a word, though YAML requires keys to be unique.
    std::set<std::string> given;
    const auto given_twice = [&given](const std::string& dotted) {
      return !given.insert(dotted).second;
    };
    for (const auto& section : root) {
      const std::string name = section.first.as<std::string>();
      if (given_twice(name)) return BadConfig(name, "section given twice");
      if (!KnownSection(name)) {
        return BadConfig(name,
                         "unknown section (expected kafka, processing, dedup, http or state)");
      }
      if (section.second.IsNull()) continue;
      if (!section.second.IsMap()) return BadConfig(name, "expected a mapping of keys");
      for (const auto& entry : section.second) {
        const std::string key = entry.first.as<std::string>();
        const std::string dotted = name + "." + key;
        if (given_twice(dotted)) return BadConfig(dotted, "key given twice");
        if (name == "kafka" && key == "properties") {
          if (entry.second.IsNull()) continue;
          if (!entry.second.IsMap()) return BadConfig(dotted, "expected a mapping of strings");
          for (const auto& property : entry.second) {
            const std::string property_name = property.first.as<std::string>();
            if (!IsPropertyName(property_name)) {
              return BadConfig(dotted,
                               "expected librdkafka property names (1 to 128 of a-z, A-Z, 0-9, "
                               "'.', '_', '-'), got one of " +
                                   std::to_string(property_name.size()) + " bytes");
            }
            if (given_twice(dotted + "." + property_name)) {
              return BadConfig(dotted + "." + property_name, "property given twice");
            }
            if (!property.second.IsScalar()) {
              return BadConfig(dotted + "." + property_name, "expected a string");
            }
            if (!IsUtf8(property.second.Scalar())) {
              return BadConfig(dotted + "." + property_name, "expected UTF-8 text");
            }
            if (HasControlCharacter(property.second.Scalar())) {
              return BadConfig(dotted + "." + property_name,
                               "expected a string without control characters");
            }
            config.kafka.properties[property_name] = property.second.Scalar();
          }
          continue;
        }
        const Key* k = FindKey(name, key);
        if (k == nullptr) return BadConfig(dotted, "unknown key");
        if (!entry.second.IsScalar()) return BadConfig(dotted, "expected a single value");
        if (!IsUtf8(entry.second.Scalar())) return BadConfig(dotted, "expected UTF-8 text");
        if (base::Status set = k->set(config, entry.second.Scalar()); !set.ok()) {
          return BadConfig(dotted, set.message());
        }
      }
    }
  }
  for (const Key& k : Schema()) {
    const auto value = env(k.env());
    if (!value) continue;
    if (!IsUtf8(*value)) return BadConfig(k.dotted(), "expected UTF-8 text (from " + k.env() + ")");
    if (base::Status set = k.set(config, *value); !set.ok()) {
      return BadConfig(k.dotted(), set.message() + " (from " + k.env() + ")");
    }
  }
  if (base::Status feasible = CheckDedupFeasible(config.dedup); !feasible) {
    return std::move(feasible).error();
  }
  if (base::Status derived = CheckDerivedTopics(config.kafka); !derived) {
    return std::move(derived).error();
  }
  if (base::Status distinct = CheckDistinctNames(config.kafka); !distinct) {
    return std::move(distinct).error();
  }
  if (base::Status fencing = CheckZombieFencing(config.kafka); !fencing) {
    return std::move(fencing).error();
  }
  if (base::Status membership = CheckMembership(config.kafka); !membership) {
    return std::move(membership).error();
  }
  return config;
}

// The shortest text that reads back as the same double ("1e-06", not
// "9.9999999999999995e-07").
std::string ShortestDouble(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

// A member frozen (SIGSTOP, a paused VM) in the middle of a commit whose offsets the
// broker already accepted must be fenced before the group gives its shards to
// another member: else its queued records and its commit land after the new owner's
// claim, and what it applied or dead-lettered is written twice. The coordinator
// fences it when it aborts the transaction, by transaction timeout + abort interval
// after the transaction began; the group lets it go by session timeout after its
// last heartbeat, which may be a heartbeat interval before the transaction began.
base::Status CheckZombieFencing(const KafkaConfig& k) {
  int64_t session_ms = 0;
  int64_t heartbeat_ms = 0;
  if (base::Status s = GroupTiming(k, "session.timeout.ms", kDefaultSessionTimeoutMs, session_ms);
      !s) {
    return s;
  }
  if (base::Status s =
          GroupTiming(k, "heartbeat.interval.ms", kDefaultHeartbeatIntervalMs, heartbeat_ms);
      !s) {
    return s;
  }
  const int64_t fenced_by_ms =
      k.transaction_timeout_ms + k.transaction_abort_interval_ms + heartbeat_ms;
  if (fenced_by_ms < session_ms) return {};
  return BadConfig(
      "kafka.transaction_timeout_ms",
      "kafka.transaction_timeout_ms (" + std::to_string(k.transaction_timeout_ms) +
          ") + kafka.transaction_abort_interval_ms (" +
          std::to_string(k.transaction_abort_interval_ms) +
          ", the brokers' transaction.abort.timed.out.transaction.cleanup.interval.ms) + "
          "heartbeat.interval.ms (" +
          std::to_string(heartbeat_ms) + ") must stay below session.timeout.ms (" +
          std::to_string(session_ms) +
          ", kafka.properties; librdkafka's default 45000): otherwise an instance frozen "
          "longer than its session (SIGSTOP, a paused VM) commits after another instance "
          "took its shards over, and what it applied is counted twice. Lower "
          "kafka.transaction_timeout_ms or raise session.timeout.ms");
}

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

base::Result<Config> ParseConfig(const std::string& yaml, const EnvLookup& env,
                                 const std::string& source) {
  // The module's edge: yaml-cpp reports problems by exceptions.
  try {
    return Parse(yaml, env, source);
  } catch (const YAML::Exception& e) {
    return BadConfig("", source + ": " + e.what());
  }
}

base::Result<Config> LoadConfigFile(const std::string& path, const EnvLookup& env) {
  std::ifstream in(path);
  if (!in) return BadConfig("", "cannot read the configuration file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseConfig(text.str(), env, path);
}

// The key an override outside every section's prefix meant: `rest` (what follows
// ONCECOUNT_) is a key's name without its section, or a key's variable with its
// section misspelt by at most two letters or cut short.
const Key* KeyMeantWithoutItsSection(std::string_view rest) {
  const auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string_view first = rest.substr(0, rest.find('_'));
  const std::string_view after_first =
      rest.find('_') == std::string_view::npos ? "" : rest.substr(rest.find('_') + 1);
  for (const Key& k : Schema()) {
    const std::string name = upper(k.name);
    if (rest == name) return &k;
    if (after_first != name) continue;
    const std::string section = upper(k.section);
    const bool cut_short = first.size() >= 3 && section.starts_with(first);  // PROCESS
    if (cut_short || EditDistance(first, section) <= 2) return &k;
  }
  return nullptr;
}

base::Status CheckOverrideNames(const std::vector<std::string>& variable_names) {
  static constexpr std::string_view kPrefix = "ONCECOUNT_";
  for (const std::string& variable : variable_names) {
    if (!variable.starts_with(kPrefix)) continue;
    const Key* nearest = nullptr;  // of the keys in the section the variable names
    size_t nearest_distance = 0;
    bool is_key = false;
    for (const Key& k : Schema()) {
      const std::string env = k.env();
      if (env == variable) {
        is_key = true;
        break;
      }
      const std::string section_prefix = env.substr(0, kPrefix.size() + k.section.size() + 1);
      if (!variable.starts_with(section_prefix)) continue;
      const size_t distance = EditDistance(env, variable);
      if (nearest == nullptr || distance < nearest_distance) {
        nearest = &k;
        nearest_distance = distance;
      }
    }
    if (is_key) continue;
    if (nearest != nullptr) {
      return BadConfig(variable, "names no key of the " + nearest->section +
                                     " section (did you mean " + nearest->env() +
                                     "? kafka.properties are set in the file only)");
    }
    // Outside every section's prefix, ONCECOUNT_ variables are the tools' own
    // (ONCECOUNT_BIN, ONCECOUNT_TEST_SCALE...), unless the variable is plainly a key
    // whose section was left out (ONCECOUNT_BOOTSTRAP_SERVERS) or misspelt
    // (ONCECOUNT_DEDUPE_WINDOW_MS): ignoring those would run on the file's values.
    if (const Key* meant = KeyMeantWithoutItsSection(variable.substr(kPrefix.size()))) {
      return BadConfig(variable, "names no key (did you mean " + meant->env() + "?)");
    }
  }
  return {};
}

std::vector<std::string> ProcessEnvironmentNames() {
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

base::Result<Config> LoadConfigFileWithProcessEnvironment(const std::string& path) {
  if (base::Status names = CheckOverrideNames(ProcessEnvironmentNames()); !names) {
    return std::move(names).error();
  }
  return LoadConfigFile(path, ProcessEnvironment());
}

std::string RenderConfig(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "kafka" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "bootstrap_servers" << YAML::Value << c.kafka.bootstrap_servers;
  out << YAML::Key << "input_topic" << YAML::Value << c.kafka.input_topic;
  out << YAML::Key << "dlq_topic" << YAML::Value << c.kafka.EffectiveDlqTopic();
  out << YAML::Key << "group_id" << YAML::Value << c.kafka.group_id;
  out << YAML::Key << "previous_group_id" << YAML::Value << c.kafka.previous_group_id;
  out << YAML::Key << "transaction_timeout_ms" << YAML::Value << c.kafka.transaction_timeout_ms;
  out << YAML::Key << "transaction_abort_interval_ms" << YAML::Value
      << c.kafka.transaction_abort_interval_ms;
  out << YAML::Key << "static_membership" << YAML::Value << c.kafka.static_membership;
  out << YAML::Key << "leave_group_on_stop" << YAML::Value << c.kafka.leave_group_on_stop;
  out << YAML::Key << "changelog_retention_bytes" << YAML::Value
      << c.kafka.changelog_retention_bytes;
  out << YAML::Key << "properties" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : c.kafka.properties) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "processing" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "commit_interval_ms" << YAML::Value << c.processing.commit_interval_ms;
  out << YAML::Key << "standby_replicas" << YAML::Value << c.processing.standby_replicas;
  out << YAML::Key << "threads" << YAML::Value << c.processing.threads;
  out << YAML::EndMap;
  out << YAML::Key << "dedup" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "mode" << YAML::Value << filter::ModeName(c.dedup.mode);
  out << YAML::Key << "window_ms" << YAML::Value << c.dedup.window_ms;
  out << YAML::Key << "timestamp_tolerance_ms" << YAML::Value << c.dedup.timestamp_tolerance_ms;
  out << YAML::Key << "late_records" << YAML::Value
      << base::NameOf(shard::kLatePolicyNames, c.dedup.late_records);
  out << YAML::Key << "target_fpp" << YAML::Value << ShortestDouble(c.dedup.target_fpp);
  out << YAML::Key << "expected_rate" << YAML::Value << ShortestDouble(c.dedup.expected_rate);
  out << YAML::Key << "adaptive" << YAML::Value << c.dedup.adaptive;
  out << YAML::Key << "check" << YAML::Value << filter::CheckName(c.dedup.check);
  out << YAML::Key << "filter" << YAML::Value
      << base::NameOf(filter::kConstituentNames, c.dedup.filter);
  out << YAML::Key << "cell_bits" << YAML::Value << c.dedup.cell_bits;
  out << YAML::Key << "max_filter_mib" << YAML::Value << c.dedup.max_filter_mib;
  out << YAML::EndMap;
  out << YAML::Key << "http" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.http.listen << YAML::EndMap;
  out << YAML::Key << "state" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "dir" << YAML::Value << c.state.dir << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

filter::DedupSpec DedupSpecOf(const DedupConfig& dedup) {
  filter::DedupSpec spec;
  spec.mode = dedup.mode;
  spec.check = dedup.check;
  spec.expected_rate = dedup.expected_rate;
  spec.window = filter::Millis{dedup.window_ms + dedup.timestamp_tolerance_ms};
  spec.target_fpp = dedup.target_fpp;
  spec.adaptive = dedup.adaptive;
  spec.constituent = dedup.filter;
  spec.cell_bits = static_cast<uint32_t>(dedup.cell_bits);
  spec.memory_limit_bytes = static_cast<uint64_t>(dedup.max_filter_mib) << 20;
  return spec;
}

}  // namespace oncecount::config
