// The process-set registry: member-list normalization, the HVDC_PROCESS_SETS parser, and
// ProcessSetTable (set 0, ids that are never reused, the lowest free context, the limit).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/process_set_table.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::describe_process_set;
using hvdc::core::kMaxProcessSets;
using hvdc::core::normalize_process_set_ranks;
using hvdc::core::parse_process_sets;
using hvdc::core::ProcessSetInfo;
using hvdc::core::ProcessSetTable;

using Sets = std::vector<std::vector<int>>;

bool mentions(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

// ---- normalize_process_set_ranks ------------------------------------------------------------

TEST(NormalizeProcessSetRanks, SortsValidLists) {
  std::vector<int> ranks = {3, 0, 2};
  ASSERT_TRUE(normalize_process_set_ranks(&ranks, 4, "ranks").is_ok());
  EXPECT_EQ(ranks, (std::vector<int>{0, 2, 3}));
  std::vector<int> one = {0};
  ASSERT_TRUE(normalize_process_set_ranks(&one, 1, "ranks").is_ok());
  EXPECT_EQ(one, (std::vector<int>{0}));
  std::vector<int> all = {1, 0};  // every rank is a valid list; the table rejects it as set 0
  EXPECT_TRUE(normalize_process_set_ranks(&all, 2, "ranks").is_ok());
}

TEST(NormalizeProcessSetRanks, EmptyNamesTheArgument) {
  std::vector<int> ranks;
  const Status s = normalize_process_set_ranks(&ranks, 4, "my_arg");
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "my_arg")) << s.message();
}

TEST(NormalizeProcessSetRanks, OutOfRangeNamesArgumentAndValue) {
  std::vector<int> high = {1, 9};
  Status s = normalize_process_set_ranks(&high, 4, "my_arg");
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "my_arg")) << s.message();
  EXPECT_TRUE(mentions(s, "9")) << s.message();

  std::vector<int> size = {4};  // == world size
  s = normalize_process_set_ranks(&size, 4, "my_arg");
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "4")) << s.message();

  std::vector<int> negative = {0, -3};
  s = normalize_process_set_ranks(&negative, 4, "my_arg");
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "my_arg")) << s.message();
  EXPECT_TRUE(mentions(s, "-3")) << s.message();
}

TEST(NormalizeProcessSetRanks, DuplicateNamesArgumentAndValue) {
  std::vector<int> ranks = {7, 2, 7};
  const Status s = normalize_process_set_ranks(&ranks, 10, "my_arg");
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "my_arg")) << s.message();
  EXPECT_TRUE(mentions(s, "7")) << s.message();
}

// ---- parse_process_sets ---------------------------------------------------------------------

TEST(ParseProcessSets, SetsAndRanks) {
  Sets out;
  ASSERT_TRUE(parse_process_sets("0,2;1,3", 4, &out).is_ok());
  EXPECT_EQ(out, (Sets{{0, 2}, {1, 3}}));
  ASSERT_TRUE(parse_process_sets("3", 4, &out).is_ok());
  EXPECT_EQ(out, (Sets{{3}}));
}

TEST(ParseProcessSets, MembersAreSortedAndSetsKeepTheirOrder) {
  Sets out;
  ASSERT_TRUE(parse_process_sets("3,1;2,0,1", 4, &out).is_ok());
  EXPECT_EQ(out, (Sets{{1, 3}, {0, 1, 2}}));  // ids 1 and 2 follow the spec's order
}

TEST(ParseProcessSets, SpacesAroundNumbers) {
  Sets out;
  ASSERT_TRUE(parse_process_sets(" 0 , 2 ; 1,3 ", 4, &out).is_ok());
  EXPECT_EQ(out, (Sets{{0, 2}, {1, 3}}));
  ASSERT_TRUE(parse_process_sets("0,\t2", 4, &out).is_ok());
  EXPECT_EQ(out, (Sets{{0, 2}}));
}

TEST(ParseProcessSets, EmptyMeansNoSets) {
  Sets out = {{1}};
  ASSERT_TRUE(parse_process_sets("", 4, &out).is_ok());
  EXPECT_TRUE(out.empty());
}

// Every malformed spec fails with HVD_ERR_INVALID_ARGUMENT: an empty rank between commas, a
// word, an empty set (a trailing, leading or doubled ';' is an error, not an empty set to skip),
// two numbers without a comma, a negative or fractional rank, a rank outside the job, and a rank
// twice in one set.
TEST(ParseProcessSets, MalformedSpecs) {
  const char* const bad[] = {"0,,2", "a",  "0;",  ";0",  "0;;1", "1,x", ",1",     "1,",
                             "1 2",  "-1", "0.5", "0,9", "4",    "1,1", "0,2;3,3"};
  for (const char* spec : bad) {
    Sets out;
    const Status s = parse_process_sets(spec, 4, &out);
    EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT) << "'" << spec << "'";
    EXPECT_FALSE(s.message().empty()) << "'" << spec << "'";
  }
}

