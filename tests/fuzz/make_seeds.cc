// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the
// encoders themselves, so that every seed is something a real writer produces:
// events, changelog records of each kind, a member record, the state of each
// dedup mode, a shard snapshot, a local checkpoint, request targets and configs.
// The snapshot target also gets a snapshot with its body unpacked
// (shard_snapshot_fuzz.cc). Built with the tests (not a fuzz target); scripts/fuzz
// --seeds runs it. Seeds of older formats that the decoders still read (format3-* to format5-*,
// version2-*, snapshot2-*, format2-*, layout1-*: what earlier releases wrote) stay beside these;
// it leaves them alone.
//
// Usage: make_seeds CORPUS_DIR CONFIG_YAML
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/filter/experiments/experiment_filters.h"
#include "processor/filter/filter_factory.h"
#include "processor/filter/state_codec.h"
#include "processor/replica/member_record.h"
#include "processor/service/local_checkpoint.h"
#include "processor/shard/shard_state.h"

namespace {

namespace fs = std::filesystem;
using namespace oncecount;  // NOLINT(google-build-using-namespace)

void Write(const fs::path& dir, const std::string& target, const std::vector<std::string>& seeds) {
  fs::create_directories(dir / target);
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir / target / ("seed-" + std::to_string(i)), std::ios::binary) << seeds[i];
  }
}

// A length byte, then the bytes (fuzz_input.h's Prefixed).
std::string Prefixed(const std::string& part) {
  return std::string(1, static_cast<char>(part.size())) + part;
}

std::vector<std::string> Events() {
  std::vector<std::string> seeds;
  for (const char* value :
       {R"({"counter":"likes:post/42","delta":1})", R"({"counter":"a","delta":-5})",
        R"({"counter":"z\u00e4hler"})", R"({"counter":"big","delta":9223372036854775807})",
        R"({"counter":"huge","delta":1e999})", R"({"counter":7})", R"({"delta":1})", "not json"}) {
    seeds.push_back("\x01" + Prefixed("client-7/1234") + value);
  }
  seeds.push_back(std::string("\x00", 1) + Prefixed("") + R"({"counter":"no key"})");
  return seeds;
}

// A version 2 or 3 snapshot with its body uncompressed between the version and the
// checksum: what shard_snapshot_fuzz packs before it decodes (the checksum is the
// target's to compute).
std::string Unpacked(const std::string& snapshot) {
  constexpr size_t kHeader = 4 + 2 + 1 + 8;  // magic, version, codec, body length
  const std::string_view packed(snapshot.data() + kHeader, snapshot.size() - kHeader - 8);
  std::string body(ZSTD_getFrameContentSize(packed.data(), packed.size()), '\0');
  body.resize(ZSTD_decompress(body.data(), body.size(), packed.data(), packed.size()));
  return snapshot.substr(0, 6) + body + std::string(8, '\0');
}

std::unique_ptr<shard::ShardState> SmallShard() {
  filter::DedupSpec spec;
  spec.expected_rate = 100;
  spec.window = filter::Millis{2000};
  auto made =
      shard::ShardState::Create(base::Partition(3), spec, filter::Millis{1'700'000'000'000});
  auto s = std::move(made).value();
  s->SetClaim(base::Epoch(2), 77, filter::IdHashKey{0x5eed});
  for (int i = 0; i < 20; ++i) {
    const std::string key = "c/" + std::to_string(i % 15);
    const std::string value = R"({"counter":"n)" + std::to_string(i % 4) + R"(","delta":2})";
    const int64_t t = 1'700'000'000'000 + i * 10;
    s->Apply({base::Offset(i), std::string_view(key), std::string_view(value), t},
             filter::Millis{t});
  }
  return s;
}

std::vector<std::string> ChangelogRecords() {
  auto s = SmallShard();
  std::vector<std::string> seeds;
  for (const changelog::BatchRecord& b : s->Seal(base::Epoch(2))) {
    seeds.emplace_back();
    changelog::EncodeRecord(b, seeds.back());
  }
  seeds.emplace_back();
  changelog::EncodeRecord(
      changelog::ClaimRecord{base::Partition(3), base::Epoch(2), base::Seq(1), 77, 5, "oncecount"},
      seeds.back());
  seeds.emplace_back();
  changelog::EncodeRecord(
      changelog::SnapshotChunk{base::Partition(3), base::Epoch(2), base::Seq(1), 0, 1,
                               s->EncodeSnapshot(base::Epoch(2)), 77, "oncecount"},
      seeds.back());
  return seeds;
}

