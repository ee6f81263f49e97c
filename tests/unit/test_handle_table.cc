// HandleTable: 64-bit handles with generations, so stale and double-freed handles are reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "core/handle_table.h"

namespace {

using hvdc::core::HandleTable;
using hvdc::core::OpState;

std::shared_ptr<OpState> make_state() {
  return std::make_shared<OpState>(nullptr, nullptr);
}

TEST(HandleTable, InsertFindErase) {
  HandleTable table;
  EXPECT_EQ(table.live(), 0u);
  auto a = make_state();
  auto b = make_state();
  hvd_handle_t ha = table.insert(a);
  hvd_handle_t hb = table.insert(b);
  EXPECT_NE(ha, hb);
  EXPECT_EQ(table.live(), 2u);
  EXPECT_EQ(table.find(ha), a);
  EXPECT_EQ(table.find(hb), b);
  EXPECT_TRUE(table.erase(ha));
  EXPECT_EQ(table.live(), 1u);
  EXPECT_EQ(table.find(ha), nullptr);
  EXPECT_EQ(table.find(hb), b);
  EXPECT_FALSE(table.erase(ha));  // double free
  EXPECT_EQ(table.live(), 1u);
  EXPECT_TRUE(table.erase(hb));
  EXPECT_EQ(table.live(), 0u);
}

TEST(HandleTable, TableDropsItsReference) {
  HandleTable table;
  auto a = make_state();
  std::weak_ptr<OpState> weak = a;
  hvd_handle_t h = table.insert(std::move(a));
  EXPECT_FALSE(weak.expired());
  EXPECT_TRUE(table.erase(h));
  EXPECT_TRUE(weak.expired());
}

// Freeing a finished op takes one look at the table; a pending op stays, an unknown or stale
// handle is reported, and the handle of a freed op is stale from then on.
TEST(HandleTable, EraseIfDoneFreesOnlyFinishedOps) {
  using Release = HandleTable::Release;
  HandleTable table;
  auto a = make_state();
  std::weak_ptr<OpState> weak = a;
  const hvd_handle_t h = table.insert(std::move(a));
  EXPECT_EQ(table.erase_if_done(h), Release::kPending);
  EXPECT_EQ(table.live(), 1u);
  ASSERT_NE(table.find(h), nullptr);
  table.find(h)->complete(hvdc::common::Status::ok());
  EXPECT_EQ(table.erase_if_done(h), Release::kFreed);
  EXPECT_EQ(table.live(), 0u);
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(table.find(h), nullptr);
  EXPECT_EQ(table.erase_if_done(h), Release::kUnknown);  // double free
  EXPECT_FALSE(table.erase(h));
  EXPECT_EQ(table.erase_if_done(0), Release::kUnknown);
  // The slot is reused under a new generation: the old handle stays stale.
  auto b = make_state();
  b->complete(hvdc::common::Status::ok());
  const hvd_handle_t hb = table.insert(b);
  EXPECT_NE(hb, h);
  EXPECT_EQ(table.erase_if_done(h), Release::kUnknown);
  EXPECT_EQ(table.find(hb), b);
  EXPECT_EQ(table.erase_if_done(hb), Release::kFreed);
}

TEST(HandleTable, HandleZeroIsNeverValid) {
  HandleTable table;
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_FALSE(table.erase(0));
  std::vector<hvd_handle_t> handles;
  for (int i = 0; i < 100; ++i) {
    handles.push_back(table.insert(make_state()));
    EXPECT_NE(handles.back(), 0u);
  }
  // Slot 0 is in use now: handle 0 still names nothing.
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_FALSE(table.erase(0));
  EXPECT_EQ(table.live(), 100u);
}

TEST(HandleTable, UnknownHandles) {
  HandleTable table;
  hvd_handle_t h = table.insert(make_state());
  EXPECT_EQ(table.find(h + 1), nullptr);                    // slot never used
  EXPECT_EQ(table.find(h ^ (uint64_t{1} << 40)), nullptr);  // other generation
  EXPECT_EQ(table.find(~uint64_t{0}), nullptr);
  EXPECT_FALSE(table.erase(h + 1000));
  EXPECT_EQ(table.live(), 1u);
}

TEST(HandleTable, FreedHandleStaysStaleAfterSlotReuse) {
  HandleTable table;
  hvd_handle_t old = table.insert(make_state());
  ASSERT_TRUE(table.erase(old));
  // Reuse the slot many times: none of the new handles equals the old one, and the old one
  // keeps failing while a newer handle lives in its slot.
  std::set<hvd_handle_t> seen = {old};
  for (int i = 0; i < 1000; ++i) {
    auto s = make_state();
    hvd_handle_t h = table.insert(s);
    EXPECT_TRUE(seen.insert(h).second) << "handle reused: " << h;
    EXPECT_EQ(table.find(old), nullptr);
    EXPECT_FALSE(table.erase(old));
    EXPECT_EQ(table.find(h), s);
    ASSERT_TRUE(table.erase(h));
  }
  EXPECT_EQ(table.live(), 0u);
}

TEST(HandleTable, ManyHandles) {
  HandleTable table;
  constexpr int kCount = 20000;
  std::vector<std::shared_ptr<OpState>> states;
  std::vector<hvd_handle_t> handles;
  std::set<hvd_handle_t> unique;
  for (int i = 0; i < kCount; ++i) {
    states.push_back(make_state());
    handles.push_back(table.insert(states.back()));
    unique.insert(handles.back());
  }
  EXPECT_EQ(unique.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(table.live(), static_cast<size_t>(kCount));
  // Free every other handle, then check all of them.
  for (int i = 0; i < kCount; i += 2) ASSERT_TRUE(table.erase(handles[i]));
  for (int i = 0; i < kCount; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(table.find(handles[i]), nullptr) << i;
    } else {
      EXPECT_EQ(table.find(handles[i]), states[i]) << i;
    }
  }
  EXPECT_EQ(table.live(), static_cast<size_t>(kCount / 2));
  // Refill: new handles are distinct from every handle handed out before.
  for (int i = 0; i < kCount / 2; ++i) {
    EXPECT_TRUE(unique.insert(table.insert(make_state())).second);
  }
  EXPECT_EQ(table.live(), static_cast<size_t>(kCount));
}

TEST(HandleTable, ConcurrentInsertErase) {
  HandleTable table;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::vector<std::vector<hvd_handle_t>> kept(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<hvd_handle_t> mine;
      for (int i = 0; i < kRounds; ++i) {
        auto s = make_state();
        hvd_handle_t h = table.insert(s);
        if (table.find(h) != s) ++failures[t];
        if (i % 3 == 2) {
          mine.push_back(h);  // keep a third of them alive
        } else {
          if (!table.erase(h)) ++failures[t];
          if (table.erase(h)) ++failures[t];
          if (table.find(h) != nullptr) ++failures[t];
        }
      }
      kept[t] = std::move(mine);
    });
  }
  for (std::thread& th : threads) th.join();
  std::set<hvd_handle_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    for (hvd_handle_t h : kept[t]) {
      EXPECT_TRUE(all.insert(h).second);
      EXPECT_NE(table.find(h), nullptr);
    }
  }
  EXPECT_EQ(table.live(), all.size());
  for (hvd_handle_t h : all) EXPECT_TRUE(table.erase(h));
  EXPECT_EQ(table.live(), 0u);
}

}  // namespace
