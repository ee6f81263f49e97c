// The NCCL half of CudaRuntime: communicators (nonblocking) and the collectives.
#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "device/cuda/cuda_runtime.h"

namespace hvdc::device::cuda {

namespace {

ncclComm_t raw(Communicator c) {
  return static_cast<ncclComm_t>(c.handle);
}
cudaStream_t raw(Stream s) {
  return static_cast<cudaStream_t>(s.handle);
}

// Communicators used inside the calling thread's open group: group_end finishes their enqueue.
thread_local int t_group_depth = 0;
thread_local std::vector<ncclComm_t> t_group_comms;

bool nccl_dtype(int32_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case HVD_INT8:
      *out = ncclInt8;
      return true;
    case HVD_UINT8:
      *out = ncclUint8;
      return true;
    case HVD_INT32:
      *out = ncclInt32;
      return true;
    case HVD_INT64:
      *out = ncclInt64;
      return true;
    case HVD_FLOAT16:
      *out = ncclFloat16;
      return true;
    case HVD_BFLOAT16:
      *out = ncclBfloat16;
      return true;
    case HVD_FLOAT32:
      *out = ncclFloat32;
      return true;
    case HVD_FLOAT64:
      *out = ncclFloat64;
      return true;
    default:
      return false;
  }
}

bool nccl_op(int32_t reduce_op, int32_t dtype, ncclRedOp_t* out) {
  switch (reduce_op) {
    case HVD_OP_SUM:
      *out = ncclSum;
      return true;
    case HVD_OP_AVERAGE:  // ncclAvg is defined for floating types only
      *out = ncclAvg;
      return common::dtype_is_float(dtype);
    case HVD_OP_MIN:
      *out = ncclMin;
      return true;
    case HVD_OP_MAX:
      *out = ncclMax;
      return true;
    case HVD_OP_PRODUCT:
      *out = ncclProd;
      return true;
    default:
      return false;
  }
}

Status unsupported(const char* what, int32_t value) {
  Status st =
      common::make_error(HVD_ERR_UNSUPPORTED, "NCCL has no %s for hvdc value %d", what, value);
  remember_error(st.message());
  return st;
}

// Waits out a nonblocking communicator's in-progress state; its final result.
ncclResult_t settle(ncclComm_t comm, ncclResult_t res) {
  while (res == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &res) != ncclSuccess) return ncclInternalError;
  }
  return res;
}

}  // namespace

Status nccl_error(const char* call, ncclResult_t res, ncclComm_t comm) {
  std::string text = std::string(call) + ": " + ncclGetErrorString(res);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && detail[0] != '\0') text += std::string(" (") + detail + ")";
  remember_error(text);
  return Status(kErrDevice, text);
}

template <class Call>
Status CudaRuntime::nccl_call(const char* what, Communicator comm, Call call) {
  ncclResult_t res = call();
  if (t_group_depth > 0) {
    if (res == ncclInProgress || res == ncclSuccess) {
      t_group_comms.push_back(raw(comm));
      return Status::ok();
    }
  } else {
    res = settle(raw(comm), res);
  }
  if (res != ncclSuccess) return nccl_error(what, res, raw(comm));
  return Status::ok();
}

Status CudaRuntime::unique_id(UniqueId* out) {
  static_assert(sizeof(ncclUniqueId) <= UniqueId::kBytes, "ncclUniqueId does not fit");
  ncclUniqueId id;
  const ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return nccl_error("ncclGetUniqueId", res);
  std::memcpy(out->bytes, &id, sizeof(id));
  return Status::ok();
}

Status CudaRuntime::comm_init_rank(int device, int nranks, const UniqueId& id, int rank,
                                   Communicator* out) {
  DeviceScope scope;
  HVDC_RETURN_IF_ERROR(scope.enter(device));
  ncclUniqueId nid;
  std::memcpy(&nid, id.bytes, sizeof(nid));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, nid, rank, &config);
  if (res != ncclSuccess && res != ncclInProgress) {
    if (comm != nullptr) ncclCommAbort(comm);
    return nccl_error("ncclCommInitRankConfig", res);
  }
  out->handle = comm;
  return Status::ok();
}

