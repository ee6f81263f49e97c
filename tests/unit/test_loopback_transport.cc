// The loopback transport on its own: the transport.h contract the engine relies on (exact-tag
// receives, control messages polled by mask, waits ended by a failed peer, the progress timeout
// or an interrupt, sleeps ended by a delivery) and the fabric's fault knobs and counters.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/loopback/fabric.h"
#include "transport/waiting.h"

namespace {

using hvdc::common::Status;
using hvdc::transport::make_tag;
using hvdc::transport::Request;
using hvdc::transport::Tag;
using hvdc::transport::TagKind;
using hvdc::transport::Transport;
using hvdc::transport::TransportOptions;
using hvdc::transport::loopback::LoopbackFabric;
using Clock = std::chrono::steady_clock;

struct Pair {
  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<std::unique_ptr<Transport>> t;
};

Pair connect(int n, double timeout_seconds = 0) {
  Pair p;
  p.fabric = LoopbackFabric::create(n);
  p.t.resize(n);
  for (int r = 0; r < n; ++r) {
    TransportOptions options;
    options.rank = r;
    options.size = n;
    options.progress_timeout_seconds = timeout_seconds;
    Status st = p.fabric->factory()(options, nullptr, &p.t[r]);
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  return p;
}

Tag data_tag(int from, uint64_t payload) {
  return make_tag(TagKind::kData, from, payload);
}

TEST(LoopbackTransport, ReceivesMatchTheExactTagWhicheverComesFirst) {
  Pair p = connect(2);
  std::vector<int> early(100), late(100), a(100, 7), b(100, 9);
  Request recv_early, send_a, send_b, recv_late;
  ASSERT_TRUE(p.t[1]->irecv(0, data_tag(0, 1), early.data(), 400, &recv_early).is_ok());
  ASSERT_TRUE(p.t[0]->isend(1, data_tag(0, 2), b.data(), 400, &send_b).is_ok());
  ASSERT_TRUE(p.t[0]->isend(1, data_tag(0, 1), a.data(), 400, &send_a).is_ok());
  ASSERT_TRUE(p.t[1]->irecv(0, data_tag(0, 2), late.data(), 400, &recv_late).is_ok());
  Request both[] = {recv_early, recv_late};
  Status st = p.t[1]->wait(both, 2, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(early, a);
  EXPECT_EQ(late, b);
  EXPECT_EQ(both[0].impl, nullptr);
  EXPECT_EQ(p.fabric->counts().of(TagKind::kData), 2u);
}

TEST(LoopbackTransport, AReceiveOfTheWrongSizeFails) {
  Pair p = connect(2);
  char buf[8];
  Request send, recv;
  ASSERT_TRUE(p.t[0]->isend(1, data_tag(0, 5), "0123456789", 10, &send).is_ok());
  ASSERT_TRUE(p.t[1]->irecv(0, data_tag(0, 5), buf, sizeof(buf), &recv).is_ok());
  Status st = p.t[1]->wait(&recv, 1, nullptr);
  EXPECT_EQ(st.code(), HVD_ERR_TRANSPORT) << st.message();
  EXPECT_NE(st.message().find("10 bytes arrived for a 8-byte receive"), std::string::npos)
      << st.message();
  p.t[1]->quiesce();
}

TEST(LoopbackTransport, ControlMessagesArePolledByMaskInArrivalOrder) {
  Pair p = connect(3);
  ASSERT_TRUE(p.t[0]->send_message(2, make_tag(TagKind::kRound, 0, 1), "r0").is_ok());
  ASSERT_TRUE(p.t[1]->send_message(2, make_tag(TagKind::kStall, 1, 0), "s1").is_ok());
  ASSERT_TRUE(p.t[1]->send_message(2, make_tag(TagKind::kRound, 1, 1), "r1").is_ok());
  EXPECT_GE(p.t[2]->progress(), 3);
  Tag got;
  std::string bytes;
  const Tag round = make_tag(TagKind::kRound, 0, 0);
  ASSERT_TRUE(p.t[2]->poll_message(round, hvdc::transport::kTagKindMask, &got, &bytes));
  EXPECT_EQ(bytes, "r0");
  ASSERT_TRUE(p.t[2]->poll_message(round, hvdc::transport::kTagKindMask, &got, &bytes));
  EXPECT_EQ(bytes, "r1");
  EXPECT_EQ(hvdc::transport::tag_source(got), 1);
  EXPECT_FALSE(p.t[2]->poll_message(round, hvdc::transport::kTagKindMask, &got, &bytes));
  ASSERT_TRUE(p.t[2]->poll_message(0, 0, &got, &bytes));  // any kind: the one left
  EXPECT_EQ(bytes, "s1");
  EXPECT_EQ(p.fabric->counts().of(TagKind::kRound), 2u);
  EXPECT_EQ(p.fabric->counts().of(TagKind::kStall), 1u);
  p.fabric->reset_counters();
  EXPECT_EQ(p.fabric->counts().of(TagKind::kRound), 0u);
}

TEST(LoopbackTransport, AFailedPeerFailsWaitsAndIsReportedOnBothSides) {
  Pair p = connect(3);
  EXPECT_TRUE(p.t[0]->check_peers().is_ok());
  int x = 0;
  Request recv;
  ASSERT_TRUE(p.t[0]->irecv(2, data_tag(2, 1), &x, sizeof(x), &recv).is_ok());
  p.fabric->fail(2);
  Status st = p.t[0]->wait(&recv, 1, nullptr);
  EXPECT_EQ(st.code(), HVD_ERR_PEER_FAILURE) << st.message();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.message();
  EXPECT_EQ(recv.impl, nullptr);  // the transport took it over
  p.t[0]->quiesce();
  EXPECT_EQ(p.t[1]->check_peers().code(), HVD_ERR_PEER_FAILURE);
  EXPECT_EQ(p.t[2]->check_peers().code(), HVD_ERR_PEER_FAILURE);  // it lost every peer
  EXPECT_EQ(p.t[1]->send_message(2, make_tag(TagKind::kRound, 1, 1), "x").code(),
            HVD_ERR_PEER_FAILURE);
  Request send;
  EXPECT_EQ(p.t[1]->isend(2, data_tag(1, 1), &x, sizeof(x), &send).code(), HVD_ERR_PEER_FAILURE);
  // A refused post ends all communication, as a failed wait does: its op returns before waiting
  // for what it posted, and quiesce() stops that.
  Status after = p.t[1]->isend(0, data_tag(1, 1), &x, sizeof(x), &send);
  EXPECT_EQ(after.code(), HVD_ERR_TRANSPORT) << after.message();
  EXPECT_NE(after.message().find("earlier failure"), std::string::npos) << after.message();
}

TEST(LoopbackTransport, AWaitWithoutProgressTimesOutNamingThePeers) {
  Pair p = connect(3, 0.2);
  int x = 0, y = 0;
  Request reqs[2];
  ASSERT_TRUE(p.t[0]->irecv(2, data_tag(2, 1), &x, sizeof(x), &reqs[0]).is_ok());
  ASSERT_TRUE(p.t[0]->irecv(1, data_tag(1, 1), &y, sizeof(y), &reqs[1]).is_ok());
  const auto begin = Clock::now();
  Status st = p.t[0]->wait(reqs, 2, nullptr);
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(200));
  EXPECT_EQ(st.code(), HVD_ERR_TIMEOUT) << st.message();
  EXPECT_EQ(p.t[0]->waited_peers(), (std::vector<int>{1, 2}));
  Request again;
  EXPECT_EQ(p.t[0]->irecv(1, data_tag(1, 2), &y, sizeof(y), &again).code(), HVD_ERR_TRANSPORT);
  p.t[0]->quiesce();
  // After quiesce no sender writes into the abandoned buffers.
  Request send;
  int z = 42;
  ASSERT_TRUE(p.t[1]->isend(0, data_tag(1, 1), &z, sizeof(z), &send).is_ok());
  EXPECT_EQ(y, 0);
}

// An op that a failed peer ends before its wait (a refused send) leaves receives posted; the
// engine's quiesce must stop them before the op's buffers go.
TEST(LoopbackTransport, QuiesceAfterAPeerFailedStopsReceivesNeverWaitedFor) {
  Pair p = connect(3);
  int x = 0, z = 42;
  Request recv, send;
  ASSERT_TRUE(p.t[0]->irecv(1, data_tag(1, 1), &x, sizeof(x), &recv).is_ok());
  p.fabric->fail(2);
  EXPECT_EQ(p.t[0]->isend(2, data_tag(0, 1), &z, sizeof(z), &send).code(), HVD_ERR_PEER_FAILURE);
  p.t[0]->quiesce();
  ASSERT_TRUE(p.t[1]->isend(0, data_tag(1, 1), &z, sizeof(z), &send).is_ok());
  EXPECT_EQ(x, 0);
}

TEST(LoopbackTransport, AnInterruptEndsAWaitAndSeesTheWaitedPeers) {
  Pair p = connect(2);
  int x = 0;
  Request recv;
  ASSERT_TRUE(p.t[0]->irecv(1, data_tag(1, 1), &x, sizeof(x), &recv).is_ok());
  int calls = 0;
  std::vector<int> seen;
  Status st = p.t[0]->wait(&recv, 1, [&] {
    seen = p.t[0]->waited_peers();
    return ++calls < 3 ? Status::ok() : Status(HVD_ERR_ABORTED, "stop");
  });
  EXPECT_EQ(st.code(), HVD_ERR_ABORTED);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(seen, std::vector<int>{1});
  EXPECT_TRUE(p.t[0]->waited_peers().empty());  // no wait in progress, none timed out
  p.t[0]->quiesce();
}

TEST(LoopbackTransport, SleepEndsOnADeliveryOrTheExtraFd) {
  Pair p = connect(2);
  auto begin = Clock::now();
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    (void)p.t[1]->send_message(0, make_tag(TagKind::kRound, 1, 1), "wake");
  });
  p.t[0]->sleep(-1, 5000);
  sender.join();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(2));
  EXPECT_EQ(p.t[0]->progress(), 1);

  const int fd = eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  begin = Clock::now();
  std::thread poker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const uint64_t one = 1;
    EXPECT_EQ(write(fd, &one, sizeof(one)), 8);
  });
  p.t[0]->sleep(fd, 5000);
  poker.join();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(2));
  close(fd);

  begin = Clock::now();
  p.t[0]->sleep(-1, 20);  // nothing comes: the timeout ends it
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(15));
}

