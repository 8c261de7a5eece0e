#include "http/http_error.h"

#include "processor/json/json_writer.h"

namespace oncecount::http {

std::string ErrorBody(const HttpError& error) {
  json::JsonWriter j;
  j.BeginObject().Key("error").String(error.code).Key("message").String(error.message).EndObject();
  return j.str();
}

}  // namespace oncecount::http
