#include "processor/json/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "processor/json/utf8.h"

namespace oncecount::json {

void JsonWriter::Separate() {
  if (need_comma_) out_.push_back(',');
  need_comma_ = false;
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_.push_back('{');
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_.push_back('[');
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  String(key);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view value) {
  Separate();
  out_.push_back('"');
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      // Bytes that are not UTF-8 (a client's request quoted in a message) become
      // U+FFFD: the output stays valid JSON whatever the input.
      const size_t n = Utf8SequenceLength(value.substr(i));
      if (n == 0) {
        out_ += "\\ufffd";
      } else {
        out_.append(value.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out_ += buf;
        } else {
          out_.push_back(static_cast<char>(c));
        }
    }
  }
  out_.push_back('"');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Int(int64_t value) {
  Separate();
  out_ += std::to_string(value);
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Uint(uint64_t value) {
  Separate();
  out_ += std::to_string(value);
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Double(double value) {
  if (!std::isfinite(value)) return Null();
  Separate();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out_ += buf;
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Float(float value) {
  if (!std::isfinite(value)) return Null();
  Separate();
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, ec == std::errc() ? end : buf);
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Bool(bool value) {
  Separate();
  out_ += value ? "true" : "false";
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Null() {
  Separate();
  out_ += "null";
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  Separate();
  out_ += json;
  need_comma_ = true;
  return *this;
}

}  // namespace oncecount::json
