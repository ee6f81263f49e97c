// One NCCL communicator per (process set, device) on this rank, created lazily by the first op
// that needs it: the set's first member makes the unique id and sends it to the others over the
// engine's transport (setup_exchange.h), so creation is collective within that op and ordered
// like every other op. Before that, on the set's first device op, the members compare their GPUs'
// UUIDs: NCCL refuses two ranks on one GPU, so such a set runs on the host path instead.
// Engine thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "device/runtime.h"
#include "ops/backend.h"

namespace hvdc::ops::nccl {

// This rank's view of one (process set, device).
class CommEntry {
 public:
  CommEntry(device::Runtime* runtime, int device, bool shared_gpu)
      : runtime_(runtime), device_(device), shared_gpu_(shared_gpu) {}
  ~CommEntry();  // destroys a healthy communicator (an aborted one is gone already)

  int device() const { return device_; }
  // Several members use one GPU: the host path serves every op of the set.
  bool shared_gpu() const { return shared_gpu_; }
  bool has_communicator() const { return has_comm_; }
  device::Communicator communicator() const { return comm_; }
  // Not ok once aborted: why.
  const Status& failure() const { return failure_; }
  // Never blocks: NCCL's asynchronous error, if any; one aborts the communicator (and is kept).
  Status check();
  // Stops the communicator's work for good (ncclCommAbort), once; later ops fail with `why`.
  void abort(const Status& why);
  // Creates the communicator (collective over `group`, within the op that needs it first).
  Status create(const Group& group);
  // The host path was reported for this set (logged once).
  bool note_host_path_logged() {
    const bool first = !host_path_logged_;
    host_path_logged_ = true;
    return first;
  }

 private:
  Status init(const Group& group);
  Status wait_ready(const Group& group);

  device::Runtime* runtime_;
  int device_;
  bool shared_gpu_;
  bool has_comm_ = false;
  bool host_path_logged_ = false;
  device::Communicator comm_;
  Status failure_;
};

class CommCache {
 public:
  explicit CommCache(device::Runtime* runtime) : runtime_(runtime) {}

  // The entry for `group`'s set on `device`; its first use compares GPU UUIDs among the
  // members (collective over `group`).
  Status entry(const Group& group, int device, std::shared_ptr<CommEntry>* out);
  // The entry's communicator, created on first use (collective over `group`).
  Status communicator(const Group& group, CommEntry& entry, device::Communicator* out);
  // Aborts every communicator (the engine's work ended).
  void abort_all(const Status& why);
  size_t size() const { return entries_.size(); }

 private:
  using Key = std::tuple<uint32_t, std::vector<int>, int>;  // set context, members, device
  Status compare_gpus(const Group& group, int device, bool* shared);

  device::Runtime* runtime_;
  std::map<Key, std::shared_ptr<CommEntry>> entries_;
};

}  // namespace hvdc::ops::nccl
