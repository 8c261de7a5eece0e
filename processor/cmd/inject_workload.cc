#include "processor/cmd/inject_workload.h"

#include <array>

#include "processor/event/increment_event.h"
#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

// One malformed message for each dead-letter reason the parser decides, in turn
// (`overflow` depends on a counter's value and is not made here).
struct MalformedShape {
  event::DlqReason reason;
  enum class Key : uint8_t { kNone, kTooLong, kUnique } key;
  const char* value;
};

constexpr std::array<MalformedShape, 6> kMalformedShapes = {{
    {event::DlqReason::kMissingKey, MalformedShape::Key::kNone, R"({"counter":"counter-0"})"},
    {event::DlqReason::kKeyTooLong, MalformedShape::Key::kTooLong, R"({"counter":"counter-0"})"},
    {event::DlqReason::kInvalidJson, MalformedShape::Key::kUnique, R"({"counter": "counter-0", )"},
    {event::DlqReason::kMissingCounter, MalformedShape::Key::kUnique, R"({"delta": 3})"},
    {event::DlqReason::kInvalidCounter, MalformedShape::Key::kUnique, R"({"counter": 17})"},
    {event::DlqReason::kInvalidDelta, MalformedShape::Key::kUnique,
     R"({"counter":"counter-0","delta":1.5})"},
}};

// Every reason of the parser (not overflow or late, which come from the shard), once
// each, in the enum's order.
constexpr bool CoversTheParsersReasons() {
  for (size_t i = 0; i < kMalformedShapes.size(); ++i) {
    if (static_cast<size_t>(kMalformedShapes[i].reason) != i) return false;
  }
  return kMalformedShapes.size() + 2 == event::kDlqReasonCount &&
         static_cast<size_t>(event::DlqReason::kOverflow) == kMalformedShapes.size();
}
static_assert(CoversTheParsersReasons());

}  // namespace

std::string Truth::ToJson() const {
  json::JsonWriter j;
  j.BeginObject().Key("counters").BeginObject();
  for (const auto& [name, value] : counters) j.Key(name).Int(value);
  j.EndObject()
      .Key("events")
      .Uint(events)
      .Key("duplicates")
      .Uint(duplicates)
      .Key("malformed")
      .Uint(malformed)
      .EndObject();
  return j.str();
}

InjectWorkload::InjectWorkload(const WorkloadOptions& options)
    : options_(options), rng_(options.seed) {}

WorkloadMessage InjectWorkload::MakeEvent() {
  const uint64_t seq = produced_++;
  const uint32_t client = static_cast<uint32_t>(rng_() % options_.clients);
  const uint32_t counter = static_cast<uint32_t>(rng_() % options_.counters);
  // Mostly +1, sometimes other deltas, including negative ones.
  const uint64_t roll = rng_() % 10;
  const int64_t delta = roll < 7 ? 1 : static_cast<int64_t>(roll) - 4;  // 1 or -1..5
  const std::string name = "counter-" + std::to_string(counter);
  truth_.counters[name] += delta;
  ++truth_.events;
  WorkloadMessage m;
  m.key = "client-" + std::to_string(client) + "/" + std::to_string(options_.first_seq + seq);
  m.value = "{\"counter\":\"" + name + "\",\"delta\":" + std::to_string(delta) + "}";
  return m;
}

WorkloadMessage InjectWorkload::MakeMalformed() {
  const MalformedShape& shape = kMalformedShapes[malformed_made_ % kMalformedShapes.size()];
  WorkloadMessage m;
  m.kind = WorkloadMessage::Kind::kMalformed;
  m.value = shape.value;
  switch (shape.key) {
    case MalformedShape::Key::kNone:
      break;
    case MalformedShape::Key::kTooLong:
      m.key = std::string(event::kMaxKeyBytes + 44, 'k');
      break;
    case MalformedShape::Key::kUnique:
      m.key = "malformed/" + std::to_string(malformed_made_);
      break;
  }
  ++malformed_made_;
  ++truth_.malformed;
  return m;
}

std::optional<WorkloadMessage> InjectWorkload::Next(int64_t now_ms, bool new_allowed) {
  last_now_ = now_ms;
  if (!retries_.empty() && retries_.top().due_ms <= now_ms) {
    WorkloadMessage m = retries_.top().message;
    retries_.pop();
    return m;
  }
  if (!new_allowed || produced_ >= options_.events) return std::nullopt;
  // Malformed messages are interleaved at their rate, relative to the events.
  std::uniform_real_distribution<double> unit(0, 1);
  if (options_.malformed_rate > 0 && unit(rng_) < options_.malformed_rate) return MakeMalformed();
  WorkloadMessage event = MakeEvent();
  if (unit(rng_) < options_.duplicate_rate) {
    WorkloadMessage retry = event;
    retry.kind = WorkloadMessage::Kind::kRetry;
    const int64_t delay =
        options_.max_retry_delay_ms > 0
            ? static_cast<int64_t>(rng_() % static_cast<uint64_t>(options_.max_retry_delay_ms + 1))
            : 0;
    retries_.push({now_ms + delay, retry_order_++, std::move(retry)});
    ++truth_.duplicates;
  }
  return event;
}

bool InjectWorkload::Done() const {
  return produced_ >= options_.events && retries_.empty();
}

std::optional<int64_t> InjectWorkload::NextRetryDue() const {
  if (retries_.empty()) return std::nullopt;
  return std::max<int64_t>(0, retries_.top().due_ms - last_now_);
}

}  // namespace oncecount::cmd
