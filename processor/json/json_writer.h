// JsonWriter: a small streaming writer for the JSON that commands and the HTTP API
// write. It escapes strings (bytes that are not UTF-8 become U+FFFD, so the output
// is valid JSON whatever it is given), writes doubles round-trippably (non-finite
// numbers become null) and tracks commas; nesting errors are the caller's bug and
// are not checked.
//
// Thread-safety: one writer per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace oncecount::json {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);
  // The shortest text that reads back as the same float (for values kept as floats).
  JsonWriter& Float(float value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Inserts already-serialized JSON as one value.
  JsonWriter& Raw(std::string_view json);

  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace oncecount::json
