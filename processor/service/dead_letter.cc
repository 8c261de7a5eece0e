#include "processor/service/dead_letter.h"

#include <algorithm>

namespace oncecount::service {
namespace {

// A record batch's header (61 bytes) and one record's framing: length, attributes,
// timestamp and offset deltas, key and value lengths, header count (varints).
constexpr size_t kBatchOverhead = 61 + 24;
// A header's framing: its name and value lengths (varints).
constexpr size_t kHeaderOverhead = 10;

std::string SizeOf(const std::optional<std::string>& bytes) {
  return bytes ? std::to_string(bytes->size()) : "none";
}

constexpr std::string_view kServicePrefix = "oncecount.";

bool IsTheServices(const kafka::Header& h) {
  return h.name.starts_with(kServicePrefix);
}

}  // namespace

DeadLetter MakeDeadLetter(const kafka::Message& m, std::string_view reason,
                          const std::string& input_topic) {
  DeadLetter d;
  if (m.key) d.key.emplace(*m.key);
  if (m.value) d.value.emplace(*m.value);
  d.headers = m.Headers();
  for (kafka::Header& h : d.headers) {
    if (IsTheServices(h)) h.name.insert(0, "original.");
  }
  d.headers.push_back({"oncecount.error", std::string(reason)});
  d.headers.push_back({"oncecount.source", input_topic + "/" + std::to_string(m.partition.value()) +
                                               "/" + std::to_string(m.offset.value())});
  // The letter's own timestamp is its commit's: how late a `late` one was is this.
  d.headers.push_back(
      {"oncecount.timestamp", m.timestamp_ms < 0 ? "none" : std::to_string(m.timestamp_ms)});
  return d;
}

size_t DeadLetterBytes(const DeadLetter& letter) {
  size_t bytes = kBatchOverhead + letter.key.value_or("").size() + letter.value.value_or("").size();
  for (const kafka::Header& h : letter.headers) {
    bytes += kHeaderOverhead + h.name.size() + h.value.value_or("").size();
  }
  return bytes;
}

void FitDeadLetter(DeadLetter& letter, size_t max_bytes) {
  if (DeadLetterBytes(letter) <= max_bytes) return;
  const size_t original_headers =
      std::count_if(letter.headers.begin(), letter.headers.end(),
                    [](const kafka::Header& h) { return !IsTheServices(h); });
  const std::string note = "key=" + SizeOf(letter.key) + " value=" + SizeOf(letter.value) +
                           " headers=" + std::to_string(original_headers);
  std::erase_if(letter.headers, [](const kafka::Header& h) { return !IsTheServices(h); });
  letter.headers.push_back({"oncecount.truncated", note});
  DeadLetter bare{letter.key ? std::optional<std::string>("") : std::nullopt,
                  letter.value ? std::optional<std::string>("") : std::nullopt, letter.headers};
  const size_t fixed = DeadLetterBytes(bare);
  size_t room = max_bytes > fixed ? max_bytes - fixed : 0;
  if (letter.key) {
    letter.key->resize(std::min(letter.key->size(), room));
    room -= letter.key->size();
  }
  if (letter.value) letter.value->resize(std::min(letter.value->size(), room));
}

}  // namespace oncecount::service
