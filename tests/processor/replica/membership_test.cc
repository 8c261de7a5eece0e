#include "processor/replica/membership.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace oncecount::replica {
namespace {

using namespace std::chrono_literals;

MemberRecord Heartbeat(const std::string& id, std::vector<base::Partition> actives,
                       int64_t sent_at = 0, bool leaving = false) {
  MemberRecord m;
  m.instance_id = id;
  m.api_url = "http://" + id;
  m.actives = std::move(actives);
  m.sent_at_ms = sent_at;
  m.leaving = leaving;
  return m;
}

TEST(Membership, CountsItselfAndWhoeverWasHeardWithinTheTimeout) {
  Membership m("b", 5000ms);
  EXPECT_EQ(m.Live(0), std::vector<std::string>{"b"});
  m.Observe(Heartbeat("a", {}), 1000);
  m.Observe(Heartbeat("c", {}), 3000);
  EXPECT_EQ(m.Live(6000), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(m.Live(6001), (std::vector<std::string>{"b", "c"})) << "a went quiet";
  m.Observe(Heartbeat("c", {}, 0, /*leaving=*/true), 6002);
  EXPECT_EQ(m.Live(6002), std::vector<std::string>{"b"}) << "c said goodbye";
}

TEST(Membership, TakesTheActiveFromTheNewestLiveRecordThatListsTheShard) {
  Membership m("x", 5000ms);
  m.Observe(Heartbeat("a", {base::Partition(0), base::Partition(1)}, 100), 100);
  EXPECT_EQ(m.ActiveOf(base::Partition(1), 200), "a");
  EXPECT_EQ(m.ActiveOf(base::Partition(2), 200), "");
  // The group moved shard 1 to b; a's last record still lists it.
  m.Observe(Heartbeat("b", {base::Partition(1)}, 300), 300);
  EXPECT_EQ(m.ActiveOf(base::Partition(1), 400), "b");
  EXPECT_EQ(m.ActiveOf(base::Partition(0), 400), "a");
}

TEST(Membership, TellsWhenAnOwnerOfAShardWasLastHeardEvenOnceItWentQuiet) {
  Membership m("x", 5000ms);
  EXPECT_EQ(m.LastHeardOwning(base::Partition(0)), -1);
  m.Observe(Heartbeat("a", {base::Partition(0)}, 100), 100);
  m.Observe(Heartbeat("a", {base::Partition(0)}, 1100), 1100);
  EXPECT_EQ(m.ActiveOf(base::Partition(0), 7000), "") << "a went quiet";
  EXPECT_EQ(m.LastHeardOwning(base::Partition(0)), 1100);
  // Regression: the newest owner gave the shard up (a rebalance), while a long-dead
  // one's last record still lists it: the shard was owned until the newest owner's
  // last listing, not until the dead one's.
  m.Observe(Heartbeat("c", {base::Partition(0)}, 20'000), 20'000);
  m.Observe(Heartbeat("c", {base::Partition(0)}, 30'000), 30'000);
  m.Observe(Heartbeat("c", {}, 31'000), 31'000);
  EXPECT_EQ(m.ActiveOf(base::Partition(0), 31'500), "");
  EXPECT_EQ(m.LastHeardOwning(base::Partition(0)), 30'000);
}

TEST(Membership, PicksNoStandbyWhenNoneIsAsked) {
  Membership m("a", 5000ms);
  m.Observe(Heartbeat("b", {}), 0);
  EXPECT_TRUE(m.StandbysOf(base::Partition(0), 0, 0).empty());
}

TEST(Membership, NeverPicksTheActiveAndPicksAtMostR) {
  Membership m("a", 5000ms);
  for (const char* id : {"b", "c", "d"}) m.Observe(Heartbeat(id, {}), 0);
  m.Observe(Heartbeat("c", {base::Partition(7)}), 0);
  for (int64_t r = 1; r <= 4; ++r) {
    const std::vector<std::string> standbys = m.StandbysOf(base::Partition(7), r, 0);
    EXPECT_EQ(standbys.size(), static_cast<size_t>(std::min<int64_t>(r, 3)));
    EXPECT_EQ(std::count(standbys.begin(), standbys.end(), "c"), 0);
  }
}

TEST(Membership, EveryInstanceComputesTheSameStandbys) {
  const std::vector<std::string> ids = {"alpha", "beta", "gamma", "delta"};
  std::vector<Membership> views;
  for (const std::string& self : ids) views.emplace_back(self, 5000ms);
  for (Membership& view : views) {
    for (size_t i = 0; i < ids.size(); ++i) {
      view.Observe(Heartbeat(ids[i], {base::Partition(static_cast<int32_t>(i))}), 0);
    }
  }
  for (base::Partition p : base::AllPartitions(32)) {
    for (const Membership& view : views) {
      EXPECT_EQ(view.StandbysOf(p, 2, 0), views[0].StandbysOf(p, 2, 0)) << "shard " << p;
    }
  }
}

TEST(Membership, WithTwoInstancesTheOtherOneStandsByForEveryShard) {
  Membership a("a", 5000ms);
  a.Observe(Heartbeat("b", {base::Partition(1), base::Partition(3)}), 0);
  a.Observe(Heartbeat("a", {base::Partition(0), base::Partition(2)}), 0);
  for (int32_t p : {1, 3}) EXPECT_TRUE(a.IsStandby("a", base::Partition(p), 1, 0));
  for (int32_t p : {0, 2}) EXPECT_FALSE(a.IsStandby("a", base::Partition(p), 1, 0));
  for (int32_t p : {0, 2}) EXPECT_TRUE(a.IsStandby("b", base::Partition(p), 1, 0));
}

// Rendezvous hashing: when an instance leaves, only the shards it stood by for get
// new standbys; every other shard keeps its own.
TEST(Membership, MovesOnlyTheLeaversStandbysWhenAnInstanceLeaves) {
  Membership m("i0", 5000ms);
  for (int i = 1; i < 6; ++i) m.Observe(Heartbeat("i" + std::to_string(i), {}), 0);
  std::map<base::Partition, std::vector<std::string>> before;
  for (base::Partition p : base::AllPartitions(64)) before[p] = m.StandbysOf(p, 1, 0);
  m.Observe(Heartbeat("i3", {}, 0, /*leaving=*/true), 1);
  int moved = 0;
  for (base::Partition p : base::AllPartitions(64)) {
    const std::vector<std::string> after = m.StandbysOf(p, 1, 1);
    if (before[p] == std::vector<std::string>{"i3"}) {
      EXPECT_NE(after, before[p]);
      ++moved;
    } else {
      EXPECT_EQ(after, before[p]) << "shard " << p;
    }
  }
  EXPECT_GT(moved, 0) << "i3 stood by for some of 64 shards";
}

TEST(Membership, SpreadsStandbysOverTheInstances) {
  Membership m("i0", 5000ms);
  for (int i = 1; i < 4; ++i) m.Observe(Heartbeat("i" + std::to_string(i), {}), 0);
  std::map<std::string, int> count;
  for (base::Partition p : base::AllPartitions(400)) ++count[m.StandbysOf(p, 1, 0).at(0)];
  ASSERT_EQ(count.size(), 4u);
  for (const auto& [id, n] : count) EXPECT_GT(n, 60) << id;
}

TEST(Membership, ListsTheOtherLiveInstances) {
  Membership m("a", 5000ms);
  m.Observe(Heartbeat("a", {base::Partition(0)}), 0);
  m.Observe(Heartbeat("b", {base::Partition(1)}), 0);
  const std::vector<MemberRecord> others = m.Others(0);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].instance_id, "b");
  EXPECT_EQ(others[0].api_url, "http://b");
}

}  // namespace
}  // namespace oncecount::replica
