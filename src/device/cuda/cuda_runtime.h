// device::Runtime over the CUDA runtime and NCCL: the one implementation in libhvdc_cuda.so.
// Memory, streams, events and copies are in cuda_runtime.cc; communicators and collectives in
// nccl_calls.cc; driver-API stream memory operations come through cudaGetDriverEntryPoint.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "device/runtime.h"

namespace hvdc::device::cuda {

// Driver functions reached at run time (no -lcuda): cuStreamWriteValue32 / cuStreamWaitValue32.
struct DriverCalls {
  CUresult (*write_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int) = nullptr;
  CUresult (*wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int) = nullptr;
};

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(DriverCalls driver) : driver_(driver) {}

  Status device_count(int* count) override;
  Status device_uuid(int device, DeviceUuid* out) override;
  Status set_device(int device) override;
  Status device_alloc(int device, size_t bytes, void** out) override;
  Status device_free(int device, void* ptr) override;
  Status host_alloc(size_t bytes, void** out) override;
  Status host_free(void* ptr) override;

  Status stream_create(int device, Stream* out) override;
  Status stream_destroy(Stream stream) override;
  Status stream_synchronize(Stream stream) override;
  Status event_create(int device, Event* out) override;
  Status event_destroy(Event event) override;
  Status event_record(Event event, Stream stream) override;
  Status event_query(Event event, bool* done) override;
  Status stream_wait_event(Stream stream, Event event) override;

  Status copy_async(void* dst, const void* src, size_t bytes, Stream stream) override;
  Status batched_copy(const CopyPiece* pieces, size_t n, int32_t dtype, double scale,
                      Stream stream) override;
  Status scale_in_place(void* buf, size_t count, int32_t dtype, double factor,
                        Stream stream) override;
  Status host_alloc_mapped(size_t bytes, void** host, void** device_ptr) override;
  Status stream_write_value(Stream stream, void* word, uint32_t value) override;
  Status stream_wait_value(Stream stream, const void* word, uint32_t value) override;

  Status unique_id(UniqueId* out) override;
  Status comm_init_rank(int device, int nranks, const UniqueId& id, int rank,
                        Communicator* out) override;
  Status comm_async_error(Communicator comm, bool* in_progress) override;
  Status comm_abort(Communicator comm) override;
  Status comm_destroy(Communicator comm) override;
  Status group_start() override;
  Status group_end() override;
  Status allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t reduce_op,
                   Communicator comm, Stream stream) override;
  Status broadcast(const void* send, void* recv, size_t count, int32_t dtype, int root,
                   Communicator comm, Stream stream) override;
  Status reducescatter(const void* send, void* recv, size_t recv_count, int32_t dtype,
                       int32_t reduce_op, Communicator comm, Stream stream) override;
  Status allgather(const void* send, void* recv, size_t send_count, int32_t dtype,
                   Communicator comm, Stream stream) override;
  Status send(const void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
              Stream stream) override;
  Status recv(void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
              Stream stream) override;

  const char* last_error_text() const override;

 private:
  // Runs one NCCL collective call; a nonblocking communicator's in-progress enqueue is waited
  // out here (outside a group) so that the call returns once the work is queued.
  template <class Call>
  Status nccl_call(const char* what, Communicator comm, Call call);

  DriverCalls driver_;
};

// The failure of a CUDA runtime call as a Status (kErrDevice, or `code` if given) that names the
// call and carries CUDA's text; also this thread's last_error_text.
Status cuda_error(const char* call, cudaError_t err, hvd_status_t code = kErrDevice);
Status nccl_error(const char* call, ncclResult_t res, ncclComm_t comm = nullptr);
// Records text as this thread's last failure.
void remember_error(const std::string& text);

// The current device for a call's duration; restores the caller's afterwards.
class DeviceScope {
 public:
  DeviceScope() = default;
  ~DeviceScope();
  Status enter(int device);
  // The device `stream` belongs to (the current one for the legacy default stream).
  Status enter_stream(cudaStream_t stream);

 private:
  int previous_ = -1;
};

}  // namespace hvdc::device::cuda
