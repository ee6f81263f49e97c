// Everything the device backend (ops/nccl) needs from CUDA and NCCL, and nothing more. The
// production implementation lives in the plugin libhvdc_cuda.so (src/device/cuda/), loaded on
// the first CUDA tensor through the entry point declared at the end of this file; the tests build
// a host-memory implementation (device memory = host memory, a stream = a worker thread) so the
// backend's logic runs on every machine. libhvdc.so.0 itself never links CUDA or NCCL.
//
// Contract for every implementation:
// - Errors are common::Status values with code kErrDevice and a message that carries the CUDA or
//   NCCL error's own text ("ncclAllReduce: unhandled cuda error (run with NCCL_DEBUG=INFO...)"),
//   except where a call says otherwise. last_error_text() repeats the latest such text.
// - Calls that take a device ordinal make that device current for the call and restore the
//   calling thread's previous current device before returning.
// - Every call may come from any thread, except that the calls on one communicator come from one
//   thread at a time (the engine thread).
// - "Async" work is queued on the given stream and runs in stream order; the call returns once it
//   is queued. Pointers given to async work must stay valid until the work ran.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace hvdc::device {

using common::Status;

// The status of a failed CUDA or NCCL call.
constexpr hvd_status_t kErrDevice = HVD_ERR_DEVICE;

// Opaque handles; `handle` is the cudaStream_t, cudaEvent_t or ncclComm_t in the plugin. A stream
// with a null handle is CUDA's legacy default stream (a caller may pass it).
struct Stream {
  void* handle = nullptr;
};
struct Event {
  void* handle = nullptr;
};
struct Communicator {
  void* handle = nullptr;
};

// ncclUniqueId: made by one member, sent to the others, identifies one communicator.
struct UniqueId {
  static constexpr size_t kBytes = 128;
  char bytes[kBytes] = {};
};

// A GPU's UUID (cudaDeviceProp::uuid): the same physical GPU has the same one in every process,
// whatever CUDA_VISIBLE_DEVICES renumbers. Ranks compare them to find ranks that share a GPU.
struct DeviceUuid {
  static constexpr size_t kBytes = 16;
  char bytes[kBytes] = {};
};

// One piece of a batched copy: `count` elements from src to dst. Pieces may lie anywhere (device
// or pinned host memory); src == dst scales in place; otherwise they must not overlap.
struct CopyPiece {
  const void* src = nullptr;
  void* dst = nullptr;
  size_t count = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // ---- Devices and memory --------------------------------------------------------------------
  // Usable devices. With no GPU or no driver: HVD_ERR_UNSUPPORTED with the CUDA error's text,
  // and *count untouched.
  virtual Status device_count(int* count) = 0;
  virtual Status device_uuid(int device, DeviceUuid* out) = 0;
  // Makes `device` current for the calling thread (and leaves it so).
  virtual Status set_device(int device) = 0;
  // Device memory on `device` (cudaMalloc); bytes == 0 gives nullptr and ok.
  virtual Status device_alloc(int device, size_t bytes, void** out) = 0;
  virtual Status device_free(int device, void* ptr) = 0;
  // Page-locked host memory (cudaHostAlloc, portable), usable by async copies on every device.
  virtual Status host_alloc(size_t bytes, void** out) = 0;
  virtual Status host_free(void* ptr) = 0;

  // ---- Streams and events --------------------------------------------------------------------
  // A stream on `device` that does not synchronize with the legacy default stream.
  virtual Status stream_create(int device, Stream* out) = 0;
  virtual Status stream_destroy(Stream stream) = 0;
  // Blocks until everything queued on `stream` ran (teardown only: the engine never blocks on
  // device work while ops are in flight).
  virtual Status stream_synchronize(Stream stream) = 0;
  // An event on `device` without timing (cudaEventDisableTiming).
  virtual Status event_create(int device, Event* out) = 0;
  virtual Status event_destroy(Event event) = 0;
  // Captures the work queued on `stream` so far.
  virtual Status event_record(Event event, Stream stream) = 0;
  // Never blocks: *done is true once the captured work ran (or nothing was ever recorded).
  virtual Status event_query(Event event, bool* done) = 0;
  // Later work on `stream` waits for the work `event` captured when it was last recorded.
  virtual Status stream_wait_event(Stream stream, Event event) = 0;

