// TensorQueue's wake-up of the engine thread: a push writes to wake_fd only while the engine
// sleeps (begin_sleep .. end_sleep), and never leaves a sleeping engine with a request waiting.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/tensor_queue.h"

namespace {

using hvdc::core::OpState;
using hvdc::core::TensorEntry;
using hvdc::core::TensorQueue;

TensorEntry entry_named(const std::string& name) {
  TensorEntry entry;
  entry.request.name = name;
  entry.state = std::make_shared<OpState>(nullptr, nullptr);
  return entry;
}

// Whether wake_fd becomes readable within timeout_ms.
bool readable(const TensorQueue& queue, int timeout_ms = 0) {
  struct pollfd fd = {queue.wake_fd(), POLLIN, 0};
  return ::poll(&fd, 1, timeout_ms) == 1;
}

TEST(TensorQueueWake, PushWakesOnlyASleepingEngine) {
  TensorQueue queue;
  std::vector<hvdc::core::Request> popped;
  ASSERT_TRUE(queue.push(entry_named("awake")).is_ok());
  EXPECT_FALSE(readable(queue));      // the engine is awake: it pops the request on its next pass
  EXPECT_FALSE(queue.begin_sleep());  // a request waits: no sleep
  EXPECT_EQ(queue.pop_new(&popped), 1u);

  ASSERT_TRUE(queue.begin_sleep());
  EXPECT_FALSE(readable(queue));
  ASSERT_TRUE(queue.push(entry_named("asleep")).is_ok());
  EXPECT_TRUE(readable(queue));
  queue.end_sleep();
  EXPECT_FALSE(readable(queue));  // drained
  EXPECT_EQ(queue.pop_new(&popped), 1u);
}

TEST(TensorQueueWake, WakeAlwaysWakes) {
  TensorQueue queue;
  queue.wake();  // abort, shutdown and hang reports wake the engine whatever it does
  EXPECT_TRUE(readable(queue));
  ASSERT_TRUE(queue.begin_sleep());
  queue.end_sleep();
  EXPECT_FALSE(readable(queue));
}

TEST(TensorQueueWake, ClosingClearsTheWaitingRequests) {
  TensorQueue queue;
  ASSERT_TRUE(queue.push(entry_named("a")).is_ok());
  EXPECT_EQ(queue.close(hvdc::common::Status(HVD_ERR_SHUT_DOWN, "closed")).size(), 1u);
  EXPECT_TRUE(queue.begin_sleep());  // nothing is left to pop, so the engine may sleep
  queue.end_sleep();
}

// One thread pushes while another runs the engine's sleep protocol: every push must reach the
// "engine" at once, so no sleep may last until its timeout.
TEST(TensorQueueWake, NoPushIsLostWhileTheEngineFallsAsleep) {
  TensorQueue queue;
  constexpr int kPushes = 2000;
  std::atomic<int> popped{0};
  std::atomic<int> timed_out{0};
  std::thread engine([&] {
    std::vector<hvdc::core::Request> requests;
    while (popped.load() < kPushes) {
      popped += static_cast<int>(queue.pop_new(&requests));
      if (popped.load() == kPushes) break;
      if (queue.begin_sleep() && !readable(queue, 5000)) ++timed_out;
      queue.end_sleep();
    }
  });
  for (int i = 0; i < kPushes; ++i) {
    ASSERT_TRUE(queue.push(entry_named("t" + std::to_string(i))).is_ok());
    if (i % 7 == 0) std::this_thread::yield();
  }
  engine.join();
  EXPECT_EQ(popped.load(), kPushes);
  EXPECT_EQ(timed_out.load(), 0);
}

}  // namespace
