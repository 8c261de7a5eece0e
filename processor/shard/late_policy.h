// LatePolicy: what a shard does with a late record (dedup.late_records, SPEC §2.1).
//
// A record is late when it is applied while its shard's clock is more than
// dedup.timestamp_tolerance_ms past its own timestamp. The no-double-count guarantee
// does not cover it: the filter may have forgotten the first copy of its event.
//
//   kApply       it is tested against the filter and applied like any record, and
//                counted (oncecount_late_events_total): counts stay complete, and a
//                late retry may be counted twice.
//   kDeadLetter  it goes to the dead-letter topic with reason `late`, untested and
//                unapplied: no late record is counted twice, and an operator who finds it
//                new produces it again (a copy of an event the filter still keeps is
//                then dropped as a duplicate).
//
// Thread-safety: constants.
#pragma once

#include <array>
#include <cstdint>

#include "processor/base/enum_names.h"

namespace oncecount::shard {

enum class LatePolicy : uint8_t { kApply, kDeadLetter };

inline constexpr std::array<base::EnumName<LatePolicy>, 2> kLatePolicyNames = {{
    {LatePolicy::kApply, "apply"},
    {LatePolicy::kDeadLetter, "dead_letter"},
}};

}  // namespace oncecount::shard
