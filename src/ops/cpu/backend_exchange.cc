// The collectives that split a tensor among the ranks: alltoall (rows per destination, sizes
// known only at execution) and reducescatter (first dimension split unevenly).
#include <cstring>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "ops/cpu/alltoall/alltoall.h"
#include "ops/cpu/backend.h"
#include "ops/cpu/reduce/reduce.h"
#include "ops/cpu/reducescatter/reducescatter.h"

namespace hvdc::ops::cpu {

std::vector<int64_t> even_split(int64_t rows, int n) {
  std::vector<int64_t> out(n, rows / n);
  for (int i = 0; i < rows % n; ++i) ++out[i];
  return out;
}

Status CpuBackend::run_alltoall(const CollectiveArgs& op) {
  const TensorArgs& tensor = op.tensors[0];
  Comm comm = make_comm(op);
  const int n = comm.size();
  const size_t row_bytes = element_count(tensor.shape, 1) * common::dtype_size(op.dtype);
  std::vector<int64_t> send_rows =
      tensor.splits.empty() ? even_split(tensor.shape[0], n) : tensor.splits;
  // Each rank learns how many rows every other rank sends it.
  std::vector<int64_t> recv_rows(n, 0);
  const std::vector<size_t> counts(n, sizeof(int64_t));
  HVDC_RETURN_IF_ERROR(alltoall_pairwise(comm, reinterpret_cast<const char*>(send_rows.data()),
                                         counts, reinterpret_cast<char*>(recv_rows.data()), counts)
                           .with_context(common::strfmt("alltoall of '%s' (exchanging splits)",
                                                        tensor.name.c_str())));
  std::vector<size_t> send_bytes(n), recv_bytes(n);
  int64_t total_rows = 0;
  for (int i = 0; i < n; ++i) {
    send_bytes[i] = static_cast<size_t>(send_rows[i]) * row_bytes;
    recv_bytes[i] = static_cast<size_t>(recv_rows[i]) * row_bytes;
    total_rows += recv_rows[i];
  }
  char* out = nullptr;
  HVDC_RETURN_IF_ERROR(allocate_rows(tensor, op.dtype, "ALLTOALL", total_rows, &out));
  // The same tags again: messages from one peer match in the order they were sent, and each
  // peer sends its data only after the split exchange completed on its side.
  HVDC_RETURN_IF_ERROR(
      alltoall_pairwise(comm, static_cast<const char*>(tensor.input), send_bytes, out, recv_bytes)
          .with_context(common::strfmt("alltoall of '%s'", tensor.name.c_str())));
  tensor.set_received_splits(std::move(recv_rows));
  return Status::ok();
}

Status CpuBackend::run_reducescatter(const CollectiveArgs& op) {
  const TensorArgs& tensor = op.tensors[0];
  Comm comm = make_comm(op);
  const int n = comm.size();
  const size_t row_elems = element_count(tensor.shape, 1);
  const size_t count = element_count(tensor.shape);
  const size_t esize = common::dtype_size(op.dtype);
  std::vector<size_t> counts;
  for (int64_t rows : even_split(tensor.shape.empty() ? 0 : tensor.shape[0], n)) {
    counts.push_back(static_cast<size_t>(rows) * row_elems);
  }
  // The algorithm accumulates in place, and the caller's input must stay unchanged.
  std::vector<char>& work = reduce_work_;
  if (work.size() < count * esize) work.resize(count * esize);
  if (op.prescale != 1.0) {
    scale(work.data(), tensor.input, count, op.dtype, op.prescale);
  } else if (count > 0) {
    common::copy_bytes(work.data(), tensor.input, count * esize);
  }
  ReduceSpec spec;
  spec.dtype = op.dtype;
  spec.op = op.reduce_op;
  spec.divisor = op.reduce_op == HVD_OP_AVERAGE ? n : 1;
  spec.postscale = op.postscale;
  return reducescatter_ring(comm, work.data(), counts, tensor.output, spec)
      .with_context(common::strfmt("reducescatter of '%s'", tensor.name.c_str()));
}

}  // namespace hvdc::ops::cpu
