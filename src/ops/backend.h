// The seam between the engine and the collective algorithms. Core describes one agreed
// collective (what to run, on which buffers, among which ranks); the backend for the tensors'
// memory kind runs it: the algorithms, the copies and the scaling are the backend's. Core never
// touches tensor data itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "ops/lane.h"
#include "transport/transport.h"

namespace hvdc::ops {

using common::Status;

struct DeviceSubmission;  // ops/nccl/submission.h

enum class Collective : int32_t {
  kAllreduce,
  kAllgather,
  kBroadcast,
  kBarrier,
  kAlltoall,
  kReducescatter
};

// One tensor of a collective, as this rank submitted it.
struct TensorArgs {
  std::string name;
  std::vector<int64_t> shape;
  const void* input = nullptr;
  void* output = nullptr;
  // Allreduce: the agreed element count. A rank that joined (hvd_join) and has no tensor of that
  // name has input == output == nullptr: the backend contributes zeros of this count.
  int64_t count = 0;
  std::vector<int64_t> splits;  // alltoall: rows sent to each member (empty: an equal split)
  // Outputs whose size is known only now (allgather, alltoall): nullptr if the caller's
  // allocator refused.
  std::function<void*(const std::vector<int64_t>& shape, size_t bytes)> allocate_output;
  // Alltoall: rows received from each member, once known.
  std::function<void(std::vector<int64_t> rows)> set_received_splits;
  // CUDA tensors: the caller's stream (a cudaStream_t; null is the legacy default stream): the
  // op reads the input after work queued on it. stream_ordered (HVD_OP_STREAM_ORDERED): later
  // work on it must see the output without a host wait.
  void* stream = nullptr;
  bool stream_ordered = false;
  // CUDA tensors: what the submitting thread recorded on the caller's stream when the op was
  // submitted (ops/nccl/submission.h). Null: the backend records on the stream when it starts the
  // op (later than submission; a stream-ordered op then fails, as it would deadlock).
  std::shared_ptr<DeviceSubmission> submission;
};

// Who takes part in a collective and how its messages are told apart from other ops'.
struct Group {
  transport::Transport* transport = nullptr;  // null on a single rank
  std::vector<int> members;                   // global rank of each member
  int index = 0;                              // this rank's position in members
  uint32_t context = 0;                       // the process set's tag context
  bool same_host = false;                     // every member runs on this rank's host
  std::vector<int> hosts;  // across hosts: each member's host number (empty on one host)
  uint64_t seq = 0;        // the op's number in its set, the same everywhere
  // Called while waiting for peers; a non-ok status (the engine's work ended) stops the op.
  transport::Interrupt interrupt;

  int size() const { return static_cast<int>(members.size()); }
};

// One collective, agreed on by every member: every member runs the same one, in the same order.
struct CollectiveArgs {
  Collective type = Collective::kAllreduce;
  int32_t dtype = 0;
  int32_t reduce_op = 0;
  int32_t root = 0;  // broadcast: the root's index in the group
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t device_id = 0;  // CUDA: this rank's device ordinal (its tensors')
  uint32_t flags = 0;     // the agreed HVD_OP_* flags (core::kNegotiatedFlags: HVD_OP_HOST_PATH)
  std::vector<int64_t> sizes;       // allgather: each member's first dimension
  std::vector<TensorArgs> tensors;  // more than one: a fused allreduce
  // Allreduce: (*member_inputs)[t][m] is member m's input of tensor t, already here (it came
  // with the negotiation round); the backend reduces them and exchanges nothing. Null: not here.
  const std::vector<std::vector<const char*>>* member_inputs = nullptr;
  // Allreduce: agreed on the lane (core/lane/lane.h) by every member: in place at any size.
  bool lane = false;
  Group group;
  // Marks the start (true) and end (false) of a phase for the timeline; may be empty.
  std::function<void(const char* phase, bool begin)> trace;
};

// A collective a backend started and finishes later (on a device stream, for instance).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Never blocks. True once the collective finished; *status then holds its result.
  virtual bool poll(Status* status) = 0;
};

// Tuning for the backends (HVDC_* settings).
struct BackendOptions {
  size_t small_allreduce_bytes = 64 << 10;  // host allreduce: direct up to this size
  size_t segment_bytes = 256 << 10;         // host pipelines: bytes per segment
  size_t cross_host_segment_bytes = 0;      // ... in a group across hosts; 0: segment_bytes
  bool deterministic = false;               // reduce in member order whatever the sizes
  size_t local_min_bytes = 16 << 10;        // host allreduce on one host: in place from this size
  size_t local_stage_bytes = 512 << 10;     // ... and staged through a mapped region up to this
  bool peer_reads = true;                   // this rank may read local peers' memory
  bool hierarchical = true;                 // host allreduce across hosts: local steps first
  bool lane = true;                         // HVDC_LANE: sets open their boards on a first op
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs `op`, or starts it. A backend that finishes before returning leaves *pending null and
  // returns the result; one that finishes later returns ok with *pending set, and core polls it.
  // Either way, the tensors' buffers stay valid until the op finished.
  virtual Status start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) = 0;
  // The engine's work ended with `why` (not ok). Collectives in flight must now finish within a
  // bounded time: a backend that waits on a device stops that work (an NCCL communicator is
  // aborted) and its pending collectives report `why`. Engine thread only.
  virtual void abort(const Status& why) { (void)why; }
  // The lane of `group` (ops/lane.h), where its members can agree on their ops through shared
  // memory; null where they cannot (yet). Engine passes only.
  virtual LaneBoard* lane(const Group& group) {
    (void)group;
    return nullptr;
  }
};

}  // namespace hvdc::ops