TEST(LoopbackTransport, DelayedMessagesArriveLateAndInOrder) {
  Pair p = connect(2);
  p.fabric->delay_from(1, std::chrono::milliseconds(100));
  const auto begin = Clock::now();
  for (char c : std::string("abc")) {
    ASSERT_TRUE(
        p.t[1]->send_message(0, make_tag(TagKind::kRound, 1, 1), std::string(1, c)).is_ok());
  }
  Tag got;
  std::string bytes, order;
  while (order.size() < 3 && Clock::now() - begin < std::chrono::seconds(5)) {
    p.t[0]->sleep(-1, 50);
    while (p.t[0]->poll_message(0, 0, &got, &bytes)) order += bytes;
  }
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(100));
  EXPECT_EQ(order, "abc");
}

TEST(LoopbackTransport, DroppedMessagesNeverArrive) {
  Pair p = connect(3);
  p.fabric->drop_from(2, TagKind::kData);
  Tag got;
  std::string bytes;
  ASSERT_TRUE(p.t[2]->send_message(0, make_tag(TagKind::kRound, 2, 1), "before").is_ok());
  int x = 1;
  Request send;
  ASSERT_TRUE(p.t[2]->isend(0, data_tag(2, 1), &x, sizeof(x), &send).is_ok());
  ASSERT_TRUE(p.t[2]->send_message(0, make_tag(TagKind::kRound, 2, 2), "after").is_ok());
  p.fabric->drop_from(1);
  ASSERT_TRUE(p.t[1]->send_message(0, make_tag(TagKind::kRound, 1, 1), "lost").is_ok());
  ASSERT_TRUE(p.t[0]->poll_message(0, 0, &got, &bytes));
  EXPECT_EQ(bytes, "before");
  EXPECT_FALSE(p.t[0]->poll_message(0, 0, &got, &bytes));
  EXPECT_EQ(p.fabric->counts().of(TagKind::kRound), 3u);  // counted as sent
}

