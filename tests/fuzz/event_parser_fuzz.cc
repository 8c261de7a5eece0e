// Fuzz target: the event parser (SPEC §1), for a message with or without a key.
// Input: a flag byte (bit 0: the message has a key), a length-prefixed key, then
// the value. Checks that an accepted event follows the rules it was accepted by.
#include <cstdlib>

#include "processor/event/increment_event.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oncecount::fuzz::FuzzInput in(data, size);
  const bool has_key = (in.Byte() & 1) != 0;
  const std::string_view key = in.Prefixed();
  const std::string_view value = in.Rest();
  static oncecount::event::EventParser parser;
  const auto parsed =
      parser.Parse(has_key ? std::optional<std::string_view>(key) : std::nullopt, value);
  if (const auto* event = std::get_if<oncecount::event::IncrementEvent>(&parsed)) {
    if (!oncecount::event::IsCounterName(event->counter) || !has_key || key.empty()) std::abort();
  }
  return 0;
}
