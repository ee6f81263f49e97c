// The process sets a rank belongs to (core/sets/member_sets.h): static sets from the
// configuration, creation and removal as agreed ops, and what removal does to pending ops.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/inprocess.h"
#include "core/sets/member_sets.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::MemberSets;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Response;
using hvdc::core::TensorEntry;

TensorEntry entry(const std::string& name, int32_t process_set) {
  TensorEntry e;
  e.request.name = name;
  e.request.process_set = process_set;
  e.request.shape = {1};
  e.state = std::make_shared<OpState>(nullptr, nullptr);
  return e;
}

Response create_response(const std::vector<int64_t>& ranks) {
  Response r;
  r.op_type = OpType::kProcessSetCreate;
  r.sizes = ranks;
  return r;
}

TEST(MemberSets, StartsWithTheGlobalSetCoordinatedByRankZero) {
  MemberSets on0(3, 0, {}), on2(3, 2, {});
  ASSERT_NE(on0.member(0), nullptr);
  EXPECT_EQ(on0.member(0)->size(), 3);
  EXPECT_TRUE(on0.member(0)->controller != nullptr);
  ASSERT_NE(on2.member(0), nullptr);
  EXPECT_EQ(on2.member(0)->info.index, 2);
  EXPECT_TRUE(on2.member(0)->controller == nullptr);
  EXPECT_EQ(on0.member(1), nullptr);
}

// A set this rank is not in exists in the table but has no state here.
TEST(MemberSets, CreationGivesTheNewIdAndStateOnlyToMembers) {
  MemberSets sets(3, 2, {});
  std::vector<TensorEntry> entries;
  entries.push_back(entry("create", 0));
  ASSERT_TRUE(sets.create(create_response({0, 1}), entries).is_ok());
  EXPECT_EQ(entries[0].state->result_value(), 1);
  EXPECT_EQ(sets.member(1), nullptr);
  EXPECT_EQ(sets.table().ids().size(), 2u);
  ASSERT_TRUE(sets.create(create_response({1, 2}), entries).is_ok());
  ASSERT_NE(sets.member(2), nullptr);
  EXPECT_EQ(sets.member(2)->info.index, 1);
  EXPECT_TRUE(sets.member(2)->controller == nullptr);  // rank 1 coordinates it
}

TEST(MemberSets, RemovalFailsTheSetsPendingOps) {
  MemberSets sets(3, 0, {});
  std::vector<TensorEntry> none;
  ASSERT_TRUE(sets.create(create_response({0, 1}), none).is_ok());
  hvdc::core::TensorQueue queue;
  TensorEntry doomed = entry("grad", 1);
  std::shared_ptr<OpState> state = doomed.state;
  ASSERT_TRUE(queue.push(std::move(doomed)).is_ok());
  ASSERT_TRUE(queue.push(entry("other", 0)).is_ok());
  Response destroy;
  destroy.op_type = OpType::kProcessSetDestroy;
  destroy.root = 1;
  ASSERT_TRUE(sets.destroy(destroy, queue).is_ok());
  EXPECT_EQ(sets.member(1), nullptr);
  ASSERT_TRUE(state->done());
  EXPECT_EQ(state->result().code(), HVD_ERR_INVALID_USAGE);
  EXPECT_EQ(queue.in_flight(), 1u);
  EXPECT_FALSE(sets.destroy(destroy, queue).is_ok());  // gone from the table too
}

TEST(MemberSets, StaticSetsMustAgreeOnEveryRank) {
  auto group = hvdc::bootstrap::InProcessGroup::create(2);
  std::vector<std::unique_ptr<hvdc::bootstrap::Bootstrap>> boots;
  for (int r = 0; r < 2; ++r) boots.push_back(group->member(r));
  MemberSets on0(2, 0, {}), on1(2, 1, {});
  Status st0, st1;
  std::thread t0([&] { st0 = on0.add_static("0,1", *boots[0]); });
  std::thread t1([&] { st1 = on1.add_static("1", *boots[1]); });
  t0.join();
  t1.join();
  EXPECT_EQ(st0.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(st0.message().find("HVDC_PROCESS_SETS differs between ranks"), std::string::npos)
      << st0.message();
  EXPECT_FALSE(st1.is_ok());
  std::thread t2([&] { st0 = on0.add_static("1;0", *boots[0]); });
  std::thread t3([&] { st1 = on1.add_static("1;0", *boots[1]); });
  t2.join();
  t3.join();
  ASSERT_TRUE(st0.is_ok()) << st0.message();
  ASSERT_TRUE(st1.is_ok()) << st1.message();
  EXPECT_EQ(on0.member(1), nullptr);  // set 1 is rank 1 alone, set 2 rank 0 alone
  ASSERT_NE(on1.member(1), nullptr);
  EXPECT_NE(on0.member(2), nullptr);
  EXPECT_EQ(on1.member(2), nullptr);
}

}  // namespace