TEST(LoopbackTransport, OptionsThatDoNotFitTheFabricAreRefused) {
  auto fabric = LoopbackFabric::create(2);
  TransportOptions options;
  options.rank = 0;
  options.size = 3;
  std::unique_ptr<Transport> t;
  Status st = fabric->factory()(options, nullptr, &t);
  EXPECT_EQ(st.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("fabric of 2 ranks"), std::string::npos) << st.message();
  EXPECT_EQ(t, nullptr);
}

}  // namespace

namespace {

using hvdc::transport::FlagWait;

// Flags in plain memory stand for a local peer's board (ops/cpu/local/board.h).
struct Flags {
  std::atomic<uint64_t> of1{0}, of2{0};
  std::vector<FlagWait> want(uint64_t op) const { return {{1, &of1, op}, {2, &of2, op}}; }
};

TEST(LoopbackTransportFlags, RaisedFlagsEndTheWaitAtOnceAndLateOnesWhenRaised) {
  Pair p = connect(3, 5);
  Flags f;
  f.of1 = 3;
  f.of2 = 4;
  std::vector<FlagWait> flags = f.want(3);
  EXPECT_TRUE(p.t[0]->wait_flags(flags.data(), flags.size(), nullptr).is_ok());
  flags = f.want(5);
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    f.of1.store(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    f.of2.store(6);
  });
  const auto begin = Clock::now();
  Status st = p.t[0]->wait_flags(flags.data(), flags.size(), nullptr);
  raiser.join();
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(60));
  EXPECT_TRUE(p.t[0]->waited_peers().empty());
}

