// The backend for host memory: runs collectives over the transport with the algorithms of
// ops/cpu, and does the copies and scaling around them. Every op finishes before start()
// returns.
#pragma once

#include <cstddef>
#include <vector>

#include "ops/backend.h"
#include "ops/cpu/comm.h"
#include "ops/cpu/local/local_access.h"

namespace hvdc::ops::cpu {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  Status start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) override;
  // The set's board, once every member has every peer's open (in_place_local.cc).
  LaneBoard* lane(const Group& group) override;

 private:
  Comm make_comm(const CollectiveArgs& op);
  Status run_allreduce(const CollectiveArgs& op);
  Status run_allreduce_of_inputs(Comm& comm, const CollectiveArgs& op, const ReduceSpec& spec);
  // Each tensor's buffer as one view (pieces_in_ holds them).
  Pieces allreduce_pieces(const CollectiveArgs& op);
  Status run_allgather(const CollectiveArgs& op);
  Status run_broadcast(const CollectiveArgs& op);
  // backend_exchange.cc
  Status run_alltoall(const CollectiveArgs& op);
  Status run_reducescatter(const CollectiveArgs& op);

  BackendOptions options_;
  std::vector<char> scratch_;
  std::vector<char> staging_;
  std::vector<Piece> round_input_outs_;        // run_allreduce_of_inputs()'s, kept for its storage
  std::vector<Piece> pieces_in_, pieces_out_;  // run_allreduce()'s views, kept for their storage
  std::vector<char> reduce_work_;              // reducescatter's accumulation copy
  std::vector<std::vector<char>> join_zeros_;  // a joined rank's contributions
  local::LocalAccess local_;                   // the in-place path among ranks of this host
};

// The members, transport and tags of `group`, without scratch areas or tuning.
Comm comm_for(const Group& group);
// Elements in a tensor of this shape from dimension `from` on.
size_t element_count(const std::vector<int64_t>& shape, size_t from = 0);
// Rows of an n-way split of `rows`: the first rows % n ranks get one more (Horovod's layout of
// alltoall without splits and of reducescatter).
std::vector<int64_t> even_split(int64_t rows, int n);
// Output of `rows` rows shaped like the input's other dimensions (allgather, alltoall).
Status allocate_rows(const TensorArgs& tensor, int32_t dtype, const char* what, int64_t rows,
                     char** out);

}  // namespace hvdc::ops::cpu
