#include "core/topology.h"

namespace hvdc::core {

Topology compute_topology(int rank, const std::vector<std::string>& hosts) {
  Topology t;
  t.rank = rank;
  t.size = static_cast<int>(hosts.size());
  std::vector<int> local_rank_of(hosts.size(), 0);
  for (size_t r = 0; r < hosts.size(); ++r) {
    for (size_t q = 0; q < r; ++q) local_rank_of[r] += hosts[q] == hosts[r] ? 1 : 0;
  }
  t.local_rank = local_rank_of[rank];
  t.local_size = 0;
  t.cross_rank = 0;
  t.cross_size = 0;
  int hosts_seen = 0;
  for (size_t r = 0; r < hosts.size(); ++r) {
    size_t first = 0;  // the first rank on r's host
    while (hosts[first] != hosts[r]) ++first;
    t.host_of.push_back(first == r ? hosts_seen++ : t.host_of[first]);
    t.same_host.push_back(hosts[r] == hosts[rank]);
    if (hosts[r] == hosts[rank]) ++t.local_size;
    if (local_rank_of[r] == t.local_rank) {
      if (static_cast<int>(r) < rank) ++t.cross_rank;
      ++t.cross_size;
    }
  }
  return t;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace hvdc::core
