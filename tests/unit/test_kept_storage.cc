// Containers the engine keeps between passes for their storage (a warm step's op allocates less):
// what they hand back must be exactly what a fresh container would hold.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/set_state.h"
#include "core/tensor_queue.h"

namespace {

using hvdc::core::OpState;
using hvdc::core::PendingHit;
using hvdc::core::ProcessSetInfo;
using hvdc::core::Request;
using hvdc::core::SetState;
using hvdc::core::TensorEntry;
using hvdc::core::TensorQueue;

TensorEntry entry_named(const std::string& name, int64_t rows) {
  TensorEntry entry;
  entry.request.name = name;
  entry.request.shape = {rows};
  entry.state = std::make_shared<OpState>(nullptr, nullptr);
  return entry;
}

// pop_new() fills the first N elements and leaves the rest: a caller reads only those N.
TEST(KeptStorage, PopNewFillsTheFirstElementsOfTheKeptVector) {
  TensorQueue queue;
  std::vector<Request> kept;
  ASSERT_TRUE(queue.push(entry_named("a.long.enough.name.to.need.the.heap", 3)).is_ok());
  ASSERT_TRUE(queue.push(entry_named("b", 4)).is_ok());
  ASSERT_EQ(queue.pop_new(&kept), 2u);
  EXPECT_EQ(kept[0].name, "a.long.enough.name.to.need.the.heap");
  EXPECT_EQ(kept[1].name, "b");
  EXPECT_EQ(queue.pop_new(&kept), 0u);  // nothing new

  ASSERT_TRUE(queue.push(entry_named("c", 5)).is_ok());
  ASSERT_EQ(queue.pop_new(&kept), 1u);
  EXPECT_EQ(kept[0].name, "c");
  EXPECT_EQ(kept[0].shape, (std::vector<int64_t>{5}));
}

// A popped entry that was taken (ran) before the pass does not leave a stale element in front.
TEST(KeptStorage, PopNewSkipsEntriesTakenBeforeThePass) {
  TensorQueue queue;
  std::vector<Request> kept;
  ASSERT_TRUE(queue.push(entry_named("gone", 1)).is_ok());
  ASSERT_TRUE(queue.push(entry_named("here", 2)).is_ok());
  TensorEntry taken;
  ASSERT_TRUE(queue.take(0, "gone", &taken));
  ASSERT_EQ(queue.pop_new(&kept), 1u);
  EXPECT_EQ(kept[0].name, "here");
}

SetState two_member_set() {
  ProcessSetInfo info;
  info.ranks = {0, 1};
  info.index = 0;
  return SetState(info, 16);
}

PendingHit hit_in(uint32_t slot) {
  PendingHit hit{};
  hit.slot = slot;
  return hit;
}

// A dropped hit's node carries the next name; a second add of a pending name updates it.
TEST(KeptStorage, PendingHitsReuseTheDroppedNode) {
  SetState set = two_member_set();
  set.add_pending_hit("first", hit_in(1));
  set.drop_pending_hit("first");
  EXPECT_TRUE(set.pending_hits.empty());
  set.add_pending_hit("second", hit_in(2));
  set.add_pending_hit("third", hit_in(3));
  ASSERT_EQ(set.pending_hits.size(), 2u);
  EXPECT_EQ(set.pending_hits.at("second").slot, 2u);
  EXPECT_EQ(set.pending_hits.at("third").slot, 3u);

  set.drop_pending_hit("second");
  set.add_pending_hit("third", hit_in(7));  // already pending: updated, the node kept aside
  ASSERT_EQ(set.pending_hits.size(), 1u);
  EXPECT_EQ(set.pending_hits.at("third").slot, 7u);
  set.add_pending_hit("fourth", hit_in(4));
  EXPECT_EQ(set.pending_hits.at("fourth").slot, 4u);
  set.drop_pending_hit("absent");  // nothing to drop
  EXPECT_EQ(set.pending_hits.size(), 2u);
}

}  // namespace
