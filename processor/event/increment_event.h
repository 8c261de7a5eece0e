// IncrementEvent: one increment event of the input topic, parsed and validated
// (SPEC §1), or the dead-letter reason that rejects it.
//
//   key    the idempotency id, 1..256 bytes (recommended form <client-id>/<seq>)
//   value  UTF-8 JSON object {"counter": "<name>", "delta": <integer>}; counter is a
//          string of 1..256 bytes without U+0000 (a name no request could ask
//          for), delta an integer that fits int64 (default 1, may be negative);
//          other fields are ignored
//
// A message that breaks a rule is never dropped silently: the caller sends it to the
// dead-letter topic with the reason's name as the `oncecount.error` header.
// `overflow` is not decided here: it depends on the counter's value when the event
// is applied (AddWithoutOverflow).
//
// Thread-safety: an EventParser holds a reusable parse buffer; one per shard
// thread. The parsed event owns its counter name and is independent of the input.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "processor/base/enum_names.h"

namespace oncecount::event {

inline constexpr size_t kMaxKeyBytes = 256;
inline constexpr size_t kMaxCounterBytes = 256;

// A counter name's rule (beyond being UTF-8, which the JSON parser checks): 1..256
// bytes, no NUL. The HTTP API refuses the names this refuses.
bool IsCounterName(std::string_view name);

enum class DlqReason : uint8_t {
  kMissingKey,
  kKeyTooLong,
  kInvalidJson,
  kMissingCounter,
  kInvalidCounter,
  kInvalidDelta,
  kOverflow,
  // Applied while its shard's clock was more than dedup.timestamp_tolerance_ms past
  // its timestamp, under dedup.late_records: dead_letter (SPEC §2.1).
  kLate,
};

// SPEC §1's reasons, the values of a dead letter's `oncecount.error` header, in the
// enum's order: arrays of dead-letter counts (shard statistics, changelog records,
// /v1/stats, metrics) are indexed by the reason's value and sized by the count.
inline constexpr std::array<base::EnumName<DlqReason>, 8> kDlqReasonNames = {{
    {DlqReason::kMissingKey, "missing_key"},
    {DlqReason::kKeyTooLong, "key_too_long"},
    {DlqReason::kInvalidJson, "invalid_json"},
    {DlqReason::kMissingCounter, "missing_counter"},
    {DlqReason::kInvalidCounter, "invalid_counter"},
    {DlqReason::kInvalidDelta, "invalid_delta"},
    {DlqReason::kOverflow, "overflow"},
    {DlqReason::kLate, "late"},
}};
static_assert(base::ListedInValueOrder(kDlqReasonNames));
inline constexpr size_t kDlqReasonCount = kDlqReasonNames.size();

inline const char* DlqReasonName(DlqReason reason) {
  return base::NameOf(kDlqReasonNames, reason);
}

struct IncrementEvent {
  std::string counter;
  int64_t delta = 1;
};

using ParseResult = std::variant<IncrementEvent, DlqReason>;

class EventParser {
 public:
  // `key` is absent (nullopt) when the message has no key at all.
  ParseResult Parse(std::optional<std::string_view> key, std::string_view value);

 private:
  simdjson::dom::parser parser_;
};

// sum = a + b, or nullopt when it would leave int64.
std::optional<int64_t> AddWithoutOverflow(int64_t a, int64_t b);

}  // namespace oncecount::event
