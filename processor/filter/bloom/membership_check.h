// MembershipCheck: which tests an FBF runs to decide that it has seen an id.
//
//  - kPaper: Algorithm 2 of the paper — the future alone, adjacent pairs from
//    (present, past 1) to (past N-1, past N), and the oldest alone;
//  - kPairs: every adjacent pair, with one extra partner filter behind the oldest
//    so that even the oldest slice is held by a pair;
//  - kAny: the "simple approach" of Sec. III-A (any filter alone). It exists to
//    reproduce the paper's Fig. 8 and is never the better choice.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "processor/base/enum_names.h"

namespace oncecount::filter {

enum class MembershipCheck : uint8_t { kPaper = 0, kPairs = 1, kAny = 2 };

inline constexpr std::array<base::EnumName<MembershipCheck>, 3> kMembershipCheckNames = {{
    {MembershipCheck::kPairs, "pairs"},
    {MembershipCheck::kPaper, "paper"},
    {MembershipCheck::kAny, "any"},
}};

inline const char* CheckName(MembershipCheck check) {
  return base::NameOf(kMembershipCheckNames, check);
}

}  // namespace oncecount::filter
