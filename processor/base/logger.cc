#include "processor/base/logger.h"

#include <array>

namespace oncecount::base {
namespace {

constexpr std::array<const char*, 4> kLevelNames = {"debug", "info", "warn", "error"};

class FunctionLogSink final : public LogSink {
 public:
  explicit FunctionLogSink(std::function<void(const std::string&)> f) : f_(std::move(f)) {}
  void Write(LogLevel, std::string_view, std::string_view message) override {
    if (f_) f_(std::string(message));
  }

 private:
  std::function<void(const std::string&)> f_;
};

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

const char* LogLevelName(LogLevel level) {
  return kLevelNames[static_cast<size_t>(level)];
}

Logger Logger::Child(std::string_view name) const {
  if (context_.empty()) return Logger(sink_, std::string(name));
  return Logger(sink_, context_ + " " + std::string(name));
}

std::shared_ptr<LogSink> Logger::FunctionSink(std::function<void(const std::string&)> f) {
  return std::make_shared<FunctionLogSink>(std::move(f));
}

}  // namespace oncecount::base
