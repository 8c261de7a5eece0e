// Fuzz target: the dedup filter state decoder (every mode, the experiments' too), on
// the state as written and resealed (its length and checksum made right: resealed.h),
// then a few operations on what it accepts: the clock moves (to times the input
// picks, anywhere in the filters' range), ids are tested and inserted, the summary is
// read, and the state is serialized and decoded again. Input: a step count, a 4-byte
// time step, then the state.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "processor/filter/experiments/experiment_filters.h"
#include "tests/fuzz/filter_limits.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/resealed.h"

namespace {

using namespace oncecount::filter;  // NOLINT(google-build-using-namespace)

void DecodeAndRun(std::string_view state, uint8_t steps, uint32_t stride) {
  auto decoded = DecodeExperimentFilter(state, oncecount::fuzz::kFilterLimits);
  if (!decoded) return;
  DedupFilter& f = *decoded.value();
  // A state without a bound that held more than the limits give one (format 2 let a
  // filter grow past any) is read without one, and would grow past what this process
  // may hold: its codec is checked, its growth is not.
  if (f.Summary().GrowsWithoutABound()) steps = 0;
  // AdvanceTo ignores times before the filter's clock: from -2^61, a stride of up to
  // 2^32 ms reaches every clock a state may hold within 16 steps only rarely, so
  // the stride is scaled by 2^28 when its top bit is set.
  const int64_t step = (stride & 0x80000000u) ? int64_t{stride & 0x7FFFFFFFu} << 28 : stride;
  Millis at{-(int64_t{1} << 61)};
  try {
    for (uint8_t i = 0; i < steps % 16; ++i) {
      at += Millis{step};
      f.AdvanceTo(at);
      f.TestAndInsert(IdHash{0x9E3779B97F4A7C15ULL * (i + 1)});
    }
  } catch (const std::bad_alloc&) {
    // A filter that cannot get the memory a new slice or plane needs says so with
    // bad_alloc, by contract: the service fails that shard alone (ShardWorker), loudly.
    return;
  }
  const FilterSummary summary = f.Summary();
  // The decoder refuses counts past kMaxFilterCount (2^62 ids, which no filter
  // reaches): a state accepted at that limit may pass it with the inserts above.
  if (summary.inserted > kMaxFilterCount || summary.duplicates > kMaxFilterCount) return;
  // Every state a bounded filter reaches is within its bound (the decoder gave one to
  // a state without: filter_limits.h).
  if (summary.memory_limit_bytes != 0 && summary.bits_total / 8 > summary.memory_limit_bytes) {
    std::fprintf(stderr, "a filter bounded at %llu bytes takes %llu\n",
                 static_cast<unsigned long long>(summary.memory_limit_bytes),
                 static_cast<unsigned long long>(summary.bits_total / 8));
    std::abort();
  }
  std::string again;
  f.Serialize(again);
  // What it wrote, it reads.
  if (auto reread = DecodeExperimentFilter(again, oncecount::fuzz::kFilterLimits); !reread) {
    std::fprintf(stderr, "a state the filter reached does not decode: %s\n",
                 reread.message().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oncecount::fuzz::FuzzInput in(data, size);
  const uint8_t steps = in.Byte();
  uint32_t stride = 0;
  for (int i = 0; i < 4; ++i) stride = stride << 8 | in.Byte();
  oncecount::fuzz::AsWrittenAndResealed(
      in.Rest(), [](std::string_view b) { return oncecount::fuzz::ResealedFilterState(b); },
      [&](std::string_view state) { DecodeAndRun(state, steps, stride); });
  return 0;
}
