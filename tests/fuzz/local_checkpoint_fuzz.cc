// Fuzz target: the local checkpoint decoder (files in state.dir), on the input as
// written and resealed (resealed.h). A checkpoint it accepts (version 1, 2 or 3) must
// encode (as version 3) and decode back to itself.
#include <cstdlib>

#include "processor/service/local_checkpoint.h"
#include "tests/fuzz/resealed.h"

namespace {

void DecodeAndRoundTrip(std::string_view bytes) {
  auto decoded = oncecount::service::DecodeCheckpoint(bytes);
  if (!decoded) return;
  auto round =
      oncecount::service::DecodeCheckpoint(oncecount::service::EncodeCheckpoint(decoded.value()));
  if (!round || !(round.value() == decoded.value())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  oncecount::fuzz::AsWrittenAndResealed(
      bytes, [](std::string_view b) { return oncecount::fuzz::Resealed(b); }, DecodeAndRoundTrip);
  return 0;
}
