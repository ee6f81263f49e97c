// Hierarchical allreduce across hosts: the members of each host reduce-scatter among themselves
// (the transport's shared memory), the members that own the same chunk on every host allreduce
// it across hosts (one ring per chunk, side by side), and each host's members then allgather
// their chunks. Each host sends 2(H-1)/H of the buffer across, where one ring through every rank
// sends 2(n-1)/n of it over each crossing edge: with L ranks per host, about L/(L-1) .. 1.5x less
// over the links for two ranks a host, and the local steps never touch them.
#include <algorithm>
#include <vector>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/allreduce/phases.h"

namespace hvdc::ops::cpu {

namespace {

// The members' places: H hosts of L members each, in the order of their host numbers, and
// this member's host and place on it.
struct Layout {
  std::vector<int> host_numbers;  // distinct, ascending
  int per_host = 0;
  int my_host = 0;   // index into host_numbers
  int my_place = 0;  // among its host's members, in member order
};

// False unless every host has the same number of members (at least two hosts, at least two
// members each): the same answer on every member, as comm.hosts is the same everywhere.
bool uniform_layout(const Comm& comm, Layout* out) {
  if (comm.hosts.size() != comm.members.size() || comm.members.empty()) return false;
  Layout l;
  l.host_numbers = comm.hosts;
  std::sort(l.host_numbers.begin(), l.host_numbers.end());
  l.host_numbers.erase(std::unique(l.host_numbers.begin(), l.host_numbers.end()),
                       l.host_numbers.end());
  const int hosts = static_cast<int>(l.host_numbers.size());
  if (hosts < 2 || comm.size() % hosts != 0) return false;
  l.per_host = comm.size() / hosts;
  if (l.per_host < 2) return false;
  for (int h : l.host_numbers) {
    if (std::count(comm.hosts.begin(), comm.hosts.end(), h) != l.per_host) return false;
  }
  const int mine = comm.hosts[comm.index];
  l.my_host =
      static_cast<int>(std::lower_bound(l.host_numbers.begin(), l.host_numbers.end(), mine) -
                       l.host_numbers.begin());
  l.my_place =
      static_cast<int>(std::count(comm.hosts.begin(), comm.hosts.begin() + comm.index, mine));
  *out = std::move(l);
  return true;
}

// A communicator over some of comm's members (indices into comm.members, in their order): the
// same op's tags, which stay apart because its members only ever talk to each other in one of
// the phases. Without hosts, so that it never goes hierarchical itself.
Comm sub_comm(const Comm& comm, const std::vector<int>& indices, int my_position) {
  Comm sub = comm;
  sub.hosts.clear();
  sub.local = nullptr;
  sub.members.clear();
  for (int i : indices) sub.members.push_back(comm.members[i]);
  sub.index = my_position;
  return sub;
}

// This member's host's members, and the members in this member's place on every host.
void split(const Comm& comm, const Layout& l, Comm* local, Comm* cross) {
  std::vector<int> on_host, in_place(l.host_numbers.size(), -1);
  std::vector<int> seen(l.host_numbers.size(), 0);
  for (int i = 0; i < comm.size(); ++i) {
    const int host = static_cast<int>(
        std::lower_bound(l.host_numbers.begin(), l.host_numbers.end(), comm.hosts[i]) -
        l.host_numbers.begin());
    if (host == l.my_host) on_host.push_back(i);
    if (seen[host]++ == l.my_place) in_place[host] = i;
  }
  *local = sub_comm(comm, on_host, l.my_place);
  local->segment_bytes = comm.host_segment_bytes;
  local->pieces_across_hosts = false;
  *cross = sub_comm(comm, in_place, l.my_host);
}

void trace(const Comm& comm, const char* phase, bool begin) {
  if (comm.trace) comm.trace(phase, begin);
}

}  // namespace

Status allreduce_hierarchical(Comm& comm, const Pieces& in, const Pieces& out,
                              const ReduceSpec& spec, bool* ran) {
  *ran = false;
  Layout l;
  if (comm.deterministic || !uniform_layout(comm, &l)) return Status::ok();
  // Every member's local chunk holds at least one element per host for the ring across them.
  const size_t count = out.bytes() / common::dtype_size(spec.dtype);
  if (count / static_cast<size_t>(l.per_host) < l.host_numbers.size()) return Status::ok();
  *ran = true;
  Comm local, cross;
  split(comm, l, &local, &cross);
  const Chunks ch = make_chunks(out, l.per_host, common::dtype_size(spec.dtype));
  trace(comm, "LOCAL_REDUCESCATTER", true);
  HVDC_RETURN_IF_ERROR(reduce_scatter_phase(local, in, out, ch, spec));
  trace(comm, "LOCAL_REDUCESCATTER", false);
  // The ring's reduce-scatter leaves this member chunk (place + 1) of its host's sum: the same
  // chunk as the members in its place on the other hosts, with whom it finishes it.
  const int owned = (l.my_place + 1) % l.per_host;
  const Pieces chunk = out.slice(ch.offset(owned), ch.bytes(owned));
  trace(comm, "CROSS_ALLREDUCE", true);
  HVDC_RETURN_IF_ERROR(allreduce_ring(cross, chunk, chunk, spec));
  trace(comm, "CROSS_ALLREDUCE", false);
  trace(comm, "LOCAL_ALLGATHER", true);
  HVDC_RETURN_IF_ERROR(allgather_phase(local, out, ch, 1, l.per_host - 1));
  trace(comm, "LOCAL_ALLGATHER", false);
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
