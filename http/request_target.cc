#include "http/request_target.h"

#include "processor/json/utf8.h"

namespace oncecount::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HttpError BadTarget(const std::string& what) {
  return {400, "bad_request", what};
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::variant<RequestTarget, HttpError> ParseRequestTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return BadTarget("the request target must be a path starting with /");
  }
  RequestTarget parsed;
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  // Split after the leading "/"; a trailing "/" adds no empty segment, so "/" has
  // none and "/healthz/" is "/healthz".
  std::string_view rest = path.substr(1);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view raw = rest.substr(0, slash);
    auto decoded = PercentDecode(raw, false);
    if (!decoded) {
      return BadTarget("malformed percent-encoding in the path segment \"" + std::string(raw) +
                       "\"");
    }
    if (!json::IsValidUtf8(*decoded)) {
      return BadTarget(
          "a path segment is not UTF-8 once percent-decoded (counter names are UTF-8)");
    }
    parsed.segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (question == std::string_view::npos) return parsed;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto name = PercentDecode(pair.substr(0, eq), true);
    auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!name || !value) {
      return BadTarget("malformed percent-encoding in the query parameter \"" + std::string(pair) +
                       "\"");
    }
    if (!json::IsValidUtf8(*name) || !json::IsValidUtf8(*value)) {
      return BadTarget("a query parameter is not UTF-8 once percent-decoded");
    }
    if (!parsed.query.emplace(std::move(*name), std::move(*value)).second) {
      return BadTarget("the query parameter \"" + std::string(pair.substr(0, eq)) +
                       "\" is repeated");
    }
  }
  return parsed;
}

}  // namespace oncecount::http
