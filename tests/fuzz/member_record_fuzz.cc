// Fuzz target: the member record decoder (heartbeats on <input>.members), on the
// input as written and resealed (resealed.h). A record it accepts must encode and
// decode back to itself.
#include <cstdlib>

#include "processor/replica/member_record.h"
#include "tests/fuzz/resealed.h"

namespace {

void DecodeAndRoundTrip(std::string_view bytes) {
  auto decoded = oncecount::replica::DecodeMemberRecord(bytes);
  if (!decoded) return;
  auto round = oncecount::replica::DecodeMemberRecord(
      oncecount::replica::EncodeMemberRecord(decoded.value()));
  if (!round || !(round.value() == decoded.value())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  oncecount::fuzz::AsWrittenAndResealed(
      bytes, [](std::string_view b) { return oncecount::fuzz::Resealed(b); }, DecodeAndRoundTrip);
  return 0;
}