TEST(ParseProcessSets, OutOfRangeNamesTheRank) {
  Sets out;
  const Status s = parse_process_sets("0,1;2,17", 4, &out);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "17")) << s.message();
}

TEST(ParseProcessSets, BadTokenIsQuoted) {
  Sets out;
  const Status s = parse_process_sets("0,zz", 4, &out);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "zz")) << s.message();
}

// ---- describe_process_set -------------------------------------------------------------------

TEST(DescribeProcessSet, Format) {
  EXPECT_EQ(describe_process_set(1, {0, 2}), "process set 1 (ranks [0, 2])");
  EXPECT_EQ(describe_process_set(12, {5}), "process set 12 (ranks [5])");
}

// ---- ProcessSetTable ------------------------------------------------------------------------

TEST(ProcessSetTable, SetZeroHoldsEveryRank) {
  ProcessSetTable table(4, 2);
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0}));
  ProcessSetInfo info;
  ASSERT_TRUE(table.find(0, &info).is_ok());
  EXPECT_EQ(info.id, 0);
  EXPECT_EQ(info.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(info.context, 0u);
  EXPECT_EQ(info.index, 2);
}

TEST(ProcessSetTable, AddGivesIncreasingIdsAndLowestFreeContexts) {
  ProcessSetTable table(4, 1);
  ProcessSetInfo a, b;
  ASSERT_TRUE(table.add({0, 2}, &a).is_ok());
  ASSERT_TRUE(table.add({1, 3}, &b).is_ok());
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.context, 1u);
  EXPECT_EQ(a.ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(a.index, -1);  // rank 1 is not a member
  EXPECT_EQ(b.id, 2);
  EXPECT_EQ(b.context, 2u);
  EXPECT_EQ(b.index, 0);
  ProcessSetInfo found;
  ASSERT_TRUE(table.find(2, &found).is_ok());
  EXPECT_EQ(found.id, 2);
  EXPECT_EQ(found.ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(found.context, 2u);
  EXPECT_EQ(found.index, 0);
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0, 1, 2}));
}

TEST(ProcessSetTable, IndexIsThePositionAmongMembers) {
  ProcessSetTable table(8, 5);
  ProcessSetInfo info;
  ASSERT_TRUE(table.add({1, 3, 5, 7}, &info).is_ok());
  EXPECT_EQ(info.index, 2);
  ASSERT_TRUE(table.add({5}, &info).is_ok());
  EXPECT_EQ(info.index, 0);
  ASSERT_TRUE(table.add({0, 6}, &info).is_ok());
  EXPECT_EQ(info.index, -1);
}

TEST(ProcessSetTable, ExistingMembersAreRejected) {
  ProcessSetTable table(4, 0);
  ProcessSetInfo info;
  ASSERT_TRUE(table.add({0, 2}, &info).is_ok());
  Status s = table.add({0, 2}, &info);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "process set 1")) << s.message();
  s = table.add({0, 1, 2, 3}, &info);  // set 0
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "process set 0")) << s.message();
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0, 1}));
  // A failed add takes no id.
  ASSERT_TRUE(table.add({1}, &info).is_ok());
  EXPECT_EQ(info.id, 2);
}

TEST(ProcessSetTable, RemoveFreesTheContextButNotTheId) {
  ProcessSetTable table(4, 0);
  ProcessSetInfo a, b, c;
  ASSERT_TRUE(table.add({0, 2}, &a).is_ok());
  ASSERT_TRUE(table.add({1, 3}, &b).is_ok());
  ASSERT_TRUE(table.remove(a.id).is_ok());
  ProcessSetInfo gone;
  const Status s = table.find(a.id, &gone);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "1")) << s.message();
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0, 2}));
  // The same members again: a new id, the freed context.
  ASSERT_TRUE(table.add({0, 2}, &c).is_ok());
  EXPECT_EQ(c.id, 3);
  EXPECT_EQ(c.context, a.context);
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0, 2, 3}));
  // Removing every set still never brings an old id back.
  ASSERT_TRUE(table.remove(2).is_ok());
  ASSERT_TRUE(table.remove(3).is_ok());
  ASSERT_TRUE(table.add({3}, &c).is_ok());
  EXPECT_EQ(c.id, 4);
  EXPECT_EQ(c.context, 1u);
}

