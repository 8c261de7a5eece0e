#include "processor/base/logger.h"

#include <array>

namespace oncecount::base {
namespace {

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

Logger Logger::Child(std::string_view name) const {
  if (context_.empty()) return Logger(sink_, std::string(name));
  return Logger(sink_, context_ + " " + std::string(name));
}

std::shared_ptr<LogSink> Logger::FunctionSink(std::function<void(const std::string&)> f) {
  return std::make_shared<FunctionLogSink>(std::move(f));
}

}  // namespace oncecount::base
