// Local and cross topology from every rank's host identity. local = ranks on this host (in rank
// order); cross = ranks that share this rank's local rank (one per host when hosts are even).
#pragma once

#include <string>
#include <vector>

namespace hvdc::core {

struct Topology {
  int rank = -1, size = -1;
  int local_rank = -1, local_size = -1;
  int cross_rank = -1, cross_size = -1;
  std::vector<bool> same_host;  // per rank: on this rank's host
  std::vector<int> host_of;     // per rank: its host's number (hosts numbered by first rank)
};

Topology compute_topology(int rank, const std::vector<std::string>& hosts);

// "rank 1" or "ranks 1, 3", for messages.
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace hvdc::core
