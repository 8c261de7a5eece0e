// DeadLetter: a message for the dead-letter topic, and how one is made to fit the
// topic's record size limit.
//
// A dead letter carries the original key, value and headers plus `oncecount.error`
// and `oncecount.source` (SPEC §1). An input message close to the input topic's
// limit no longer fits once those headers are added (or the dead-letter topic's
// limit is smaller): it would fail every commit that carries it. FitDeadLetter
// trims such a message instead, and says so in an `oncecount.truncated` header.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "processor/kafka/clients.h"

namespace oncecount::service {

struct DeadLetter {
  std::optional<std::string> key;    // nullopt: the original had no key
  std::optional<std::string> value;  // nullopt: the original had no value
  std::vector<kafka::Header> headers;
};

// The letter of input message `m`, refused for `reason` (event::DlqReasonName): its
// key, value and headers, then `oncecount.error`, `oncecount.source`
// ("<input_topic>/<partition>/<offset>") and `oncecount.timestamp` (the record's
// timestamp in ms, or "none": what a `late` letter was judged by, which the input may
// no longer keep when an operator reads the letter). The input's own headers named oncecount.*
// (a letter produced again, or a producer's) are renamed original.oncecount.*: a
// letter holds one reason and one source, and FitDeadLetter may drop such headers like
// any other of the input's (kept as the service's, a large one made a letter that
// could never fit, and every commit carrying it failed).
DeadLetter MakeDeadLetter(const kafka::Message& m, std::string_view reason,
                          const std::string& input_topic);

// An upper bound of the bytes a record batch holding only this message takes, as a
// broker measures it against max.message.bytes.
size_t DeadLetterBytes(const DeadLetter& letter);

// Makes `letter` fit in `max_bytes` (DeadLetterBytes): when it does not already,
// drops the original headers (oncecount.* stay), then cuts the key and the value to
// what room is left, and adds `oncecount.truncated`: the original sizes, as
// "key=K value=V headers=H" (bytes, bytes, count; "none" for an absent key or value).
void FitDeadLetter(DeadLetter& letter, size_t max_bytes);

}  // namespace oncecount::service
