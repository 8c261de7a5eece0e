#include "http/route.h"

#include <charconv>

namespace oncecount::http {
namespace {

HttpError NotFound(const RequestTarget& t) {
  std::string path;
  for (const std::string& s : t.segments) path += "/" + s;
  return {404, "not_found", "no such resource: " + (path.empty() ? "/" : path)};
}

std::optional<int64_t> ParseNumber(const std::string& text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    return std::nullopt;
  }
  return v;
}

// Which endpoint a path names, before the method and the parameters are checked.
std::optional<Route> Resolve(const RequestTarget& t) {
  const auto& s = t.segments;
  Route r;
  if (s.empty()) {
    r.endpoint = Endpoint::kDashboard;
  } else if (s.size() == 1 && s[0] == "healthz") {
    r.endpoint = Endpoint::kHealthz;
  } else if (s.size() == 1 && s[0] == "readyz") {
    r.endpoint = Endpoint::kReadyz;
  } else if (s.size() == 1 && s[0] == "metrics") {
    r.endpoint = Endpoint::kMetrics;
  } else if (s.size() == 2 && s[0] == "v1" && s[1] == "stats") {
    r.endpoint = Endpoint::kStats;
  } else if (s.size() == 2 && s[0] == "v1" && s[1] == "history") {
    r.endpoint = Endpoint::kHistory;
  } else if (s.size() == 2 && s[0] == "v1" && s[1] == "counters") {
    r.endpoint = Endpoint::kCounterList;
  } else if (s.size() == 3 && s[0] == "v1" && s[1] == "counters" && !s[2].empty()) {
    r.endpoint = Endpoint::kCounter;
    r.name = s[2];
  } else if (s.size() == 3 && s[0] == "v1" && s[1] == "shards") {
    r.endpoint = Endpoint::kShard;
  } else {
    return std::nullopt;
  }
  return r;
}

}  // namespace

std::variant<Route, HttpError> MatchRoute(std::string_view method, const RequestTarget& target) {
  std::optional<Route> route = Resolve(target);
  if (!route) return NotFound(target);
  if (method != "GET" && method != "HEAD") {
    return HttpError{405, "method_not_allowed",
                     "this resource accepts GET and HEAD, not " + std::string(method), "GET, HEAD"};
  }
  // Only the list and the history take parameters: elsewhere one would be ignored, and
  // a caller who meant it (/v1/stats?partition=3) would get an answer it did not ask for.
  if (!target.query.empty() && route->endpoint != Endpoint::kCounterList &&
      route->endpoint != Endpoint::kHistory) {
    return HttpError{400, "bad_request",
                     "unknown query parameter \"" + target.query.begin()->first +
                         "\" (this resource takes none)"};
  }
  if (route->endpoint == Endpoint::kShard) {
    const auto partition = ParseNumber(target.segments[2], 0, INT32_MAX);
    if (!partition) {
      return HttpError{
          400, "bad_request",
          "partition must be an integer in 0..2147483647, got \"" + target.segments[2] + "\""};
    }
    route->partition = base::Partition(static_cast<int32_t>(*partition));
  }
  if (route->endpoint == Endpoint::kHistory) {
    for (const auto& [name, value] : target.query) {
      const auto since = name == "since" ? ParseNumber(value, 0, INT64_MAX) : std::nullopt;
      if (name != "since") {
        return HttpError{400, "bad_request",
                         "unknown query parameter \"" + name + "\" (expected since)"};
      }
      if (!since) {
        return HttpError{400, "bad_request",
                         "since must be a time in ms since the epoch, 0..9223372036854775807, "
                         "got \"" +
                             value + "\""};
      }
      route->since_ms = *since;
    }
  }
  if (route->endpoint == Endpoint::kCounterList) {
    for (const auto& [name, value] : target.query) {
      if (name == "prefix") {
        route->prefix = value;
      } else if (name == "after") {
        route->after = value;
      } else if (name == "order") {
        if (value != "name" && value != "recent") {
          return HttpError{400, "bad_request",
                           "order must be name or recent, got \"" + value + "\""};
        }
        route->order = value == "recent" ? CounterOrder::kRecent : CounterOrder::kName;
      } else if (name == "limit") {
        const auto limit = ParseNumber(value, 1, kMaxListLimit);
        if (!limit) {
          return HttpError{400, "bad_request",
                           "limit must be an integer in 1..1000, got \"" + value + "\""};
        }
        route->limit = static_cast<int>(*limit);
      } else {
        return HttpError{
            400, "bad_request",
            "unknown query parameter \"" + name + "\" (expected prefix, limit, after, order)"};
      }
    }
    if (route->order == CounterOrder::kRecent && route->after) {
      return HttpError{400, "bad_request",
                       "after pages the name order only; order=recent is a single page"};
    }
  }
  return *route;
}

}  // namespace oncecount::http
