#include "processor/json/json_writer.h"

#include <cmath>
#include <cstdio>

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
  for (unsigned char c : value) {
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
