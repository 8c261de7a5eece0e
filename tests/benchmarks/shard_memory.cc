// Heap bytes per counter of a shard in each role an instance holds it in: the
// active (live counters, pending batches sealed and committed, the published view),
// a standby (the same state rebuilt from the changelog batches, filter included)
// and a counters-only replica (filter dropped). The filter's size does not depend on
// the counters; each role is measured against the same role with no counters, so
// the figure is what one more distinct counter costs. Measured with mallinfo2
// (glibc's allocated bytes) around building each role; its own main.
//
// Usage: shard_memory [COUNTERS...]   (default 10000 100000 1000000)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "processor/filter/filter_factory.h"
#include "processor/shard/shard_state.h"

namespace {

namespace base = oncecount::base;

using oncecount::changelog::BatchRecord;
using oncecount::filter::Millis;
using oncecount::shard::InputMessage;
using oncecount::shard::ShardState;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kPerCommit = 10'000;

// Bytes in use: small blocks from the arenas and large ones mapped on their own.
size_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

oncecount::filter::DedupSpec Spec() {
  oncecount::filter::DedupSpec spec;
  spec.expected_rate = 100;
  spec.window = Millis{10'000};
  return spec;
}

std::unique_ptr<ShardState> NewShard() {
  auto made = ShardState::Create(base::Partition(0), Spec(), Millis{0});
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.message().c_str());
    std::exit(1);
  }
  return std::move(made).value();
}

// An active shard that applied one event to each of `counters` counters, committed
// every kPerCommit events, with its view made after each commit; the batches go to
// `batches` when given.
std::unique_ptr<ShardState> Active(int64_t counters, std::vector<BatchRecord>* batches) {
  auto s = NewShard();
  s->SetClaim(oncecount::base::Epoch(1), 1, oncecount::filter::IdHashKey{0x5eed});
  char key[32], value[96];
  for (int64_t i = 0; i < counters; ++i) {
    std::snprintf(key, sizeof key, "client/%lld", static_cast<long long>(i));
    const int n =
        std::snprintf(value, sizeof value, R"({"counter":"campaign-%08lld/creative","delta":1})",
                      static_cast<long long>(i));
    const InputMessage m{base::Offset(i), std::string_view(key),
                         std::string_view(value, static_cast<size_t>(n)),
                         kT0 + i * 10};  // 100 events a second: the filter's expected rate
    s->Apply(m, Millis{kT0 + i * 10});
    if ((i + 1) % kPerCommit == 0 || i + 1 == counters) {
      std::vector<BatchRecord> sealed = s->Seal(oncecount::base::Epoch(1));
      if (batches != nullptr) batches->insert(batches->end(), sealed.begin(), sealed.end());
      s->MarkCommitted(oncecount::base::Epoch(1));
      s->MakeView({}, 0, ShardState::FilterDetail::kReuse);  // the published view
    }
  }
  if (s->counters().size() != static_cast<size_t>(counters)) {
    std::fprintf(stderr, "%zu counters instead of %lld\n", s->counters().size(),
                 static_cast<long long>(counters));
    std::exit(1);
  }
  return s;
}

std::unique_ptr<ShardState> Follower(const std::vector<BatchRecord>& batches, bool keep_filter) {
  auto s = NewShard();
  if (!keep_filter) s->ForgetFilter();
  for (size_t i = 0; i < batches.size(); ++i) {
    s->Replay(batches[i]);
    if ((i + 1) % 8 == 0 || i + 1 == batches.size()) {
      s->MakeView({}, 0, ShardState::FilterDetail::kReuse);
    }
  }
  return s;
}

template <class Build>
double BytesOf(Build build) {
  malloc_trim(0);
  const size_t before = HeapBytes();
  auto state = build();
  const size_t after = HeapBytes();
  return static_cast<double>(after) - static_cast<double>(before);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {10'000, 100'000, 1'000'000};
  std::vector<BatchRecord> none;
  const double active0 = BytesOf([] { return Active(0, nullptr); });
  const double standby0 = BytesOf([&] { return Follower(none, true); });
  const double replica0 = BytesOf([&] { return Follower(none, false); });
  std::printf(
      "{\"filter_and_empty_shard_bytes\": {\"active\": %.0f, \"standby\": %.0f, "
      "\"replica\": %.0f}}\n",
      active0, standby0, replica0);
  for (int64_t n : sizes) {
    std::vector<BatchRecord> batches;
    Active(n, &batches);
    const double active = BytesOf([n] { return Active(n, nullptr); });
    const double standby = BytesOf([&] { return Follower(batches, true); });
    const double replica = BytesOf([&] { return Follower(batches, false); });
    const auto per = [n](double bytes, double empty) { return (bytes - empty) / n; };
    std::printf(
        "{\"counters\": %lld, \"bytes_per_counter\": {\"active\": %.1f, \"standby\": "
        "%.1f, \"replica\": %.1f}}\n",
        static_cast<long long>(n), per(active, active0), per(standby, standby0),
        per(replica, replica0));
  }
  return 0;
}
