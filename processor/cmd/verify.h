// `oncecount verify`: compare every counter the service serves with the truth that
// `inject` wrote (SPEC §3). Polls GET /v1/counters (all pages) until every counter
// is exact or --timeout-s passes, then prints an accuracy report: each counter that
// is over or under, the totals, and the error in percent; the last line is a JSON
// summary. Exit code 0 only if every counter is exact.
//
// Thread-safety: runs on the calling thread.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

namespace oncecount::cmd {

struct VerifyOptions {
  std::string truth_file;
  std::string api_url;  // http://host:port
  double timeout_s = 60;
  std::chrono::milliseconds poll_every{500};
};

// 0: exact; 1: not exact by the deadline (or the service could not be read); 2: bad
// options or an unreadable truth file.
int RunVerify(const VerifyOptions& options, std::ostream& out, std::ostream& err);

}  // namespace oncecount::cmd
