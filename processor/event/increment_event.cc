#include "processor/event/increment_event.h"

#include <algorithm>
#include <charconv>

namespace oncecount::event {

namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// JSON's number grammar (RFC 8259 §6): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view t) {
  size_t i = 0;
  if (i < t.size() && t[i] == '-') ++i;
  if (i == t.size()) return false;
  if (t[i] == '0') {
    ++i;
  } else if (IsDigit(t[i])) {
    while (i < t.size() && IsDigit(t[i])) ++i;
  } else {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    const size_t digits = ++i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i == digits) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    const size_t digits = i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i == digits) return false;
  }
  return i == t.size();
}

// A JSON integer (IsJsonNumber's, without fraction or exponent) that fits int64.
bool IsInt64Literal(std::string_view t) {
  int64_t n = 0;
  const auto [end, error] = std::from_chars(t.data(), t.data() + t.size(), n);
  return error == std::errc() && end == t.data() + t.size();
}

// The DOM parser refuses numbers it cannot represent (beyond uint64 and double), as
// it refuses numbers that break JSON's grammar (01, 1., -, 2x): NUMBER_ERROR for
// both. JSON allows the first kind: in an ignored field it must not reject the event,
// and in `delta` it is an invalid delta. So `value` is rewritten with every number
// that is not an int64 integer as 0.5, a number the parser can hold, which delta
// refuses as it refuses any non-integer, and parsed again: the whole document is then
// checked as any other, and read by the same rules. nullopt: a number breaks JSON's
// grammar. A number ends where a character no number holds begins; where JSON
// allows one to end (whitespace , ] }), none of those is such a character, so a run
// that does not parse whole is not JSON.
std::optional<std::string> WithRepresentableNumbers(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  size_t i = 0;
  while (i < value.size()) {
    const char c = value[i];
    if (c == '"') {  // a string, copied as it is (escaped quotes included)
      const size_t from = i++;
      while (i < value.size() && value[i] != '"') i += value[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, value.size());
      out.append(value.substr(from, i - from));
    } else if (c == '-' || IsDigit(c)) {
      const size_t from = i;
      while (i < value.size() && (IsDigit(value[i]) || value[i] == '.' || value[i] == 'e' ||
                                  value[i] == 'E' || value[i] == '+' || value[i] == '-')) {
        ++i;
      }
      const std::string_view number = value.substr(from, i - from);
      if (!IsJsonNumber(number)) return std::nullopt;
      out.append(IsInt64Literal(number) ? number : std::string_view("0.5"));
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
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
  simdjson::error_code parsed = parser_.parse(value.data(), value.size()).get(root);
  std::optional<std::string> rewritten;
  if (parsed == simdjson::NUMBER_ERROR) {
    rewritten = WithRepresentableNumbers(value);
    if (!rewritten) return DlqReason::kInvalidJson;
    parsed = parser_.parse(rewritten->data(), rewritten->size()).get(root);
  }
  if (parsed != simdjson::SUCCESS) return DlqReason::kInvalidJson;
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) return DlqReason::kInvalidJson;

  // One pass over the fields: a field given twice has no one reading (JSON leaves it
  // to the reader, and readers differ: most take the last, simdjson's at_key the
  // first), so such an event is refused under that field's reason, not counted as
  // one of them.
  std::optional<simdjson::dom::element> counter;
  std::optional<simdjson::dom::element> delta;
  for (const simdjson::dom::key_value_pair field : object) {
    if (field.key == "counter") {
      if (counter) return DlqReason::kInvalidCounter;
      counter = field.value;
    } else if (field.key == "delta") {
      if (delta) return DlqReason::kInvalidDelta;
      delta = field.value;
    }
  }
  if (!counter) return DlqReason::kMissingCounter;
  IncrementEvent event;
  std::string_view name;
  if (counter->get_string().get(name) != simdjson::SUCCESS || !IsCounterName(name)) {
    return DlqReason::kInvalidCounter;
  }
  event.counter.assign(name);
  if (delta) {
    // Only JSON integers that fit int64: 1.0, 1e3, "3", null and 2^63 are rejected.
    if (!delta->is_int64()) return DlqReason::kInvalidDelta;
    event.delta = delta->get_int64().value_unsafe();
  }
  return event;
}

std::optional<int64_t> AddWithoutOverflow(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace oncecount::event
