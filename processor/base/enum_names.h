// EnumName and its helpers: the one table of an enum's names, beside the enum, that
// every reader and writer of those names uses (config, the commands, the HTTP API,
// dead-letter headers, metrics labels), so that a name is spelt in one place.
//
//   inline constexpr std::array<base::EnumName<Color>, 2> kColorNames = {{
//       {Color::kRed, "red"}, {Color::kBlue, "blue"}}};
//   NameOf(kColorNames, Color::kRed)        // "red"
//   ParseName(kColorNames, "blue")          // Color::kBlue
//   ChoicesOf(kColorNames)                  // "red or blue"
//   ExpectedOneOf(kColorNames, "green")     // "expected red or blue, got \"green\""
//   Subset(kColorNames, {Color::kRed})      // the entries for the values given
//
// Thread-safety: the tables are constants; the helpers are pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace oncecount::base {

// `name` is a string literal: it outlives every use and is NUL-terminated, so it
// goes to printf, gtest and string concatenation as it is.
template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value`, or "unknown" for a value the table does not list.
template <typename E, size_t N>
constexpr const char* NameOf(const std::array<EnumName<E>, N>& table, E value) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "unknown";
}

// The value named `name` (an exact, case-sensitive match), or nullopt.
template <typename E, size_t N>
constexpr std::optional<E> ParseName(const std::array<EnumName<E>, N>& table,
                                     std::string_view name) {
  for (const EnumName<E>& entry : table) {
    if (std::string_view(entry.name) == name) return entry.value;
  }
  return std::nullopt;
}

// "a, b or c": the names in table order, for "expected …" messages.
template <typename E, size_t N>
std::string ChoicesOf(const std::array<EnumName<E>, N>& table) {
  std::string choices;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) choices += i + 1 == N ? " or " : ", ";
    choices += table[i].name;
  }
  return choices;
}

// The message for a name the table lacks: every parser of names says it this way.
template <typename E, size_t N>
std::string ExpectedOneOf(const std::array<EnumName<E>, N>& table, std::string_view got) {
  return "expected " + ChoicesOf(table) + ", got \"" + std::string(got) + "\"";
}

// The entries of `table` for `values`, in the order given: the names one caller
// accepts (the service's dedup modes) without spelling them a second time. A value
// the table lacks fails the compile-time evaluation.
template <typename E, size_t N, size_t M>
constexpr std::array<EnumName<E>, M> Subset(const std::array<EnumName<E>, N>& table,
                                            const E (&values)[M]) {
  std::array<EnumName<E>, M> subset{};
  for (size_t i = 0; i < M; ++i) {
    size_t j = 0;
    while (table[j].value != values[i]) ++j;  // past the end: not a constant expression
    subset[i] = table[j];
  }
  return subset;
}

// True when entry i names the enum value i: tables that index arrays of counts
// (dead-letter reasons) assert this at compile time.
template <typename E, size_t N>
constexpr bool ListedInValueOrder(const std::array<EnumName<E>, N>& table) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].value) != i) return false;
  }
  return true;
}

}  // namespace oncecount::base
