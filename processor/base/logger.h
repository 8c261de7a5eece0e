// Logger: leveled log lines with a context (the instance, then the component, as in
// "[a processor]") for the components of an instance. The composition root makes one
// LogSink (cmd/log_sink.h: text or JSON lines, a minimum level) and hands each
// component a Logger bound to it; a component passes Child loggers on. A Logger made
// from a function (tests, tools that collect lines) receives every message as text,
// without level or context.
//
// Thread-safety: a Logger is a value, cheap to copy and safe to call from any thread
// (sinks lock); the sink lives as long as its last Logger.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "processor/base/enum_names.h"

namespace oncecount::base {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };

// What --log-level takes.
inline constexpr std::array<EnumName<LogLevel>, 4> kLogLevelNames = {{
    {LogLevel::kDebug, "debug"},
    {LogLevel::kInfo, "info"},
    {LogLevel::kWarn, "warn"},
    {LogLevel::kError, "error"},
}};

inline const char* LogLevelName(LogLevel level) {
  return NameOf(kLogLevelNames, level);
}

class LogSink {
 public:
  virtual ~LogSink() = default;
  // Called from any thread.
  virtual void Write(LogLevel level, std::string_view context, std::string_view message) = 0;
};

class Logger {
 public:
  Logger() = default;  // drops every line
  Logger(std::shared_ptr<LogSink> sink, std::string context)
      : sink_(std::move(sink)), context_(std::move(context)) {}
  // Every message, as text, to `f` (no level, no context).
  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, Logger> &&
           std::is_invocable_v<F&, const std::string&>)
      Logger(F f)  // NOLINT(google-explicit-constructor): a function is a logger
      : Logger(FunctionSink(std::function<void(const std::string&)>(std::move(f))), "") {}

  // This logger with `name` added to its context ("a" + "processor": "a processor").
  Logger Child(std::string_view name) const;

  void Debug(std::string_view message) const { Write(LogLevel::kDebug, message); }
  void Info(std::string_view message) const { Write(LogLevel::kInfo, message); }
  void Warn(std::string_view message) const { Write(LogLevel::kWarn, message); }
  void Error(std::string_view message) const { Write(LogLevel::kError, message); }
  void Log(LogLevel level, std::string_view message) const { Write(level, message); }
  // Info, for callers that take a function of one line.
  void operator()(const std::string& message) const { Info(message); }
  explicit operator bool() const { return sink_ != nullptr; }

 private:
  static std::shared_ptr<LogSink> FunctionSink(std::function<void(const std::string&)> f);
  void Write(LogLevel level, std::string_view message) const {
    if (sink_) sink_->Write(level, context_, message);
  }

  std::shared_ptr<LogSink> sink_;
  std::string context_;
};

}  // namespace oncecount::base
