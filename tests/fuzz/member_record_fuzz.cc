// Fuzz target: the member record decoder (heartbeats on <input>.members). A record
// it accepts must encode and decode back to itself.
#include <cstdlib>

#include "processor/replica/member_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = oncecount::replica::DecodeMemberRecord(bytes);
  if (!decoded) return 0;
  auto round = oncecount::replica::DecodeMemberRecord(
      oncecount::replica::EncodeMemberRecord(decoded.value()));
  if (!round || !(round.value() == decoded.value())) std::abort();
  return 0;
}
