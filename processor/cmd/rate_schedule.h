// RateSchedule: filter-eval's insert rate over simulated time, piecewise constant
// (--rate, or a --rate-schedule CSV file of `second,rate` rows with increasing
// seconds; a first row that is not numbers is a header; `#` starts a comment line).
//
// Thread-safety: a value type; Load reads a file on the calling thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "processor/base/result.h"

namespace oncecount::cmd {

class RateSchedule {
 public:
  // Errors are usage errors naming the line.
  static base::Result<RateSchedule> Load(const std::string& path);
  static RateSchedule Constant(double rate);

  // Ids per second at `second`: the rate of the last row at or before it (0 before
  // the first row).
  double At(double second) const;
  // The first row's rate, which sizes the filter.
  double First() const { return rows_.front().second; }

 private:
  RateSchedule() = default;

  std::vector<std::pair<double, double>> rows_;  // (second, rate), at least one
};

}  // namespace oncecount::cmd
