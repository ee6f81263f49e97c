// Engines as threads in one process, connected by the in-process bootstrap and the loopback
// transport (no UCX): the harness of the unit tests and benchmarks that need many ranks.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/engine.h"
#include "core/op_state.h"
#include "core/tensor_queue.h"
#include "transport/loopback/fabric.h"

namespace hvdc_test {

using hvdc::common::Status;

// Runs fn(rank) on n threads at once and joins them.
void on_ranks(int n, const std::function<void(int)>& fn);

class ThreadEngines {
 public:
  // Adjusts rank r's copy of the configuration (a device runtime of its own, say).
  using PerRankConfig = std::function<void(int rank, hvdc::core::EngineConfig* config)>;
  // Starts n engines, rank r on its own thread, all on one fabric; `config`'s transport
  // factory is replaced by the fabric's.
  static Status start(int n, hvdc::core::EngineConfig config, std::unique_ptr<ThreadEngines>* out,
                      const PerRankConfig& per_rank = nullptr);
  ~ThreadEngines();

  int size() const { return static_cast<int>(engines_.size()); }
  hvdc::core::Engine& engine(int rank) { return *engines_[rank]; }
  hvdc::transport::loopback::LoopbackFabric& fabric() { return *fabric_; }
  // Shuts every engine down at once (collective); the status of each rank.
  std::vector<Status> shutdown();

 private:
  std::shared_ptr<hvdc::transport::loopback::LoopbackFabric> fabric_;
  std::vector<std::unique_ptr<hvdc::core::Engine>> engines_;
};

// An entry for `request` over the given buffers, with a fresh completion state.
hvdc::core::TensorEntry make_entry(hvdc::core::Request request, const void* input, void* output);
// A request for a CPU tensor of `shape`.
hvdc::core::Request make_request(const std::string& name, hvdc::core::OpType type, int32_t dtype,
                                 std::vector<int64_t> shape);

// Enqueues `entry`; *state gets its completion state. The enqueue's status.
Status submit(hvdc::core::Engine& engine, hvdc::core::TensorEntry entry,
              std::shared_ptr<hvdc::core::OpState>* state);
// Waits for the op; HVD_ERR_TIMEOUT from the test itself (not the engine) after `limit`.
Status await(const std::shared_ptr<hvdc::core::OpState>& state,
             std::chrono::milliseconds limit = std::chrono::seconds(20));
// submit + await.
Status run(hvdc::core::Engine& engine, hvdc::core::TensorEntry entry,
           std::shared_ptr<hvdc::core::OpState>* state = nullptr);

}  // namespace hvdc_test
