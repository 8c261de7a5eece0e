// UTF-8 checks for bytes from outside: counter names in events and in request
// targets, and any string the JSON writer puts in a response (a message may quote
// what a client sent).
//
// Well-formed means RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF),
// nothing past U+10FFFF.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace oncecount::json {

// The length (1 to 4) of the well-formed UTF-8 sequence `bytes` starts with, or 0
// when it starts with none (or is empty).
size_t Utf8SequenceLength(std::string_view bytes);

bool IsValidUtf8(std::string_view bytes);

}  // namespace oncecount::json
