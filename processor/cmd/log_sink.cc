#include "processor/cmd/log_sink.h"

#include <mutex>
#include <ostream>
#include <string>

#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

class StreamLogSink final : public base::LogSink {
 public:
  StreamLogSink(std::ostream& out, base::LogLevel min_level, LogFormat format, base::Clock& clock)
      : out_(out), min_level_(min_level), format_(format), clock_(clock) {}

  void Write(base::LogLevel level, std::string_view context, std::string_view message) override {
    if (level < min_level_) return;
    const std::string line =
        format_ == LogFormat::kJson ? Json(level, context, message) : Text(level, context, message);
    std::lock_guard lock(mu_);
    out_ << line << std::endl;
  }

 private:
  static std::string Text(base::LogLevel level, std::string_view context,
                          std::string_view message) {
    std::string line = "oncecount: ";
    line += base::LogLevelName(level);
    if (!context.empty()) line.append(" [").append(context).append("]");
    return line.append(" ").append(message);
  }

  std::string Json(base::LogLevel level, std::string_view context, std::string_view message) const {
    json::JsonWriter j;
    j.BeginObject().Key("time_ms").Int(clock_.WallMs());
    j.Key("level").String(base::LogLevelName(level));
    j.Key("context").String(context).Key("message").String(message).EndObject();
    return j.str();
  }

  std::mutex mu_;
  std::ostream& out_;
  const base::LogLevel min_level_;
  const LogFormat format_;
  base::Clock& clock_;
};

}  // namespace

std::shared_ptr<base::LogSink> MakeStreamLogSink(std::ostream& out, base::LogLevel min_level,
                                                 LogFormat format, base::Clock* clock) {
  return std::make_shared<StreamLogSink>(out, min_level, format,
                                         clock != nullptr ? *clock : base::DefaultClock());
}

}  // namespace oncecount::cmd
