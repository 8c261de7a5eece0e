// The log sink of `serve` and `demo`: lines on stderr at or above a level, as text
// ("oncecount: warn [a processor] transaction aborted: ...") or as JSON lines
// ({"time_ms":..., "level":"warn", "context":"a processor", "message":"..."}) for a
// log collector (--log-format json).
//
// Thread-safety: Write may be called from any thread; lines never interleave.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string_view>

#include "processor/base/clock.h"
#include "processor/base/logger.h"

namespace oncecount::cmd {

enum class LogFormat : uint8_t { kText, kJson };

// "text" or "json" (what --log-format takes); nullopt for anything else.
std::optional<LogFormat> ParseLogFormat(std::string_view name);

// `out` must outlive the sink; `clock` (null: the system clock) stamps JSON lines.
std::shared_ptr<base::LogSink> MakeStreamLogSink(std::ostream& out, base::LogLevel min_level,
                                                 LogFormat format, base::Clock* clock = nullptr);

}  // namespace oncecount::cmd