Status CudaRuntime::comm_async_error(Communicator comm, bool* in_progress) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t res = ncclCommGetAsyncError(raw(comm), &state);
  if (res != ncclSuccess) return nccl_error("ncclCommGetAsyncError", res, raw(comm));
  *in_progress = state == ncclInProgress;
  if (state != ncclSuccess && state != ncclInProgress) {
    return nccl_error("NCCL communicator", state, raw(comm));
  }
  return Status::ok();
}

Status CudaRuntime::comm_abort(Communicator comm) {
  const ncclResult_t res = ncclCommAbort(raw(comm));
  if (res != ncclSuccess) return nccl_error("ncclCommAbort", res);
  return Status::ok();
}

Status CudaRuntime::comm_destroy(Communicator comm) {
  ncclComm_t c = raw(comm);
  ncclResult_t res = ncclCommFinalize(c);
  res = settle(c, res);
  if (res != ncclSuccess) {
    Status st = nccl_error("ncclCommFinalize", res, c);
    ncclCommAbort(c);
    return st;
  }
  res = ncclCommDestroy(c);
  if (res != ncclSuccess) return nccl_error("ncclCommDestroy", res);
  return Status::ok();
}

Status CudaRuntime::group_start() {
  const ncclResult_t res = ncclGroupStart();
  if (res != ncclSuccess) return nccl_error("ncclGroupStart", res);
  ++t_group_depth;
  return Status::ok();
}

Status CudaRuntime::group_end() {
  ncclResult_t res = ncclGroupEnd();
  if (t_group_depth > 0) --t_group_depth;
  if (t_group_depth > 0) {  // an inner group: the outermost one finishes the enqueue
    if (res != ncclSuccess && res != ncclInProgress) return nccl_error("ncclGroupEnd", res);
    return Status::ok();
  }
  std::vector<ncclComm_t> comms;
  comms.swap(t_group_comms);
  if (res == ncclInProgress) {
    res = ncclSuccess;
    for (ncclComm_t c : comms) {
      const ncclResult_t r = settle(c, ncclInProgress);
      if (r != ncclSuccess) return nccl_error("ncclGroupEnd", r, c);
    }
  }
  if (res != ncclSuccess) return nccl_error("ncclGroupEnd", res);
  return Status::ok();
}

Status CudaRuntime::allreduce(const void* send, void* recv, size_t count, int32_t dtype,
                              int32_t reduce_op, Communicator comm, Stream stream) {
  ncclDataType_t t;
  ncclRedOp_t op;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  if (!nccl_op(reduce_op, dtype, &op)) return unsupported("reduction for this type", reduce_op);
  return nccl_call("ncclAllReduce", comm,
                   [&] { return ncclAllReduce(send, recv, count, t, op, raw(comm), raw(stream)); });
}

Status CudaRuntime::broadcast(const void* send, void* recv, size_t count, int32_t dtype, int root,
                              Communicator comm, Stream stream) {
  ncclDataType_t t;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  return nccl_call("ncclBroadcast", comm, [&] {
    return ncclBroadcast(send, recv, count, t, root, raw(comm), raw(stream));
  });
}

Status CudaRuntime::reducescatter(const void* send, void* recv, size_t recv_count, int32_t dtype,
                                  int32_t reduce_op, Communicator comm, Stream stream) {
  ncclDataType_t t;
  ncclRedOp_t op;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  if (!nccl_op(reduce_op, dtype, &op)) return unsupported("reduction for this type", reduce_op);
  return nccl_call("ncclReduceScatter", comm, [&] {
    return ncclReduceScatter(send, recv, recv_count, t, op, raw(comm), raw(stream));
  });
}

Status CudaRuntime::allgather(const void* send, void* recv, size_t send_count, int32_t dtype,
                              Communicator comm, Stream stream) {
  ncclDataType_t t;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  return nccl_call("ncclAllGather", comm, [&] {
    return ncclAllGather(send, recv, send_count, t, raw(comm), raw(stream));
  });
}

Status CudaRuntime::send(const void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
                         Stream stream) {
  ncclDataType_t t;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  return nccl_call("ncclSend", comm,
                   [&] { return ncclSend(buf, count, t, peer, raw(comm), raw(stream)); });
}

Status CudaRuntime::recv(void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
                         Stream stream) {
  ncclDataType_t t;
  if (!nccl_dtype(dtype, &t)) return unsupported("data type", dtype);
  return nccl_call("ncclRecv", comm,
                   [&] { return ncclRecv(buf, count, t, peer, raw(comm), raw(stream)); });
}

}  // namespace hvdc::device::cuda
