#include "processor/base/result.h"

#include <ostream>

namespace oncecount::base {

int ExitCodeFor(Errc code) {
  switch (code) {
    case Errc::kUsage:
    case Errc::kBadConfig:
    case Errc::kMissingTopic:
    case Errc::kInvalidArgument:
      return 2;
    case Errc::kStopped:
      return 0;
    case Errc::kCorrupt:
    case Errc::kKafka:
    case Errc::kIo:
    case Errc::kResourceExhausted:
    case Errc::kUnavailable:
    case Errc::kInternal:
      return 1;
  }
  return 1;
}

std::string Error::ToString() const {
  return subject_.empty() ? message_ : subject_ + ": " + message_;
}

std::ostream& operator<<(std::ostream& out, const Error& error) {
  return out << error.ToString();
}

Error Error::Wrap(std::string_view context) const& {
  return Error(code_, std::string(context) + ": " + message_, subject_);
}

Error Error::Wrap(std::string_view context) && {
  message_.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

}  // namespace oncecount::base
