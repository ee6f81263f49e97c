// The device backend at n thread-ranks without engines: each rank has a HostRuntime, an
// NcclBackend over it, and a loopback transport for the backend's own host messages. A test
// builds the same CollectiveArgs on every rank (with group(r)) and runs them with run(r, op),
// which starts the collective and polls it as the engine's execution stage does.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "host_runtime.h"
#include "ops/nccl/nccl_backend.h"
#include "transport/loopback/fabric.h"

namespace hvdc_test {

class DeviceRanks {
 public:
  explicit DeviceRanks(int n, hvdc::ops::nccl::DeviceTimeouts timeouts = fast_timeouts());
  ~DeviceRanks();
  static hvdc::ops::nccl::DeviceTimeouts fast_timeouts();

  int size() const { return static_cast<int>(runtimes_.size()); }
  HostWorld& world() { return *world_; }
  HostRuntime& rt(int r) { return *runtimes_[r]; }
  hvdc::ops::nccl::NcclBackend& backend(int r) { return *backends_[r]; }
  // The group of rank r for its next op in set `context` (members: all ranks, or `members`).
  hvdc::ops::Group group(int r, uint32_t context = 1, std::vector<int> members = {});
  // Starts op on rank r and polls it to the end (HVD_ERR_TIMEOUT from the test after `limit`).
  // on_poll runs between polls (a test's abort, say).
  Status run(int r, const hvdc::ops::CollectiveArgs& op,
             std::chrono::milliseconds limit = std::chrono::seconds(20),
             const std::function<void()>& on_poll = nullptr);
  // Runs build(r)'s op on every rank at once (rank r on its own thread); each rank's status.
  std::vector<Status> run_all(const std::function<hvdc::ops::CollectiveArgs(int r)>& build);
  // An op of `type` over dtype for rank r's next step in set 1 (the tensors are the test's).
  hvdc::ops::CollectiveArgs args(int r, hvdc::ops::Collective type, int32_t dtype);
  // Device memory of rank r holding `bytes` (freed with the ranks).
  void* device_copy(int r, const void* data, size_t bytes);
  void* device_zeros(int r, size_t bytes);

 private:
  std::shared_ptr<HostWorld> world_;
  std::shared_ptr<hvdc::transport::loopback::LoopbackFabric> fabric_;
  std::vector<std::unique_ptr<hvdc::transport::Transport>> transports_;
  std::vector<std::unique_ptr<HostRuntime>> runtimes_;
  std::vector<std::unique_ptr<hvdc::ops::nccl::NcclBackend>> backends_;
  std::vector<std::map<uint32_t, uint64_t>> seqs_;
  std::vector<std::vector<void*>> buffers_;
};

}  // namespace hvdc_test