std::vector<std::string> FilterStates() {
  std::vector<std::string> seeds;
  for (const filter::DedupMode mode :
       {filter::DedupMode::kFbf, filter::DedupMode::kGaussian, filter::DedupMode::kBloom,
        filter::DedupMode::kExact, filter::DedupMode::kNone}) {
    filter::DedupSpec spec;
    spec.mode = mode;
    spec.expected_rate = 50;
    spec.window = filter::Millis{1000};
    auto f = filter::MakeExperimentFilter(spec, filter::Millis{5000}).value();
    for (uint64_t i = 1; i <= 30; ++i) {
      f->AdvanceTo(filter::Millis{5000 + static_cast<int64_t>(i) * 50});
      f->TestAndInsert(filter::IdHash{i * 0x9E3779B97F4A7C15ULL});
    }
    std::string state;
    f->Serialize(state);
    // Steps and the time stride (filter_state_fuzz.cc), then the state.
    seeds.push_back(std::string("\x05\x00\x00\x01\x00", 5) + state);
  }
  // The fingerprint filter, with 64-bit buckets (1e-3) and 128-bit ones (1e-6).
  for (const double target : {1e-3, 1e-6}) {
    filter::DedupSpec spec;
    spec.constituent = filter::Constituent::kFingerprint;
    spec.expected_rate = 50;
    spec.window = filter::Millis{1000};
    spec.target_fpp = target;
    auto f = filter::MakeDedupFilter(spec, filter::Millis{5000}).value();
    for (uint64_t i = 1; i <= 30; ++i) {
      f->AdvanceTo(filter::Millis{5000 + static_cast<int64_t>(i) * 50});
      f->TestAndInsert(filter::IdHash{i * 0x9E3779B97F4A7C15ULL});
    }
    std::string state;
    f->Serialize(state);
    seeds.push_back(std::string("\x05\x00\x00\x01\x00", 5) + state);
  }
  return seeds;
}

std::vector<std::string> Requests() {
  std::vector<std::string> seeds;
  for (const char* target :
       {"/v1/counters/likes%3Apost%2F42", "/v1/counters?prefix=ad+clicks%2F&limit=5&after=ad",
        "/v1/stats", "/v1/shards/3", "/healthz", "/readyz", "/metrics", "/",
        "/v1/counters/z%C3%A4hler", "/v1/counters/a%22b%5Cc", "/v1/counters/likes",
        "/v1/counters?order=recent&limit=3", "/v1/counters?prefix=%01", "/v1/history?since=0",
        "/v1/shards/1"}) {
    seeds.push_back(Prefixed("GET") + target);
  }
  seeds.push_back(Prefixed("HEAD") + "/v1/stats");
  seeds.push_back(Prefixed("POST") + "/v1/counters");
  return seeds;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR CONFIG_YAML\n");
    return 2;
  }
  const fs::path dir = argv[1];
  Write(dir, "event_parser_fuzz", Events());
  Write(dir, "changelog_record_fuzz", ChangelogRecords());
  Write(dir, "member_record_fuzz",
        {replica::EncodeMemberRecord({"instance-a",
                                      "http://10.0.0.7:8080",
                                      {base::Partition(0), base::Partition(2), base::Partition(5)},
                                      1,
                                      1234,
                                      false}),
         replica::EncodeMemberRecord({"b", "", {}, 0, 0, true})});
  Write(dir, "filter_state_fuzz", FilterStates());
  const std::string snapshot = SmallShard()->EncodeSnapshot(base::Epoch(2));
  Write(dir, "shard_snapshot_fuzz", {snapshot, Unpacked(snapshot)});
  Write(dir, "local_checkpoint_fuzz",
        {service::EncodeCheckpoint({base::Partition(3), base::Epoch(2), 77, base::Seq(1),
                                    base::Offset(12345), snapshot, base::Offset(12000),
                                    base::Offset(12347)}),
         service::EncodeCheckpoint({base::Partition(3), base::Epoch(2), 77, base::Seq(1),
                                    base::Offset(12345), snapshot, std::nullopt, std::nullopt})});
  Write(dir, "request_fuzz", Requests());
  const std::string config = ReadFile(argv[2]);
  Write(dir, "config_fuzz",
        {config, "", "dedup:\n  window_ms: 10000\n  target_fpp: 1.0e-9\n",
         "kafka:\n  bootstrap_servers: \"a:9092,b:9092\"\n  properties:\n    acks: all\n",
         "processing: [1, 2]\n"});
  return 0;
}
