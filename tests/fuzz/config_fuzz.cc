// Fuzz target: the configuration parser (YAML text, no environment). Whatever it
// accepts must render back to YAML it accepts again.
#include <cstdlib>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oncecount::config;  // NOLINT(google-build-using-namespace)
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  const EnvLookup no_env = [](const std::string&) { return std::optional<std::string>(); };
  const auto parsed = ParseConfig(yaml, no_env, "fuzz");
  if (!parsed) return 0;
  if (!ParseConfig(RenderConfig(parsed.value()), no_env, "rendered").ok()) std::abort();
  return 0;
}
