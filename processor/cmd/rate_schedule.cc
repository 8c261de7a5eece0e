#include "processor/cmd/rate_schedule.h"

#include <fstream>
#include <sstream>

namespace oncecount::cmd {

base::Result<RateSchedule> RateSchedule::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return base::UsageError("--rate-schedule: cannot open " + path);
  RateSchedule s;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    double second = 0, rate = 0;
    char comma = 0;
    if (!(row >> second >> comma >> rate) || comma != ',') {
      if (number == 1) continue;  // a header row
      return base::UsageError("--rate-schedule: line " + std::to_string(number) +
                              " is not `second,rate`: " + line);
    }
    if (rate < 0 || second < 0 || (!s.rows_.empty() && second <= s.rows_.back().first)) {
      return base::UsageError("--rate-schedule: line " + std::to_string(number) +
                              " needs a non-negative rate and increasing seconds");
    }
    s.rows_.emplace_back(second, rate);
  }
  if (s.rows_.empty()) return base::UsageError("--rate-schedule: " + path + " has no rows");
  return s;
}

RateSchedule RateSchedule::Constant(double rate) {
  RateSchedule s;
  s.rows_.emplace_back(0, rate);
  return s;
}

double RateSchedule::At(double second) const {
  double rate = 0;
  for (const auto& [from, r] : rows_) {
    if (from > second) break;
    rate = r;
  }
  return rate;
}

}  // namespace oncecount::cmd