  // ---- Copies and scaling --------------------------------------------------------------------
  // Copies bytes in any direction (cudaMemcpyDefault: device, pinned host or pageable host).
  virtual Status copy_async(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  // One launch that copies every piece, multiplying each element by `scale` on the way (scale
  // 1.0 is a plain copy, bit for bit). dtype is any HVD_* dtype. The element rules are the host
  // path's (ops/cpu/reduce/reduce.h, scale()), so both paths give the same bits: integers
  // multiply in double, round to nearest (ties to even) and saturate (NaN gives 0); float16 and
  // bfloat16 widen to float32, multiply by (float)scale and round once (nearest even); float32
  // multiplies in double and rounds to float; float64 in double; bool is (x != 0 && scale != 0).
  // The descriptors are read before the call returns (the plugin stages them itself); the
  // pieces' memory must stay valid until the copy ran.
  virtual Status batched_copy(const CopyPiece* pieces, size_t n, int32_t dtype, double scale,
                              Stream stream) = 0;
  // buf[i] *= factor for count elements, with batched_copy's rounding rules.
  virtual Status scale_in_place(void* buf, size_t count, int32_t dtype, double factor,
                                Stream stream) = 0;

  // ---- Stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32) ------------------
  // Page-locked host memory that devices address too (cudaHostAlloc with Mapped | Portable):
  // *host for the CPU, *device_ptr for the stream operations below (cudaHostGetDevicePointer).
  // hvdc keeps its stream-order words there, so that it can also store them from the host. Freed
  // with host_free(*host).
  virtual Status host_alloc_mapped(size_t bytes, void** host, void** device_ptr) = 0;
  // `word` is the device address of 4 aligned bytes of such memory. A write stores `value` once
  // the stream's earlier work ran. A wait holds the stream's later work until
  // (int32_t)(*word - value) >= 0 (CU_STREAM_WAIT_VALUE_GEQ: a wrapping counter compares right).
  // hvdc makes a caller's stream wait only on words that it writes itself.
  virtual Status stream_write_value(Stream stream, void* word, uint32_t value) = 0;
  virtual Status stream_wait_value(Stream stream, const void* word, uint32_t value) = 0;

  // ---- NCCL ------------------------------------------------------------------------------------
  virtual Status unique_id(UniqueId* out) = 0;
  // Starts creating this rank's member of the communicator `id` names, on `device`, without
  // blocking (ncclCommInitRankConfig with blocking = 0): poll comm_async_error until it is no
  // longer in progress. A communicator still in progress may be aborted.
  virtual Status comm_init_rank(int device, int nranks, const UniqueId& id, int rank,
                                Communicator* out) = 0;
  // Never blocks. ok with *in_progress false: ready (and no asynchronous error so far); ok with
  // *in_progress true: still initializing; an error: the communicator failed (NCCL's text).
  virtual Status comm_async_error(Communicator comm, bool* in_progress) = 0;
  // Stops the communicator's work for good, wherever it is (ncclCommAbort), and frees it. Bounded
  // even when peers are gone. The handle is invalid afterwards.
  virtual Status comm_abort(Communicator comm) = 0;
  // Frees a healthy communicator after its work ran (ncclCommDestroy). Invalidates the handle.
  virtual Status comm_destroy(Communicator comm) = 0;

  // Calls between group_start and group_end are launched together (ncclGroupStart/End);
  // group_end returns once the group's work is queued, like the collectives below.
  virtual Status group_start() = 0;
  virtual Status group_end() = 0;
  // The collectives queue their work on `stream` and return once it is queued (a nonblocking
  // communicator's in-progress enqueue is finished inside the call). `count` is in elements of
  // `dtype`. NCCL's dtypes only: int8, uint8, int32, int64, float16, bfloat16, float32, float64
  // (anything else is HVD_ERR_UNSUPPORTED; copies go as uint8 bytes). reduce_op is an HVD_OP_*;
  // HVD_OP_AVERAGE only for floating dtypes (ncclAvg).
  virtual Status allreduce(const void* send, void* recv, size_t count, int32_t dtype,
                           int32_t reduce_op, Communicator comm, Stream stream) = 0;
  // `root` is the root's rank in the communicator; `send` is read on the root only.
  virtual Status broadcast(const void* send, void* recv, size_t count, int32_t dtype, int root,
                           Communicator comm, Stream stream) = 0;
  // `send` holds nranks blocks of recv_count elements; block r reduced over ranks lands in
  // rank r's `recv`.
  virtual Status reducescatter(const void* send, void* recv, size_t recv_count, int32_t dtype,
                               int32_t reduce_op, Communicator comm, Stream stream) = 0;
  // Every rank's send_count elements, in rank order, into recv.
  virtual Status allgather(const void* send, void* recv, size_t send_count, int32_t dtype,
                           Communicator comm, Stream stream) = 0;
  virtual Status send(const void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
                      Stream stream) = 0;
  virtual Status recv(void* buf, size_t count, int32_t dtype, int peer, Communicator comm,
                      Stream stream) = 0;

  // The text of the latest failure of a call on the calling thread ("" if none).
  virtual const char* last_error_text() const = 0;
};

// ---- The plugin's entry point ------------------------------------------------------------------
// libhvdc_cuda.so exports one C symbol of type RuntimeCreateFn, named kRuntimeCreateSymbol. It
// returns a new Runtime (the caller deletes it, through the virtual destructor), or nullptr with
// a NUL-terminated reason in err[0..errlen) (no driver, no NCCL, ...). A version bump renames the
// symbol, so a stale plugin fails to load with a clear message instead of misbehaving.
constexpr int kRuntimeInterfaceVersion = 1;
constexpr const char* kRuntimeCreateSymbol = "hvdc_cuda_runtime_create_v1";
using RuntimeCreateFn = Runtime* (*)(char* err, size_t errlen);

}  // namespace hvdc::device

extern "C" hvdc::device::Runtime* hvdc_cuda_runtime_create_v1(char* err, size_t errlen);