// A wait past its spin sleeps on the flag it waits for; raising the flag wakes it, and the
// sleeper count is back to zero once the wait is over.
TEST(LoopbackTransportFlags, ASleepingWaitIsWokenByTheRaise) {
  Pair p = connect(2, 5);
  std::atomic<uint64_t> flag{0};
  std::atomic<uint32_t> sleepers{0};
  const FlagWait wait{1, &flag, 1, &sleepers};
  std::atomic<bool> slept{false};
  std::thread raiser([&] {
    while (sleepers.load() == 0) std::this_thread::yield();
    slept = true;
    hvdc::transport::raise_flag(&flag, &sleepers, 1);
  });
  Status st = p.t[0]->wait_flags(&wait, 1, nullptr);
  raiser.join();
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(slept.load());
  EXPECT_EQ(0u, sleepers.load());
}

TEST(LoopbackTransportFlags, AFlagLeftDownTimesOutNamingItsPeer) {
  Pair p = connect(3, 0.2);
  Flags f;
  f.of1 = 1;
  std::vector<FlagWait> flags = f.want(1);
  const auto begin = Clock::now();
  Status st = p.t[0]->wait_flags(flags.data(), flags.size(), nullptr);
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(200));
  EXPECT_EQ(st.code(), HVD_ERR_TIMEOUT) << st.message();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("rank 1"), std::string::npos) << st.message();
  // The stall agreement hears whom this rank waited for.
  EXPECT_EQ(p.t[0]->waited_peers(), std::vector<int>{2});
}

TEST(LoopbackTransportFlags, AFailedPeerOrAnInterruptEndsTheWait) {
  Pair p = connect(3);
  Flags f;
  std::vector<FlagWait> flags = f.want(1);
  int calls = 0;
  std::vector<int> seen;
  Status st = p.t[0]->wait_flags(flags.data(), flags.size(), [&] {
    seen = p.t[0]->waited_peers();
    return ++calls < 3 ? Status::ok() : Status(HVD_ERR_ABORTED, "stop");
  });
  EXPECT_EQ(st.code(), HVD_ERR_ABORTED);
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  p.fabric->fail(2);
  st = p.t[0]->wait_flags(flags.data(), flags.size(), nullptr);
  EXPECT_EQ(st.code(), HVD_ERR_PEER_FAILURE) << st.message();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.message();
}

}  // namespace
