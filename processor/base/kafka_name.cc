#include "processor/base/kafka_name.h"

#include <cctype>

namespace oncecount::base {

std::string KafkaNameProblem(std::string_view name) {
  if (name.empty() || name.size() > kMaxKafkaNameChars) {
    return "must be 1 to " + std::to_string(kMaxKafkaNameChars) + " characters, not " +
           std::to_string(name.size());
  }
  if (name == "." || name == "..") return "may not be \".\" or \"..\"";
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-') {
      return "may hold only letters, digits, '.', '_' and '-', not '" + std::string(1, c) + "'";
    }
  }
  return {};
}

}  // namespace oncecount::base
