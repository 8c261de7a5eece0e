#include "processor/service/bounded_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace oncecount::service {
namespace {

TEST(BoundedQueue, HandsItemsOutInTheOrderTheyCameIn) {
  BoundedQueue<int> q(8);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.Push(i));
  EXPECT_EQ(q.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    int item = -1;
    ASSERT_TRUE(q.Pop(item));
    EXPECT_EQ(item, i);
  }
}

TEST(BoundedQueue, MovesItemsThatCannotBeCopied) {
  BoundedQueue<std::unique_ptr<int>> q(2);
  ASSERT_TRUE(q.Push(std::make_unique<int>(7)));
  std::unique_ptr<int> item;
  ASSERT_TRUE(q.Pop(item));
  EXPECT_EQ(*item, 7);
}

// A producer that fills a small queue has to wait for the consumer: every item
// still arrives, once, in order.
TEST(BoundedQueue, CarriesEveryItemFromAFasterProducerThroughASmallQueue) {
  BoundedQueue<int> q(3);
  constexpr int kItems = 10000;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) ASSERT_TRUE(q.Push(i));
  });
  std::vector<int> seen;
  int item = 0;
  while (seen.size() < kItems && q.Pop(item)) {
    EXPECT_LE(q.size(), 3u);
    seen.push_back(item);
  }
  producer.join();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
}

TEST(BoundedQueue, AfterCloseRefusesNewItemsAndDrainsTheRest) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.Push(1));
  ASSERT_TRUE(q.Push(2));
  q.Close();
  EXPECT_FALSE(q.Push(3));
  int item = 0;
  ASSERT_TRUE(q.Pop(item));
  EXPECT_EQ(item, 1);
  ASSERT_TRUE(q.Pop(item));
  EXPECT_EQ(item, 2);
  EXPECT_FALSE(q.Pop(item));
}

TEST(BoundedQueue, CloseWakesAConsumerWaitingOnAnEmptyQueue) {
  BoundedQueue<int> q(1);
  bool got = true;
  std::thread consumer([&] {
    int item = 0;
    got = q.Pop(item);
  });
  q.Close();
  consumer.join();
  EXPECT_FALSE(got);
}

}  // namespace
}  // namespace oncecount::service
