// Fuzz target: the local checkpoint decoder (files in state.dir). A checkpoint it
// accepts (version 1 or 2) must encode (as version 2) and decode back to itself.
#include <cstdlib>

#include "processor/service/local_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = oncecount::service::DecodeCheckpoint(bytes);
  if (!decoded) return 0;
  auto round =
      oncecount::service::DecodeCheckpoint(oncecount::service::EncodeCheckpoint(decoded.value()));
  if (!round || !(round.value() == decoded.value())) std::abort();
  return 0;
}
