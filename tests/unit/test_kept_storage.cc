// Containers the engine keeps between passes for their storage (a warm step's op allocates less):
// what they hand back must be exactly what a fresh container would hold.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/set_state.h"
#include "core/tensor_queue.h"

namespace {

using hvdc::core::OpBuffers;
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

// With a second vector, pop_new() gives each request's input and output, in step with the
// requests (an entry taken before the pass shifts neither).
TEST(KeptStorage, PopNewGivesTheBuffersBesideTheRequests) {
  TensorQueue queue;
  float a[4], b_in[4], b_out[4], c[4];
  TensorEntry in_place = entry_named("in-place", 4);
  in_place.input = in_place.output = a;
  TensorEntry gone = entry_named("gone", 4);
  gone.input = gone.output = c;
  TensorEntry apart = entry_named("apart", 4);
  apart.input = b_in;
  apart.output = b_out;
  ASSERT_TRUE(queue.push(std::move(gone)).is_ok());
  ASSERT_TRUE(queue.push(std::move(in_place)).is_ok());
  ASSERT_TRUE(queue.push(std::move(apart)).is_ok());
  TensorEntry taken;
  ASSERT_TRUE(queue.take(0, "gone", &taken));
  std::vector<Request> kept;
  std::vector<OpBuffers> buffers(5, OpBuffers{c, c});  // leftovers from an earlier pass
  ASSERT_EQ(queue.pop_new(&kept, &buffers), 2u);
  EXPECT_EQ(kept[0].name, "in-place");
  EXPECT_EQ(buffers[0].input, a);
  EXPECT_EQ(buffers[0].output, a);
  EXPECT_EQ(kept[1].name, "apart");
  EXPECT_EQ(buffers[1].input, b_in);
  EXPECT_EQ(buffers[1].output, b_out);
}

// take() keeps the entry's node for the next push: entries pushed into it are whole, a name in
// flight in it is still a duplicate, and the node holds no reference to the op taken from it.
TEST(KeptStorage, ANodeTakenIsReusedWhole) {
  TensorQueue queue;
  float x[2], y[2];
  TensorEntry first = entry_named("first.name.long.enough.for.the.heap", 2);
  first.input = first.output = x;
  std::weak_ptr<OpState> first_state = first.state;
  ASSERT_TRUE(queue.push(std::move(first)).is_ok());
  TensorEntry taken;
  ASSERT_TRUE(queue.take(0, "first.name.long.enough.for.the.heap", &taken));
  EXPECT_EQ(taken.input, x);
  EXPECT_EQ(taken.request.shape, (std::vector<int64_t>{2}));
  taken = TensorEntry();
  EXPECT_TRUE(first_state.expired());

  TensorEntry second = entry_named("s", 7);
  second.input = y;
  second.output = x;
  ASSERT_TRUE(queue.push(std::move(second)).is_ok());
  EXPECT_EQ(queue.in_flight(), 1u);
  EXPECT_EQ(queue.push(entry_named("s", 1)).code(), HVD_ERR_DUPLICATE_NAME);
  EXPECT_FALSE(queue.take(0, "first.name.long.enough.for.the.heap", &taken));
  std::vector<Request> kept;
  ASSERT_EQ(queue.pop_new(&kept), 1u);
  EXPECT_EQ(kept[0].name, "s");
  ASSERT_TRUE(queue.take(0, "s", &taken));
  EXPECT_EQ(taken.request.name, "s");
  EXPECT_EQ(taken.request.shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(taken.input, y);
  EXPECT_EQ(taken.output, x);
  EXPECT_EQ(queue.in_flight(), 0u);
}

// The keys of pushed ops are written into storage kept from earlier ones (the keys of fresh ops,
// the spare node's, the lookup's): a longer name over a shorter one and back, in another process
// set, still finds its own entry only, reports in push order, and keeps each op's submitted time.
TEST(KeptStorage, KeysWrittenIntoKeptStorageFindTheirOwnEntries) {
  TensorQueue queue;
  const std::string longer = "allreduce.module.encoder.layer.11.attention.output.dense.weight";
  const auto t0 = std::chrono::steady_clock::time_point(std::chrono::seconds(5));
  std::vector<Request> kept;
  TensorEntry taken;
  for (int pass = 0; pass < 3; ++pass) {
    const std::string name = pass == 1 ? "w" : longer + "." + std::to_string(pass);
    TensorEntry in_set = entry_named(name, 2);
    in_set.request.process_set = 1;
    ASSERT_TRUE(queue.push(entry_named(name, 1), t0 + std::chrono::seconds(pass)).is_ok());
    ASSERT_TRUE(queue.push(std::move(in_set), t0).is_ok());  // the same name, another set
    EXPECT_EQ(queue.push(entry_named(name, 3)).code(), HVD_ERR_DUPLICATE_NAME);
    std::vector<hvdc::core::PendingOp> pending = queue.snapshot();
    ASSERT_EQ(pending.size(), 2u);
    EXPECT_FALSE(pending[0].reported);
    EXPECT_EQ(pending[1].submitted, t0 + std::chrono::seconds(pass));
    ASSERT_EQ(queue.pop_new(&kept), 2u);
    EXPECT_EQ(kept[0].name, name);
    EXPECT_EQ(kept[0].process_set, 0);
    EXPECT_EQ(kept[1].process_set, 1);
    EXPECT_TRUE(queue.snapshot()[0].reported);
    Request found;
    ASSERT_TRUE(queue.request_of(1, name, &found));
    EXPECT_EQ(found.shape, (std::vector<int64_t>{2}));
    EXPECT_FALSE(queue.request_of(0, name + "x", &found));
    ASSERT_TRUE(queue.take(0, name, &taken));
    EXPECT_EQ(taken.request.shape, (std::vector<int64_t>{1}));
    EXPECT_FALSE(queue.take(0, name, &taken));
    ASSERT_TRUE(queue.take(1, name, &taken));
    EXPECT_EQ(queue.in_flight(), 0u);
  }
  std::vector<TensorEntry> group;
  group.push_back(entry_named(longer, 1));
  group.push_back(entry_named(longer, 2));
  EXPECT_EQ(queue.push_group(std::move(group)).code(), HVD_ERR_DUPLICATE_NAME);
  EXPECT_EQ(queue.in_flight(), 0u);  // all or none
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
