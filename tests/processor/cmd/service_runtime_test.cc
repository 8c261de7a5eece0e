// DefaultInstanceId: the instance id (and so the transactional.id) an instance takes
// when none is given must never be shared by two live instances, and must be one the
// broker takes as group.instance.id.
#include "processor/cmd/service_runtime.h"

#include <gtest/gtest.h>

#include "processor/base/kafka_name.h"

namespace oncecount::cmd {
namespace {

TEST(DefaultInstanceId, GivesTwoInstancesOnAnyFreePortDifferentIds) {
  const std::string a = DefaultInstanceId("127.0.0.1:0", 1);
  const std::string b = DefaultInstanceId("127.0.0.1:0", 2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(a.size() - 17), "-0000000000000001");
}

TEST(DefaultInstanceId, IsStableForAFixedPortAcrossRestarts) {
  EXPECT_EQ(DefaultInstanceId("0.0.0.0:8080", 1), DefaultInstanceId("0.0.0.0:8080", 2));
  const std::string id = DefaultInstanceId("0.0.0.0:8080", 1);
  EXPECT_EQ(id.substr(id.size() - 5), "-8080");
}

TEST(DefaultInstanceId, TellsApartInstancesOnDifferentAddressesOfOneHost) {
  const std::string local = DefaultInstanceId("127.0.0.1:8080", 1);
  const std::string other = DefaultInstanceId("10.0.0.5:8080", 1);
  EXPECT_NE(local, other);
  EXPECT_NE(local.find("-127_0_0_1-8080"), std::string::npos);
}

TEST(DefaultInstanceId, IsANameKafkaTakesAsAGroupInstanceId) {
  EXPECT_EQ(base::KafkaNameProblem(DefaultInstanceId("127.0.0.1:8080", 1)), "");
  EXPECT_EQ(base::KafkaNameProblem(DefaultInstanceId("[::1]:0", 7)), "");
}

}  // namespace
}  // namespace oncecount::cmd
