#include "processor/cmd/verify.h"

#include <simdjson.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "http/client.h"
#include "http/request_target.h"
#include "processor/json/json_writer.h"

namespace oncecount::cmd {
namespace {

using Counters = std::map<std::string, int64_t>;

struct Truth {
  Counters counters;
  // The messages inject wrote (events, retries and malformed ones), when the file says:
  // the service has caught up once it has processed as many.
  std::optional<uint64_t> messages;
};

// A truth file that cannot be read or parsed is a usage error (kUsage): it is what
// --truth names.
base::Result<Truth> ReadTruth(const std::string& path) {
  std::ifstream in(path);
  if (!in) return base::Error(base::Errc::kUsage, "cannot read " + path, "--truth");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string body = text.str();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object counters;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS ||
      doc["counters"].get_object().get(counters) != simdjson::SUCCESS) {
    return base::Error(base::Errc::kUsage,
                       path + " is not a truth file (expected {\"counters\": {...}})", "--truth");
  }
  Truth truth;
  for (auto [name, value] : counters) {
    int64_t v = 0;
    if (value.get_int64().get(v) != simdjson::SUCCESS) {
      return base::Error(base::Errc::kUsage,
                         "the value of counter \"" + std::string(name) + "\" is not an integer",
                         "--truth");
    }
    truth.counters[std::string(name)] = v;
  }
  uint64_t events = 0, duplicates = 0, malformed = 0;
  if (doc["events"].get_uint64().get(events) == simdjson::SUCCESS &&
      doc["duplicates"].get_uint64().get(duplicates) == simdjson::SUCCESS) {
    if (doc["malformed"].get_uint64().get(malformed) != simdjson::SUCCESS) malformed = 0;
    truth.messages = events + duplicates + malformed;
  }
  return truth;
}

// How far the service is: whether it holds every shard, and how many input messages
// its shards have processed (applied, dropped as duplicates, or dead-lettered).
struct Progress {
  bool complete = false;
  uint64_t processed = 0;
};

base::Result<Progress> ReadProgress(const std::string& api) {
  auto got = http::HttpGet(api, "/v1/stats", std::chrono::seconds(10));
  if (!got) return std::move(got).error();
  if (got.value().status != 200) {
    return base::IoFailure("GET /v1/stats answered " + std::to_string(got.value().status));
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  Progress p;
  uint64_t applied = 0, dropped = 0, dead = 0;
  if (parser.parse(got.value().body).get(doc) != simdjson::SUCCESS ||
      doc["complete"].get_bool().get(p.complete) != simdjson::SUCCESS ||
      doc["totals"]["events_applied"].get_uint64().get(applied) != simdjson::SUCCESS ||
      doc["totals"]["duplicates_dropped"].get_uint64().get(dropped) != simdjson::SUCCESS ||
      doc["totals"]["dead_lettered"].get_uint64().get(dead) != simdjson::SUCCESS) {
    return base::Corrupt("GET /v1/stats did not answer its totals");
  }
  p.processed = applied + dropped + dead;
  return p;
}

// %-encodes everything but unreserved characters, for a query value.
std::string QueryEscape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// Every counter the service lists, page by page.
base::Result<Counters> ReadService(const std::string& api) {
  Counters served;
  std::optional<std::string> after;
  simdjson::dom::parser parser;
  for (int page = 0; page < 1'000'000; ++page) {
    std::string target = "/v1/counters?limit=1000";
    if (after) target += "&after=" + QueryEscape(*after);
    auto got = http::HttpGet(api, target, std::chrono::seconds(10));
    if (!got) return std::move(got).error();
    const http::ClientResponse& response = got.value();
    if (response.status != 200) {
      return base::IoFailure("GET " + target + " answered " + std::to_string(response.status) +
                             ": " + response.body);
    }
    simdjson::dom::element doc;
    simdjson::dom::array list;
    if (parser.parse(response.body).get(doc) != simdjson::SUCCESS ||
        doc["counters"].get_array().get(list) != simdjson::SUCCESS) {
      return base::Corrupt("GET " + target + " did not answer {\"counters\": [...]}");
    }
    for (auto item : list) {
      std::string_view name;
      int64_t value = 0;
      if (item["counter"].get_string().get(name) != simdjson::SUCCESS ||
          item["value"].get_int64().get(value) != simdjson::SUCCESS) {
        return base::Corrupt("GET " + target +
                             " listed a counter without a name or an integer value");
      }
      served[std::string(name)] = value;
    }
    std::string_view next;
    if (doc["next"].get_string().get(next) != simdjson::SUCCESS) return served;  // null: done
    after = std::string(next);
  }
  return base::Corrupt("the counter list never ended");
}

struct Report {
  uint64_t exact = 0, over = 0, under = 0;
  int64_t expected_total = 0, actual_total = 0;
  uint64_t abs_error = 0;
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>>
      wrong;  // name, (expected, actual)
  bool all_exact() const { return over == 0 && under == 0; }
};

Report Compare(const Counters& truth, const Counters& served) {
  Report r;
  const auto account = [&](const std::string& name, int64_t expected, int64_t actual) {
    r.expected_total += expected;
    r.actual_total += actual;
    if (expected == actual) {
      ++r.exact;
      return;
    }
    (actual > expected ? r.over : r.under) += 1;
    r.abs_error += static_cast<uint64_t>(std::llabs(actual - expected));
    r.wrong.push_back({name, {expected, actual}});
  };
  for (const auto& [name, expected] : truth) {
    const auto it = served.find(name);
    account(name, expected, it == served.end() ? 0 : it->second);
  }
  for (const auto& [name, actual] : served) {
    if (!truth.count(name)) account(name, 0, actual);
  }
  return r;
}

void Print(const Report& r, std::ostream& out) {
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < r.wrong.size() && i < kShown; ++i) {
    const auto& [name, values] = r.wrong[i];
    out << (values.second > values.first ? "over  " : "under ") << name << ": expected "
        << values.first << ", served " << values.second << "\n";
  }
  if (r.wrong.size() > kShown) out << "... and " << r.wrong.size() - kShown << " more\n";
  const double base = std::max<double>(1.0, std::fabs(static_cast<double>(r.expected_total)));
  const double error_pct = 100.0 * static_cast<double>(r.abs_error) / base;
  out << "counters: " << r.exact << " exact, " << r.over << " over, " << r.under
      << " under; total expected " << r.expected_total << ", served " << r.actual_total
      << "; error " << error_pct << "%\n";
  json::JsonWriter j;
  j.BeginObject()
      .Key("exact")
      .Uint(r.exact)
      .Key("over")
      .Uint(r.over)
      .Key("under")
      .Uint(r.under)
      .Key("expected_total")
      .Int(r.expected_total)
      .Key("served_total")
      .Int(r.actual_total)
      .Key("error_percent")
      .Double(error_pct)
      .Key("ok")
      .Bool(r.all_exact())
      .EndObject();
  out << j.str() << "\n";
}

}  // namespace

