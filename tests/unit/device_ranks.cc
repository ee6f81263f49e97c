#include "device_ranks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "ops/nccl/submission.h"
#include "thread_engines.h"
#include "transport/loopback/loopback_transport.h"

namespace hvdc_test {

using hvdc::common::make_error;

hvdc::ops::nccl::DeviceTimeouts DeviceRanks::fast_timeouts() {
  hvdc::ops::nccl::DeviceTimeouts t;
  t.shutdown_grace = std::chrono::milliseconds(200);
  t.give_up = std::chrono::milliseconds(300);
  return t;
}

DeviceRanks::DeviceRanks(int n, hvdc::ops::nccl::DeviceTimeouts timeouts)
    : world_(std::make_shared<HostWorld>()),
      fabric_(hvdc::transport::loopback::LoopbackFabric::create(n)),
      seqs_(n),
      buffers_(n) {
  for (int r = 0; r < n; ++r) {
    hvdc::transport::TransportOptions options;
    options.rank = r;
    options.size = n;
    options.progress_timeout_seconds = 60;
    transports_.emplace_back();
    EXPECT_TRUE(
        hvdc::transport::loopback::create_loopback_transport(fabric_, options, &transports_.back())
            .is_ok());
    runtimes_.push_back(std::make_unique<HostRuntime>(world_, r));
    backends_.push_back(std::make_unique<hvdc::ops::nccl::NcclBackend>(
        hvdc::ops::BackendOptions(), provide(runtimes_.back().get()), timeouts));
  }
}

DeviceRanks::~DeviceRanks() {
  backends_.clear();
  for (int r = 0; r < size(); ++r) {
    for (void* p : buffers_[r]) (void)runtimes_[r]->device_free(0, p);
    hvdc::ops::nccl::WordPool::forget(runtimes_[r].get());
  }
  runtimes_.clear();
}

hvdc::ops::Group DeviceRanks::group(int r, uint32_t context, std::vector<int> members) {
  hvdc::ops::Group g;
  g.transport = transports_[r].get();
  if (members.empty()) {
    for (int m = 0; m < size(); ++m) members.push_back(m);
  }
  g.members = members;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == r) g.index = static_cast<int>(i);
  }
  g.context = context;
  g.seq = ++seqs_[r][context];
  return g;
}

Status DeviceRanks::run(int r, const hvdc::ops::CollectiveArgs& op, std::chrono::milliseconds limit,
                        const std::function<void()>& on_poll) {
  std::unique_ptr<hvdc::ops::PendingCollective> pending;
  Status st = backends_[r]->start(op, &pending);
  if (!st.is_ok() || !pending) return st;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pending->poll(&st)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return make_error(HVD_ERR_TIMEOUT, "test: rank %d's device collective did not finish", r);
    }
    if (on_poll) on_poll();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return st;
}

std::vector<Status> DeviceRanks::run_all(
    const std::function<hvdc::ops::CollectiveArgs(int r)>& build) {
  std::vector<Status> status(size());
  on_ranks(size(), [&](int r) { status[r] = run(r, build(r)); });
  return status;
}

hvdc::ops::CollectiveArgs DeviceRanks::args(int r, hvdc::ops::Collective type, int32_t dtype) {
  hvdc::ops::CollectiveArgs op;
  op.type = type;
  op.dtype = dtype;
  op.group = group(r);
  return op;
}

void* DeviceRanks::device_copy(int r, const void* data, size_t bytes) {
  void* p = device_zeros(r, bytes);
  if (bytes > 0) std::memcpy(p, data, bytes);
  return p;
}

void* DeviceRanks::device_zeros(int r, size_t bytes) {
  void* p = nullptr;
  EXPECT_TRUE(runtimes_[r]->device_alloc(0, bytes == 0 ? 1 : bytes, &p).is_ok());
  std::memset(p, 0, bytes == 0 ? 1 : bytes);
  buffers_[r].push_back(p);
  return p;
}

}  // namespace hvdc_test
