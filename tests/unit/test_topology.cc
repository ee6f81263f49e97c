// compute_topology: local and cross ranks from every rank's host identity. Expected values are
// written out by hand for each layout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/topology.h"

namespace {

using hvdc::core::compute_topology;
using hvdc::core::Topology;

struct Expected {
  int local_rank, local_size, cross_rank, cross_size;
};

void check_layout(const std::vector<std::string>& hosts, const std::vector<Expected>& expected) {
  ASSERT_EQ(hosts.size(), expected.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    Topology t = compute_topology(static_cast<int>(r), hosts);
    EXPECT_EQ(t.rank, static_cast<int>(r));
    EXPECT_EQ(t.size, static_cast<int>(hosts.size()));
    EXPECT_EQ(t.local_rank, expected[r].local_rank);
    EXPECT_EQ(t.local_size, expected[r].local_size);
    EXPECT_EQ(t.cross_rank, expected[r].cross_rank);
    EXPECT_EQ(t.cross_size, expected[r].cross_size);
  }
}

TEST(Topology, SingleRank) {
  check_layout({"solo"}, {{0, 1, 0, 1}});
}

TEST(Topology, OneHost) {
  check_layout({"a", "a", "a", "a"}, {{0, 4, 0, 1}, {1, 4, 0, 1}, {2, 4, 0, 1}, {3, 4, 0, 1}});
}

TEST(Topology, TwoHostsOfTwo) {
  check_layout({"a", "a", "b", "b"}, {{0, 2, 0, 2}, {1, 2, 0, 2}, {0, 2, 1, 2}, {1, 2, 1, 2}});
}

TEST(Topology, UnevenHosts) {
  // Three ranks on a, one on b: local rank 0 exists on both hosts, 1 and 2 only on a.
  check_layout({"a", "a", "a", "b"}, {{0, 3, 0, 2}, {1, 3, 0, 1}, {2, 3, 0, 1}, {0, 1, 1, 2}});
}

TEST(Topology, InterleavedHosts) {
  check_layout({"a", "b", "a", "b"}, {{0, 2, 0, 2}, {0, 2, 1, 2}, {1, 2, 0, 2}, {1, 2, 1, 2}});
}

TEST(Topology, ThreeHostsInterleavedUnevenly) {
  // Hosts: x = ranks 0, 3, 5; y = ranks 1, 4; z = rank 2.
  check_layout(
      {"x", "y", "z", "x", "y", "x"},
      {{0, 3, 0, 3}, {0, 2, 1, 3}, {0, 1, 2, 3}, {1, 3, 0, 2}, {1, 2, 1, 2}, {2, 3, 0, 1}});
}

TEST(Topology, HostsAreNumberedByTheirFirstRank) {
  // Hosts: x = ranks 0, 3, 5 (host 0); y = ranks 1, 4 (host 1); z = rank 2 (host 2). Every
  // rank numbers them alike.
  const std::vector<std::string> hosts = {"x", "y", "z", "x", "y", "x"};
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(compute_topology(r, hosts).host_of, (std::vector<int>{0, 1, 2, 0, 1, 0}));
  }
  EXPECT_EQ(compute_topology(0, {"solo"}).host_of, std::vector<int>{0});
}

TEST(Topology, HostNamesAreComparedExactly) {
  // "node1" and "node10" are different hosts, as are names that differ only in case.
  check_layout({"node1", "node10", "Node1", "node1"},
               {{0, 2, 0, 3}, {0, 1, 1, 3}, {0, 1, 2, 3}, {1, 2, 0, 1}});
}

}  // namespace
