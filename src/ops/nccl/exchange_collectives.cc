// The collectives that move data without reducing it (allgather, broadcast, alltoall), as bytes,
// and reducescatter, whose uneven blocks NCCL cannot take: they are padded to one stride.
#include <algorithm>

#include "common/dtype.h"
#include "ops/cpu/alltoall/alltoall.h"
#include "ops/cpu/backend.h"
#include "ops/nccl/device_collectives.h"
#include "ops/nccl/fusion_pack.h"

namespace hvdc::ops::nccl {

namespace {

size_t row_bytes(const CollectiveArgs& op) {
  return cpu::element_count(op.tensors[0].shape, 1) * common::dtype_size(op.dtype);
}

// Runs calls() between group_start and group_end; group_end runs even after a failed call.
template <class Calls>
Status in_group(device::Runtime& rt, Calls calls) {
  HVDC_RETURN_IF_ERROR(rt.group_start());
  Status st = calls();
  Status end = rt.group_end();
  return st.is_ok() ? end : st;
}

std::vector<size_t> offsets_of(const std::vector<size_t>& bytes) {
  std::vector<size_t> at(bytes.size(), 0);
  for (size_t i = 1; i < bytes.size(); ++i) at[i] = at[i - 1] + bytes[i - 1];
  return at;
}

// Each member's rows for this rank, learned over the host transport (as the host path does).
Status exchange_splits(const CollectiveArgs& op, const std::vector<int64_t>& send_rows,
                       std::vector<int64_t>* recv_rows) {
  const int n = op.group.size();
  recv_rows->assign(n, 0);
  if (n == 1) {
    *recv_rows = send_rows;
    return Status::ok();
  }
  cpu::Comm comm = cpu::comm_for(op.group);
  const std::vector<size_t> counts(n, sizeof(int64_t));
  return cpu::alltoall_pairwise(comm, reinterpret_cast<const char*>(send_rows.data()), counts,
                                reinterpret_cast<char*>(recv_rows->data()), counts);
}

}  // namespace

Status allgather_on_device(const CollectiveArgs& op, DeviceRun& run) {
  const TensorArgs& t = op.tensors[0];
  const int n = op.group.size();
  if (static_cast<int>(op.sizes.size()) != n) {
    return common::make_error(HVD_ERR_INTERNAL,
                              "allgather '%s': %zu first dimensions for %d members", t.name.c_str(),
                              op.sizes.size(), n);
  }
  std::vector<size_t> bytes;
  int64_t rows = 0;
  for (int64_t r : op.sizes) {
    bytes.push_back(static_cast<size_t>(r) * row_bytes(op));
    rows += r;
  }
  char* out = nullptr;
  HVDC_RETURN_IF_ERROR(cpu::allocate_rows(t, op.dtype, "ALLGATHER", rows, &out));
  device::Runtime& rt = run.rt();
  const bool even =
      std::all_of(bytes.begin(), bytes.end(), [&](size_t b) { return b == bytes[0]; });
  if (even) {
    if (bytes[0] == 0) return Status::ok();
    return rt.allgather(t.input, out, bytes[0], HVD_UINT8, run.comm, run.stream());
  }
  // First dimensions differ: one broadcast per member, launched together.
  const std::vector<size_t> at = offsets_of(bytes);
  return in_group(rt, [&]() -> Status {
    for (int m = 0; m < n; ++m) {
      if (bytes[m] == 0) continue;
      const void* send = m == op.group.index ? t.input : out + at[m];
      HVDC_RETURN_IF_ERROR(
          rt.broadcast(send, out + at[m], bytes[m], HVD_UINT8, m, run.comm, run.stream()));
    }
    return Status::ok();
  });
}

Status broadcast_on_device(const CollectiveArgs& op, DeviceRun& run) {
  const TensorArgs& t = op.tensors[0];
  const size_t bytes = cpu::element_count(t.shape) * common::dtype_size(op.dtype);
  if (bytes == 0) return Status::ok();
  const void* send = op.group.index == op.root ? t.input : t.output;
  return run.rt().broadcast(send, t.output, bytes, HVD_UINT8, op.root, run.comm, run.stream());
}

Status alltoall_on_device(const CollectiveArgs& op, DeviceRun& run) {
  const TensorArgs& t = op.tensors[0];
  const int n = op.group.size();
  const std::vector<int64_t> send_rows =
      t.splits.empty() ? cpu::even_split(t.shape[0], n) : t.splits;
  std::vector<int64_t> recv_rows;
  HVDC_RETURN_IF_ERROR(
      exchange_splits(op, send_rows, &recv_rows)
          .with_context(common::strfmt("alltoall of '%s' (exchanging splits)", t.name.c_str())));
  HVDC_RETURN_IF_ERROR(run.comm_usable());
  std::vector<size_t> send_bytes(n), recv_bytes(n);
  int64_t total = 0;
  for (int m = 0; m < n; ++m) {
    send_bytes[m] = static_cast<size_t>(send_rows[m]) * row_bytes(op);
    recv_bytes[m] = static_cast<size_t>(recv_rows[m]) * row_bytes(op);
    total += recv_rows[m];
  }
  char* out = nullptr;
  HVDC_RETURN_IF_ERROR(cpu::allocate_rows(t, op.dtype, "ALLTOALL", total, &out));
  const std::vector<size_t> send_at = offsets_of(send_bytes);
  const std::vector<size_t> recv_at = offsets_of(recv_bytes);
  device::Runtime& rt = run.rt();
  const char* in = static_cast<const char*>(t.input);
  HVDC_RETURN_IF_ERROR(in_group(rt, [&]() -> Status {
    for (int m = 0; m < n; ++m) {
      if (send_bytes[m] > 0) {
        HVDC_RETURN_IF_ERROR(
            rt.send(in + send_at[m], send_bytes[m], HVD_UINT8, m, run.comm, run.stream()));
      }
      if (recv_bytes[m] > 0) {
        HVDC_RETURN_IF_ERROR(
            rt.recv(out + recv_at[m], recv_bytes[m], HVD_UINT8, m, run.comm, run.stream()));
      }
    }
    return Status::ok();
  }));
  t.set_received_splits(std::move(recv_rows));
  return Status::ok();
}

// Every member's block padded to the largest (NCCL takes one block size), prescaled on the way
// in; this rank's block postscaled on the way out.
Status reducescatter_on_device(const CollectiveArgs& op, DeviceRun& run) {
  const TensorArgs& t = op.tensors[0];
  const int n = op.group.size();
  const size_t esize = common::dtype_size(op.dtype);
  const size_t row_elems = cpu::element_count(t.shape, 1);
  std::vector<size_t> counts;
  for (int64_t rows : cpu::even_split(t.shape.empty() ? 0 : t.shape[0], n)) {
    counts.push_back(static_cast<size_t>(rows) * row_elems);
  }
  const size_t stride = *std::max_element(counts.begin(), counts.end());
  if (stride == 0) return Status::ok();
  device::Runtime& rt = run.rt();
  void* padded = nullptr;
  void* mine = nullptr;
  HVDC_RETURN_IF_ERROR(run.device_buffer(stride * n * esize, &padded));
  HVDC_RETURN_IF_ERROR(run.device_buffer(stride * esize, &mine));
  const auto in = pad_pieces(t.input, counts, stride, padded, esize);
  HVDC_RETURN_IF_ERROR(rt.batched_copy(in.data(), in.size(), op.dtype, op.prescale, run.stream()));
  HVDC_RETURN_IF_ERROR(
      rt.reducescatter(padded, mine, stride, op.dtype, op.reduce_op, run.comm, run.stream()));
  const size_t own = counts[op.group.index];
  if (own == 0) return Status::ok();
  const device::CopyPiece out{mine, t.output, own};
  return rt.batched_copy(&out, 1, op.dtype, op.postscale, run.stream());
}

}  // namespace hvdc::ops::nccl
