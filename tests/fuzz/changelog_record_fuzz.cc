// Fuzz target: the changelog record decoder (batches, claims, snapshot chunks).
// A record it accepts must encode and decode back to itself.
#include <cstdlib>
#include <string>

#include "processor/changelog/changelog_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = oncecount::changelog::DecodeRecord(bytes);
  if (!decoded) return 0;
  std::string again;
  oncecount::changelog::EncodeRecord(decoded.value(), again);
  auto round = oncecount::changelog::DecodeRecord(again);
  if (!round || !(round.value() == decoded.value())) std::abort();
  return 0;
}
