// FuzzInput: splits one libFuzzer input into the parts a target needs (a length
// byte, then that many bytes, then the rest), so that one byte string drives
// several arguments. For the fuzz targets only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace oncecount::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  // One byte (0 when none is left).
  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // Up to `n` bytes.
  std::string_view Take(size_t n) {
    const std::string_view part = rest_.substr(0, n);
    rest_.remove_prefix(part.size());
    return part;
  }
  // A part whose length is the next byte.
  std::string_view Prefixed() { return Take(Byte()); }
  std::string_view Rest() { return Take(rest_.size()); }

 private:
  std::string_view rest_;
};

}  // namespace oncecount::fuzz
