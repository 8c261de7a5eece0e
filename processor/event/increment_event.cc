#include "processor/event/increment_event.h"

namespace oncecount::event {

namespace {

// The DOM parser refuses numbers it cannot represent (beyond int64/uint64 and
// double), though JSON allows them. Such a number in an ignored field must not
// reject the event, and in `delta` it is an invalid delta: read the two fields
// lazily, skipping the rest.
ParseResult ParseWithHugeNumbers(std::string_view value) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(value);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return DlqReason::kInvalidJson;
  }
  IncrementEvent event;
  bool has_counter = false;
  for (auto field : object) {
    std::string_view name;
    if (field.unescaped_key().get(name) != simdjson::SUCCESS) return DlqReason::kInvalidJson;
    if (name == "counter" && !has_counter) {
      std::string_view counter;
      if (field.value().get_string().get(counter) != simdjson::SUCCESS || !IsCounterName(counter)) {
        return DlqReason::kInvalidCounter;
      }
      event.counter.assign(counter);
      has_counter = true;
    } else if (name == "delta") {
      if (field.value().get_int64().get(event.delta) != simdjson::SUCCESS) {
        return DlqReason::kInvalidDelta;
      }
    }
  }
  if (!has_counter) return DlqReason::kMissingCounter;
  return event;
}

}  // namespace

bool IsCounterName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxCounterBytes &&
         name.find('\0') == std::string_view::npos;
}

ParseResult EventParser::Parse(std::optional<std::string_view> key, std::string_view value) {
  if (!key || key->empty()) return DlqReason::kMissingKey;
  if (key->size() > kMaxKeyBytes) return DlqReason::kKeyTooLong;

  // simdjson validates UTF-8 and the whole document; the value is copied into the
  // parser's padded buffer (events are small).
  simdjson::dom::element root;
  const simdjson::error_code parsed = parser_.parse(value.data(), value.size()).get(root);
  if (parsed == simdjson::NUMBER_ERROR) return ParseWithHugeNumbers(value);
  if (parsed != simdjson::SUCCESS) return DlqReason::kInvalidJson;
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) return DlqReason::kInvalidJson;

  IncrementEvent event;
  simdjson::dom::element counter;
  if (object.at_key("counter").get(counter) != simdjson::SUCCESS) {
    return DlqReason::kMissingCounter;
  }
  std::string_view name;
  if (counter.get_string().get(name) != simdjson::SUCCESS || !IsCounterName(name)) {
    return DlqReason::kInvalidCounter;
  }
  event.counter.assign(name);

  simdjson::dom::element delta;
  if (object.at_key("delta").get(delta) == simdjson::SUCCESS) {
    // Only JSON integers that fit int64: 1.0, 1e3, "3", null and 2^63 are rejected.
    if (!delta.is_int64()) return DlqReason::kInvalidDelta;
    event.delta = delta.get_int64().value_unsafe();
  }
  return event;
}

std::optional<int64_t> AddWithoutOverflow(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace oncecount::event
