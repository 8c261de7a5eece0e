// KafkaNameProblem: a name is refused exactly when Kafka would refuse it as a topic
// name or group.instance.id.
#include "processor/base/kafka_name.h"

#include <gtest/gtest.h>

namespace oncecount::base {
namespace {

TEST(KafkaNameProblem, AcceptsOneTo249LettersDigitsDotsUnderscoresAndDashes) {
  EXPECT_EQ(KafkaNameProblem("oncecount-0.oncecount_a-8080"), "");
  EXPECT_EQ(KafkaNameProblem("a"), "");
  EXPECT_EQ(KafkaNameProblem("..."), "");
  EXPECT_EQ(KafkaNameProblem(std::string(249, 'a')), "");
}

TEST(KafkaNameProblem, SaysWhatIsWrongWithANameKafkaRefuses) {
  EXPECT_EQ(KafkaNameProblem(""), "must be 1 to 249 characters, not 0");
  EXPECT_EQ(KafkaNameProblem(std::string(250, 'a')), "must be 1 to 249 characters, not 250");
  EXPECT_EQ(KafkaNameProblem("."), "may not be \".\" or \"..\"");
  EXPECT_EQ(KafkaNameProblem(".."), "may not be \".\" or \"..\"");
  EXPECT_EQ(KafkaNameProblem("a/b"), "may hold only letters, digits, '.', '_' and '-', not '/'");
  for (const char* bad : {"a b", "a:b", "\xc3\xa9t\xc3\xa9", "a\nb", "a\x7f"}) {
    EXPECT_NE(KafkaNameProblem(bad), "") << bad;
  }
}

}  // namespace
}  // namespace oncecount::base
