// Fuzz target: the shard snapshot decoder (a snapshot's chunks joined, as a restore
// or a local checkpoint holds them), then what a restored shard does: publish a
// view, apply an event, commit, and snapshot again.
#include <cstdlib>
#include <string>

#include "processor/shard/shard_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oncecount;  // NOLINT(google-build-using-namespace)
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto restored = shard::ShardState::FromSnapshot(bytes);
  if (!restored) return 0;
  shard::ShardState& s = *restored.value();
  (void)s.MakeView({}, 0);
  const int64_t at = s.clock().clock_ms + 1;
  s.Apply({base::IsLogical(s.position()) ? base::Offset(0) : s.position(), "fuzz/1",
           R"({"counter":"c","delta":1})", at},
          filter::Millis{at});
  s.MarkCommitted(s.epoch().Next());
  const std::string again = s.EncodeSnapshot(s.epoch());
  if (!shard::ShardState::FromSnapshot(again)) std::abort();
  return 0;
}
