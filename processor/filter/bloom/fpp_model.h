// The false-positive model of constituent filters and of the two FBF membership
// checks. Used by the adaptive resizing, by the initial sizing, and reported as
// `estimated_fpp`.
//
// Per filter there are two models:
//  - ClassicBloomFpp: the paper's Equation 1, (1 - e^{-k l / m})^k, for a filter
//    whose k bits are spread over all m bits;
//  - BlockedBloomFpp: the same filter when every id's bits fall in one block of
//    512 (or 1024) bits (our layout): a Poisson mixture over the number of ids that share a block.
//    Wherever the FPP is small enough to matter (below ~0.3) it is above
//    Equation 1, and the gap grows with bits per id.
// Per FBF, filters are indexed 0 = future, 1 = present, 2.. = past, newest first:
//  - PaperCheckFpp: Equation 3 (future alone, adjacent pairs, oldest alone);
//  - PairsCheckFpp: its counterpart for the all-pairs check, 1 - prod(1 - p_i p_{i+1}).
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "processor/base/enum_names.h"
#include "processor/filter/bloom/membership_check.h"

namespace oncecount::filter {

enum class ConstituentModel : uint8_t { kClassic, kBlocked };

inline constexpr std::array<base::EnumName<ConstituentModel>, 2> kConstituentModelNames = {{
    {ConstituentModel::kBlocked, "blocked"},
    {ConstituentModel::kClassic, "classic"},
}};

double ClassicBloomFpp(double bits, int hashes, double inserted);
double BlockedBloomFpp(double bits, int hashes, double inserted, uint32_t block_bits = 512);
double ConstituentFpp(ConstituentModel model, double bits, int hashes, double inserted,
                      uint32_t block_bits = 512);

// `p` holds one false-positive probability per filter, future first.
double PaperCheckFpp(std::span<const double> p);
double PairsCheckFpp(std::span<const double> p);
// The simple check of Sec. III-A: any filter alone, 1 - prod(1 - p_i).
double AnyFilterFpp(std::span<const double> p);
// The model of `check` over the filters' probabilities.
double CheckFpp(MembershipCheck check, std::span<const double> p);

}  // namespace oncecount::filter
