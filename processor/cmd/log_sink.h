// The log sink of `serve` and `demo`: lines on stderr at or above a level, as text
// ("oncecount: warn [a processor] transaction aborted: ...") or as JSON lines
// ({"time_ms":..., "level":"warn", "context":"a processor", "message":"..."}) for a
// log collector (--log-format json).
//
// Thread-safety: Write may be called from any thread; lines never interleave.
#pragma once

#include <array>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string_view>

#include "processor/base/clock.h"
#include "processor/base/enum_names.h"
#include "processor/base/logger.h"

namespace oncecount::cmd {

enum class LogFormat : uint8_t { kText, kJson };

// What --log-format takes.
inline constexpr std::array<base::EnumName<LogFormat>, 2> kLogFormatNames = {{
    {LogFormat::kText, "text"},
    {LogFormat::kJson, "json"},
}};

// `out` must outlive the sink; `clock` (null: the system clock) stamps JSON lines.
std::shared_ptr<base::LogSink> MakeStreamLogSink(std::ostream& out, base::LogLevel min_level,
                                                 LogFormat format, base::Clock* clock = nullptr);

}  // namespace oncecount::cmd
