// What hvdc records on the caller's CUDA stream when a CUDA tensor is submitted, on the
// submitting thread, before the op is enqueued:
// - an event capturing the work already queued there, which the backend's stream waits for before
//   it reads the tensor (hvdc orders its reads after that work, and only that work);
// - with HVD_OP_STREAM_ORDERED, a wait on a word of mapped pinned memory that hvdc writes once the
//   op's results are in place, so later work on the caller's stream sees them without a host
//   wait. The caller's stream never waits on an event: the word is written either by the
//   backend's stream after the collective, or from the host when the op ends otherwise (an error,
//   shutdown), so the caller's stream is never left waiting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "device/runtime.h"
#include "ops/backend.h"

namespace hvdc::ops {

namespace nccl {
class WordPool;
}

struct DeviceSubmission {
  DeviceSubmission() = default;
  DeviceSubmission(const DeviceSubmission&) = delete;
  DeviceSubmission& operator=(const DeviceSubmission&) = delete;
  // Releases the event, and stores the word's value from the host (a no-op if the backend's
  // stream stored it already), so the caller's stream never waits for an op that ended.
  ~DeviceSubmission();

  device::Runtime* runtime = nullptr;
  int device = 0;
  device::Event inputs_ready;  // recorded on the caller's stream at submission
  // Stream ordered only: the word the caller's stream waits on (device address and host address)
  // and the value it waits for.
  void* word_device = nullptr;
  uint32_t* word_host = nullptr;
  uint32_t value = 0;
  // True while a store of the word queued on the backend's stream may still run (the backend
  // sets it when it queues the store and clears it once that stream work finished); such a
  // word's slot is retired instead of reused (WordPool::release).
  bool stream_store_pending = false;
  std::shared_ptr<nccl::WordPool> pool;
  size_t slot = 0;
};

namespace nccl {

// Stream-order words of one runtime, in slabs of mapped pinned memory; any thread.
class WordPool {
 public:
  explicit WordPool(device::Runtime* runtime) : runtime_(runtime) {}
  ~WordPool();
  WordPool(const WordPool&) = delete;
  WordPool& operator=(const WordPool&) = delete;

  // A free slot with its addresses and the next value of its counter (the word holds value - 1).
  Status acquire(size_t* slot, uint32_t** host, void** device, uint32_t* value);
  // The slot's word holds its value (stored from the host, or by a stream that finished): reuse
  // it. `settled` false: a stream may still store it later; the slot is retired instead.
  void release(size_t slot, bool settled);

  // The pool of `runtime` (one per runtime, created on first use; the production runtime lives
  // as long as the process). forget() drops a runtime's pool (tests that delete a runtime).
  static std::shared_ptr<WordPool> of(device::Runtime* runtime);
  static void forget(device::Runtime* runtime);

 private:
  static constexpr size_t kSlabWords = 1024;
  Status grow();

  device::Runtime* runtime_;
  std::mutex mutex_;
  std::vector<void*> slabs_host_;  // for host_free
  std::vector<uint32_t*> host_;    // per slot
  std::vector<char*> device_;      // per slot
  std::vector<uint32_t> next_;     // per slot: the value its next use waits for
  std::vector<size_t> free_;
};

// Records the submission of a CUDA tensor on the caller's `stream` (see the top of this file).
// Called by the API on the submitting thread. On failure nothing is left on the stream.
Status record_submission(device::Runtime* runtime, int device, void* stream, bool stream_ordered,
                         std::shared_ptr<DeviceSubmission>* out);

}  // namespace nccl
}  // namespace hvdc::ops
