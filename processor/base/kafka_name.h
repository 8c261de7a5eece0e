// KafkaNameProblem: Kafka's one rule for the names it stores (topics,
// group.instance.id): 1 to 249 characters of [A-Za-z0-9._-], and not "." or "..".
// The configuration checks topic names with it and `serve` its instance id, so that
// a name oncecount accepts is one the broker accepts, not one every request fails on.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace oncecount::base {

inline constexpr size_t kMaxKafkaNameChars = 249;

// Empty when Kafka takes `name`; otherwise what is wrong with it, without a subject
// (the caller names the key or flag).
std::string KafkaNameProblem(std::string_view name);

}  // namespace oncecount::base
