// The backend for CUDA tensors (HVD_DEVICE_CUDA). Written only against device::Runtime, which
// it gets from an injected provider: the CUDA plugin's loader in production, a host-memory
// implementation in the tests. Every collective runs on the backend's own stream of the tensors'
// device, after the work its callers queued before submitting (submission.h), through NCCL
// (device_collectives.h) or the host path (host_path.h), and completes when its stream reaches
// the recorded end (completion.h). Barrier stays on the host. Engine thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "device/runtime.h"
#include "ops/backend.h"
#include "ops/backends.h"
#include "ops/nccl/comm_cache.h"
#include "ops/nccl/completion.h"
#include "ops/nccl/device_context.h"
#include "ops/nccl/host_path.h"

namespace hvdc::ops::nccl {

// Gives the device runtime, or why there is none (called once, on the first CUDA op).
using RuntimeProvider = DeviceRuntimeProvider;

class NcclBackend : public Backend {
 public:
  NcclBackend(const BackendOptions& options, RuntimeProvider provider,
              DeviceTimeouts timeouts = DeviceTimeouts());
  ~NcclBackend() override;
  Status start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) override;
  void abort(const Status& why) override;

 private:
  Status runtime();
  Status context(int device, DeviceContext** out);
  Status order_after_callers(const CollectiveArgs& op, DeviceContext& dev);
  bool takes_host_path(const CollectiveArgs& op, CommEntry& entry);
  Status run_on_nccl(const CollectiveArgs& op, CommEntry& entry, DeviceRun& run);
  Status run(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending);

  RuntimeProvider provider_;
  bool provided_ = false;
  Status runtime_status_;
  device::Runtime* rt_ = nullptr;
  HostPath host_path_;
  std::shared_ptr<AbortState> abort_;
  // Destroyed in reverse: communicators before the streams they used.
  std::map<int, std::unique_ptr<DeviceContext>> devices_;
  std::unique_ptr<CommCache> comms_;
};

}  // namespace hvdc::ops::nccl
