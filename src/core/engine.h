// The engine: one per initialized process (tests may run several in one process). A background
// thread negotiates and executes submitted tensors; it sleeps when there is nothing to do.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/controller.h"
#include "core/response_cache.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "core/topology.h"
#include "ops/cpu/comm.h"
#include "transport/transport.h"

namespace hvdc::core {

struct EngineConfig {
  std::string hostname;  // empty: the system hostname
  int spin_micros = 50;
  size_t small_allreduce_bytes = 64 << 10;
  size_t segment_bytes = 256 << 10;
  size_t fusion_threshold = 2 << 20;
  size_t cache_capacity = 1024;
  bool deterministic = false;
  int stall_check_seconds = 60;      // 0 disables the stall inspector
  int stall_shutdown_seconds = 300;  // 0: stalled ops never fail
  std::string timeline_path;         // rank 0 records a timeline there from the start
  bool timeline_mark_cycles = false;
};

// Counters since init; read from any thread.
struct EngineStats {
  std::atomic<uint64_t> coordinator_requests{0};  // request lists this rank sent to rank 0
  std::atomic<uint64_t> rounds{0};                // rounds of agreement completed
  std::atomic<uint64_t> cache_hits{0};            // tensors agreed through the cache
  std::atomic<uint64_t> cache_misses{0};          // tensors sent to the coordinator
  std::atomic<uint64_t> cache_evictions{0};
  std::atomic<uint64_t> collectives{0};        // responses executed (a fused one counts once)
  std::atomic<uint64_t> tensors{0};            // tensors completed by them
  std::atomic<uint64_t> fused_collectives{0};  // collectives over more than one tensor
  std::atomic<uint64_t> fused_tensors{0};
  std::atomic<uint64_t> fused_bytes{0};
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
  const EngineStats& stats() const { return stats_; }
  int spin_micros() const { return config_.spin_micros; }

  // Any thread. Fails at once on a duplicate in-flight name or after termination.
  Status enqueue(TensorEntry entry);
  // All or none (a grouped submission).
  Status enqueue_group(std::vector<TensorEntry> entries);
  // "<op>.noname.<N>", N counting this engine's unnamed calls of that op.
  std::string auto_name(OpType type);
  // Starts (or switches) and stops the timeline; on ranks other than 0 they do nothing.
  Status timeline_start(const std::string& path);
  void timeline_stop();
  // Fails every pending op here and on every peer with HVD_ERR_ABORTED.
  void abort(const std::string& reason);
  // The first asynchronous error (ok if none).
  Status async_error() const;
  // Fails what is pending with HVD_ERR_SHUT_DOWN, stops the thread and disconnects. Collective.
  Status shutdown();

 private:
  Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config);
  Status connect();
  Status start_timeline_everywhere();
  void run();
  bool step();
  void idle_wait();

  // negotiation.cc
  bool report_local_requests();
  void send_uncached(std::vector<Request> requests);
  bool coordinate();
  // rounds.cc
  bool progress_rounds();
  void send_round_message();
  void complete_round();
  std::vector<Response> take_cache_hits(const std::vector<uint64_t>& hits);
  void cache_responses(const std::vector<Response>& responses);
  void revalidate_pending_hits();
  bool expose_stalled_hits();
  void demote_unjoinable_hits();
  // termination.cc
  bool poll_terminate();
  bool handle_abort_request();
  bool finish_peer_shutdown();
  void terminate(const Status& status, bool notify_peers);
  Status interrupt_check();
  // engine_timeline.cc
  bool tracing() const;
  void trace_cached_negotiation(const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                const std::vector<uint64_t>& hits);
  void trace_queued(const std::vector<Response>& responses);
  void trace_execute(const Response& response, bool begin);
  void trace_done(const Response& response, const std::vector<TensorEntry>& entries);
  std::function<void(const char*, bool)> trace_phase(const Response& response);
  // execute.cc
  bool execute_responses();
  void count_executed(const Response& response);
  Status execute(const Response& response, std::vector<TensorEntry>& entries);
  ops::cpu::Comm make_comm();
  Status run_allreduce(const Response& response, std::vector<TensorEntry>& entries);
  std::vector<ops::cpu::Piece> allreduce_pieces(const Response& response,
                                                std::vector<TensorEntry>& entries);
  // Output of `rows` rows shaped like the input's other dimensions (allgather, alltoall).
  Status allocate_rows(TensorEntry& entry, int64_t rows, char** out);
  Status run_allgather(const Response& response, TensorEntry& entry);
  Status run_broadcast(TensorEntry& entry);
  // execute_exchange.cc
  Status run_alltoall(TensorEntry& entry);
  Status run_reducescatter(const Response& response, TensorEntry& entry);

  EngineConfig config_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<Controller> controller_;  // rank 0 only
  Topology topology_;
  TensorQueue queue_;
  std::deque<Response> responses_;  // agreed, not yet executed (engine thread only)
  uint64_t op_seq_ = 0;
  std::vector<char> scratch_;
  std::vector<char> staging_;
  std::vector<char> reduce_work_;  // reducescatter's accumulation copy
  EngineStats stats_;

  // Rounds of agreement (engine thread only; rounds.cc).
  ResponseCache cache_;
  uint64_t round_ = 0;         // rounds completed
  bool in_round_ = false;      // this rank's message for round_ + 1 is out
  bool round_wanted_ = false;  // something new to announce
  std::map<uint64_t, std::vector<std::unique_ptr<RoundMessage>>> inbox_;
  struct PendingHit {
    uint32_t slot;
    std::chrono::steady_clock::time_point since;
  };
  std::map<std::string, PendingHit> pending_hits_;  // ready here, cached
  std::chrono::steady_clock::time_point next_stall_check_;
  std::vector<uint64_t> invalid_bits_;     // stale slots not yet announced
  std::vector<Response> coordinator_out_;  // rank 0: negotiated, not yet announced
  bool warned_eviction_ = false;
  uint64_t revalidated_generation_ = 0;        // cache generation pending hits were checked against
  bool self_joined_ = false;                   // hvd_join was called here and has not completed
  std::vector<std::vector<char>> join_zeros_;  // a joined rank's contributions
  std::unique_ptr<Timeline> timeline_;         // rank 0 only
  std::map<uint32_t, std::vector<bool>> traced_hits_;  // cached tensors in negotiation
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_requested_{false};
  std::atomic<uint64_t> auto_name_counters_[kMaxOpType + 1] = {};
  Status terminated_;            // engine thread only: non-ok once aborted or shut down
  bool peer_shut_down_ = false;  // a peer's shutdown notice arrived (engine thread only)
  int64_t peer_shutdown_ops_ = 0;
  Status peer_shutdown_status_;

  mutable std::mutex mutex_;  // guards the fields below
  std::string abort_reason_;
  Status async_error_;
  bool shut_down_ = false;
};

}  // namespace hvdc::core
