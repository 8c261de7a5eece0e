#include "processor/kafka/clients.h"

namespace oncecount::kafka {

std::string KafkaError::ToString() const {
  if (ok()) return "no error";
  std::string s = message.empty() ? code : message;
  if (!code.empty() && message.find(code) == std::string::npos) s += " (" + code + ")";
  return s;
}

bool IsRecordTooLarge(const KafkaError& error) {
  // librdkafka's names: the local check against message.max.bytes and the broker's
  // MESSAGE_TOO_LARGE share MSG_SIZE_TOO_LARGE; RECORD_LIST_TOO_LARGE is a produce
  // request over the broker's limit.
  return error.code == "MSG_SIZE_TOO_LARGE" || error.code == "RECORD_LIST_TOO_LARGE";
}

}  // namespace oncecount::kafka