int RunVerify(const VerifyOptions& o, std::ostream& out, std::ostream& err) {
  if (o.api_url.rfind("http://", 0) != 0) {
    err << "verify: --api: expected http://host:port, got \"" << o.api_url << "\"\n";
    return 2;
  }
  if (!(o.timeout_s > 0)) {
    err << "verify: --timeout-s must be positive\n";
    return 2;
  }
  const base::Result<Truth> truth = ReadTruth(o.truth_file);
  if (!truth) {
    err << "verify: " << truth.error() << "\n";
    return base::ExitCodeFor(truth.code());
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  std::optional<Report> last;
  // Counters can match before the service has read everything (retries come last, and
  // a double count of one shows only once it is read): compare once it has caught up.
  std::optional<Progress> progress;
  const auto caught_up = [&] {
    return !truth->messages ||
           (progress && progress->complete && progress->processed >= *truth->messages);
  };
  while (true) {
    if (truth->messages) {
      base::Result<Progress> read = ReadProgress(o.api_url);
      if (read) {
        progress = *read;
      } else {
        err << "verify: " << read.error() << "\n";
      }
    }
    const base::Result<Counters> served = ReadService(o.api_url);
    if (served) {
      last = Compare(truth->counters, *served);
      if (last->all_exact() && caught_up()) break;
    } else {
      err << "verify: " << served.error() << "\n";
    }
    if (std::chrono::steady_clock::now() + o.poll_every >= deadline) break;
    std::this_thread::sleep_for(o.poll_every);
  }
  if (!last) {
    err << "verify: could not read the service's counters before the deadline\n";
    return 1;
  }
  Print(*last, out);
  if (!caught_up()) {
    err << "verify: the service had not caught up by the deadline: "
        << (progress ? std::to_string(progress->processed) : std::string("an unknown number of"))
        << " of " << *truth->messages << " messages processed"
        << (progress && !progress->complete ? ", and it does not hold every shard" : "") << "\n";
    return 1;
  }
  return last->all_exact() ? 0 : 1;
}

}  // namespace oncecount::cmd
