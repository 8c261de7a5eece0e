// MembershipCheck: which tests an FBF runs to decide that it has seen an id.
//
//  - kPaper: Algorithm 2 of the paper — the future alone, adjacent pairs from
//    (present, past 1) to (past N-1, past N), and the oldest alone;
//  - kPairs: every adjacent pair, with one extra partner filter behind the oldest
//    so that even the oldest slice is held by a pair;
//  - kAny: the "simple approach" of Sec. III-A (any filter alone). It exists to
//    reproduce the paper's Fig. 8 and is never the better choice.
#pragma once

#include <cstdint>

namespace oncecount::filter {

enum class MembershipCheck : uint8_t { kPaper = 0, kPairs = 1, kAny = 2 };

const char* CheckName(MembershipCheck check);

}  // namespace oncecount::filter
