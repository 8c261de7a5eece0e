// Fuzz target: the changelog record decoder (batches, claims, snapshot chunks), on
// the input as written and resealed (resealed.h). A record it accepts must encode and
// decode back to itself.
#include <cstdlib>
#include <string>

#include "processor/changelog/changelog_record.h"
#include "tests/fuzz/resealed.h"

namespace {

void DecodeAndRoundTrip(std::string_view bytes) {
  auto decoded = oncecount::changelog::DecodeRecord(bytes);
  if (!decoded) return;
  std::string again;
  oncecount::changelog::EncodeRecord(decoded.value(), again);
  auto round = oncecount::changelog::DecodeRecord(again);
  if (!round || !(round.value() == decoded.value())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  oncecount::fuzz::AsWrittenAndResealed(
      bytes, [](std::string_view b) { return oncecount::fuzz::Resealed(b); }, DecodeAndRoundTrip);
  return 0;
}