// What tells a request for a set not created yet (it waits) from one for a destroyed set.
TEST(ProcessSetTable, EverCreatedCountsDestroyedSetsButNotFutureOnes) {
  ProcessSetTable table(4, 0);
  EXPECT_TRUE(table.ever_created(0));
  EXPECT_FALSE(table.ever_created(1));
  ProcessSetInfo a, b;
  ASSERT_TRUE(table.add({0, 2}, &a).is_ok());
  ASSERT_TRUE(table.add({1, 3}, &b).is_ok());
  ASSERT_TRUE(table.remove(a.id).is_ok());
  EXPECT_TRUE(table.ever_created(a.id));
  EXPECT_TRUE(table.ever_created(b.id));
  EXPECT_FALSE(table.ever_created(b.id + 1));
  ASSERT_FALSE(table.add({1, 3}, &a).is_ok());  // a failed add uses no id
  EXPECT_FALSE(table.ever_created(b.id + 1));
}

TEST(ProcessSetTable, RemoveRejectsSetZeroAndUnknownIds) {
  ProcessSetTable table(4, 0);
  EXPECT_EQ(table.remove(0).code(), HVD_ERR_INVALID_ARGUMENT);
  Status s = table.remove(42);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "42")) << s.message();
  EXPECT_EQ(table.remove(-1).code(), HVD_ERR_INVALID_ARGUMENT);
  ProcessSetInfo info;
  ASSERT_TRUE(table.add({1}, &info).is_ok());
  ASSERT_TRUE(table.remove(info.id).is_ok());
  EXPECT_EQ(table.remove(info.id).code(), HVD_ERR_INVALID_ARGUMENT);  // twice
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0}));
  ASSERT_TRUE(table.find(0, &info).is_ok());  // set 0 is untouched
  EXPECT_EQ(info.ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(ProcessSetTable, FindUnknownNamesTheId) {
  ProcessSetTable table(2, 0);
  ProcessSetInfo info;
  info.id = 77;
  const Status s = table.find(5, &info);
  EXPECT_EQ(s.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(s, "5")) << s.message();
  EXPECT_EQ(info.id, 77);  // not written on failure
}

// kMaxProcessSets sets at once, set 0 included: 255 added ones fit, the next does not; removing
// one makes room again, with its context.
TEST(ProcessSetTable, Limit) {
  ASSERT_EQ(kMaxProcessSets, 256);
  const int world = 300;
  ProcessSetTable table(world, 0);
  std::set<uint32_t> contexts = {0};
  ProcessSetInfo info;
  for (int k = 0; k < kMaxProcessSets - 1; ++k) {
    ASSERT_TRUE(table.add({k}, &info).is_ok()) << "set " << k + 1;
    EXPECT_EQ(info.id, k + 1);
    EXPECT_LT(info.context, static_cast<uint32_t>(kMaxProcessSets));
    EXPECT_TRUE(contexts.insert(info.context).second) << "context " << info.context << " twice";
  }
  EXPECT_EQ(contexts.size(), static_cast<size_t>(kMaxProcessSets));
  EXPECT_EQ(table.ids().size(), static_cast<size_t>(kMaxProcessSets));
  const Status full = table.add({world - 1}, &info);
  EXPECT_FALSE(full.is_ok());
  EXPECT_FALSE(full.message().empty());
  EXPECT_EQ(table.ids().size(), static_cast<size_t>(kMaxProcessSets));

  ProcessSetInfo victim;
  ASSERT_TRUE(table.find(100, &victim).is_ok());
  ASSERT_TRUE(table.remove(100).is_ok());
  ASSERT_TRUE(table.add({world - 1}, &info).is_ok());
  EXPECT_EQ(info.id, kMaxProcessSets);  // ids go on: 256
  EXPECT_EQ(info.context, victim.context);
  EXPECT_FALSE(table.add({world - 2}, &info).is_ok());
}

// API threads look sets up while the engine thread adds and removes them.
TEST(ProcessSetTable, ConcurrentLookups) {
  ProcessSetTable table(16, 3);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const std::vector<int32_t> ids = table.ids();
        if (ids.empty() || ids[0] != 0) ++bad;
        for (int32_t id : ids) {
          ProcessSetInfo info;
          if (table.find(id, &info).is_ok() && info.id != id) ++bad;
        }
        ProcessSetInfo zero;
        if (!table.find(0, &zero).is_ok() || zero.ranks.size() != 16u) ++bad;
      }
    });
  }
  for (int round = 0; round < 200; ++round) {
    ProcessSetInfo info;
    ASSERT_TRUE(table.add({round % 16}, &info).is_ok());
    ASSERT_TRUE(table.remove(info.id).is_ok());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(table.ids(), (std::vector<int32_t>{0}));
}

}  // namespace
