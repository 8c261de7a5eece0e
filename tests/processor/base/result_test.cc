#include "processor/base/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <sstream>

namespace oncecount::base {
namespace {

Result<int> Half(int n) {
  if (n % 2 != 0) return InvalidArgument(std::to_string(n) + " is odd");
  return n / 2;
}

TEST(Result, HoldsAValueOrAnErrorWithItsCode) {
  const Result<int> half = Half(8);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*half, 4);
  const Result<int> odd = Half(7);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.code(), Errc::kInvalidArgument);
  EXPECT_EQ(odd.message(), "7 is odd");
}

TEST(Result, MovesOutAValueThatCannotBeCopied) {
  Result<std::unique_ptr<int>> made = std::make_unique<int>(3);
  std::unique_ptr<int> taken = std::move(made).value();
  EXPECT_EQ(*taken, 3);
}

TEST(Status, IsOkByDefaultAndCarriesAnErrorOtherwise) {
  EXPECT_TRUE(Status().ok());
  EXPECT_TRUE(Status::Ok().ok());
  const Status failed = IoFailure("disk full");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), Errc::kIo);
  EXPECT_EQ(failed.message(), "disk full");
}

TEST(Error, PutsItsSubjectBeforeItsMessage) {
  const Error bad(Errc::kBadConfig, "expected an integer, got x", "dedup.window_ms");
  EXPECT_EQ(bad.ToString(), "dedup.window_ms: expected an integer, got x");
  EXPECT_EQ(Corrupt("bad magic").ToString(), "bad magic");
  std::ostringstream out;
  out << bad;
  EXPECT_EQ(out.str(), bad.ToString());
}

TEST(Error, WrapsItsMessageInContextAndKeepsItsCodeAndSubject) {
  const Error inner(Errc::kCorrupt, "checksum mismatch", "shard 3");
  const Error outer = inner.Wrap("reading /var/lib/oncecount/x.checkpoint");
  EXPECT_EQ(outer.code(), Errc::kCorrupt);
  EXPECT_EQ(outer.subject(), "shard 3");
  EXPECT_EQ(outer.message(), "reading /var/lib/oncecount/x.checkpoint: checksum mismatch");
  EXPECT_EQ(Error(inner).Wrap("again").message(), "again: checksum mismatch");
}

// SPEC §3: 2 for usage and configuration errors, 1 for runtime failures; a stop
// request is not a failure.
TEST(ExitCodeFor, FollowsTheErrorCodeNotTheCallSite) {
  EXPECT_EQ(ExitCodeFor(Errc::kUsage), 2);
  EXPECT_EQ(ExitCodeFor(Errc::kBadConfig), 2);
  EXPECT_EQ(ExitCodeFor(Errc::kMissingTopic), 2);
  EXPECT_EQ(ExitCodeFor(Errc::kInvalidArgument), 2);
  EXPECT_EQ(ExitCodeFor(Errc::kStopped), 0);
  for (Errc runtime : {Errc::kCorrupt, Errc::kKafka, Errc::kIo, Errc::kResourceExhausted,
                       Errc::kUnavailable, Errc::kInternal}) {
    EXPECT_EQ(ExitCodeFor(runtime), 1) << ErrcName(runtime);
  }
}

TEST(ErrcName, GivesEveryCodeADistinctStableName) {
  std::set<std::string_view> names;
  for (int c = static_cast<int>(Errc::kInvalidArgument); c <= static_cast<int>(Errc::kInternal);
       ++c) {
    const std::string_view name = ErrcName(static_cast<Errc>(c));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(ErrcName(Errc::kBadConfig), "bad_config");
}

}  // namespace
}  // namespace oncecount::base
