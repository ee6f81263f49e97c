// The engine: one per initialized process (tests may run several in one process). A background
// thread negotiates and executes submitted tensors; it sleeps when there is nothing to do.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/controller.h"
#include "core/tensor_queue.h"
#include "core/topology.h"
#include "ops/cpu/comm.h"
#include "transport/transport.h"

namespace hvdc::core {

struct EngineConfig {
  std::string hostname;  // empty: the system hostname
  int spin_micros = 50;
  size_t small_allreduce_bytes = 64 << 10;
  size_t segment_bytes = 256 << 10;
};

class Engine {
 public:
  // Connects every rank and starts the engine thread. Collective over the bootstrap's ranks.
  static Status start(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config,
                      std::unique_ptr<Engine>* out);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Topology& topology() const { return topology_; }
  int spin_micros() const { return config_.spin_micros; }

  // Any thread. Fails at once on a duplicate in-flight name or after termination.
  Status enqueue(TensorEntry entry);
  // "<op>.noname.<N>", N counting this engine's unnamed calls of that op.
  std::string auto_name(OpType type);
  // Fails every pending op here and on every peer with HVD_ERR_ABORTED.
  void abort(const std::string& reason);
  // The first asynchronous error (ok if none).
  Status async_error() const;
  // Fails what is pending with HVD_ERR_SHUT_DOWN, stops the thread and disconnects. Collective.
  Status shutdown();

 private:
  Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config);
  Status connect();
  void run();
  bool step();
  void idle_wait();

  // negotiation.cc
  bool report_local_requests();
  bool coordinate();
  bool receive_responses();
  // termination.cc
  bool poll_terminate();
  bool handle_abort_request();
  void terminate(const Status& status, bool notify_peers);
  Status interrupt_check();
  // execute.cc
  bool execute_responses();
  Status execute_one(const Response& response, TensorEntry& entry);
  ops::cpu::Comm make_comm();
  Status run_allreduce(TensorEntry& entry);
  Status run_allgather(const Response& response, TensorEntry& entry);
  Status run_broadcast(TensorEntry& entry);

  EngineConfig config_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<Controller> controller_;  // rank 0 only
  Topology topology_;
  TensorQueue queue_;
  std::deque<Response> responses_;  // received, not yet executed (engine thread only)
  uint64_t op_seq_ = 0;
  std::vector<char> scratch_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_requested_{false};
  std::atomic<uint64_t> auto_name_counters_[4] = {};
  Status terminated_;  // engine thread only: non-ok once aborted or shut down

  mutable std::mutex mutex_;  // guards the fields below
  std::string abort_reason_;
  Status async_error_;
  bool shut_down_ = false;
};

}  // namespace hvdc::core
