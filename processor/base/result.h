// Error, Result<T> and Status: how every oncecount module reports a failure. Errors
// are values inside the code; exceptions (yaml-cpp's, Beast's, std::bad_alloc) are
// caught at module edges and turned into these.
//
// An Error carries an Errc, the kind of failure, which is all a caller decides by
// (and what the process's exit code follows: ExitCodeFor); a message for people; and
// optionally its subject, what the error is about (a configuration key, a topic, a
// file), so that callers and tests need not parse the message.
//
// Thread-safety: plain value types.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "processor/base/enum_names.h"

namespace oncecount::base {

enum class Errc : uint8_t {
  // A caller's value is outside the contract (filter parameters, sizes, a bad id).
  kInvalidArgument = 1,
  // The command line is wrong.
  kUsage,
  // The configuration is refused (a key, its value, or the file itself).
  kBadConfig,
  // A topic the configuration names does not exist on the cluster.
  kMissingTopic,
  // Bytes from outside do not decode: records, filter states, snapshots, checkpoints.
  kCorrupt,
  // Kafka clients or brokers failed, after librdkafka's own retries.
  kKafka,
  // The file system or the network failed.
  kIo,
  // A stop request (SIGTERM) ended the operation before it was done; nothing failed.
  kStopped,
  // Memory or a bound of the process was exhausted.
  kResourceExhausted,
  // Something another party holds is not ready yet (a changelog partition that an
  // open transaction holds back); a later attempt may succeed without anyone acting.
  kUnavailable,
  // A broken invariant of oncecount's own: a bug.
  kInternal,
};

// "invalid_argument", "bad_config", …: the code's stable name (logs, JSON errors).
inline constexpr std::array<EnumName<Errc>, 11> kErrcNames = {{
    {Errc::kInvalidArgument, "invalid_argument"},
    {Errc::kUsage, "usage"},
    {Errc::kBadConfig, "bad_config"},
    {Errc::kMissingTopic, "missing_topic"},
    {Errc::kCorrupt, "corrupt"},
    {Errc::kKafka, "kafka"},
    {Errc::kIo, "io"},
    {Errc::kStopped, "stopped"},
    {Errc::kResourceExhausted, "resource_exhausted"},
    {Errc::kUnavailable, "unavailable"},
    {Errc::kInternal, "internal"},
}};

inline const char* ErrcName(Errc code) {
  return NameOf(kErrcNames, code);
}

// The process exit code of a command that ends with this error (SPEC §3): 2 for
// usage and configuration errors (kUsage, kBadConfig, kMissingTopic,
// kInvalidArgument), 0 for kStopped, 1 for every runtime failure.
int ExitCodeFor(Errc code);

class Error {
 public:
  Error(Errc code, std::string message, std::string subject = {})
      : code_(code), message_(std::move(message)), subject_(std::move(subject)) {}

  Errc code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& subject() const { return subject_; }
  // "subject: message", or the message alone.
  std::string ToString() const;
  // The same error with "context: " in front of its message ("reading orders: …").
  Error Wrap(std::string_view context) const&;
  Error Wrap(std::string_view context) &&;

 private:
  Errc code_;
  std::string message_;
  std::string subject_;
};

// Writes ToString() (for logs and test failure messages).
std::ostream& operator<<(std::ostream& out, const Error& error);

// Shorthands for the common kinds.
inline Error InvalidArgument(std::string message) {
  return Error(Errc::kInvalidArgument, std::move(message));
}
inline Error UsageError(std::string message) {
  return Error(Errc::kUsage, std::move(message));
}
inline Error Corrupt(std::string message) {
  return Error(Errc::kCorrupt, std::move(message));
}
inline Error KafkaFailure(std::string message) {
  return Error(Errc::kKafka, std::move(message));
}
inline Error IoFailure(std::string message) {
  return Error(Errc::kIo, std::move(message));
}

// A value or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Only when !ok().
  const Error& error() const& { return std::get<Error>(v_); }
  Error&& error() && { return std::get<Error>(std::move(v_)); }
  Errc code() const { return error().code(); }
  const std::string& message() const { return error().message(); }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error: Result<void>.
class [[nodiscard]] Status {
 public:
  Status() = default;                                // success
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Only when !ok().
  const Error& error() const& { return *error_; }
  Error&& error() && { return *std::move(error_); }
  Errc code() const { return error_->code(); }
  const std::string& message() const { return error_->message(); }

 private:
  std::optional<Error> error_;  // empty: success
};

}  // namespace oncecount::base
