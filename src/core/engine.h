// The engine: one per initialized process (tests may run several in one process). A background
// thread negotiates and executes submitted tensors; it sleeps when there is nothing to do.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
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
#include "core/process_set_table.h"
#include "core/response_cache.h"
#include "core/set_state.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "core/topology.h"
#include "ops/cpu/comm.h"
#include "transport/factory.h"
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
  std::string process_sets;  // static sets, "0,2;1,3" (HVDC_PROCESS_SETS)
  int timeout_seconds = 60;  // no progress this long in a round or a collective fails; 0: never
  // Connects the ranks; empty: UCX (production). Tests inject the in-process loopback.
  transport::TransportFactory transport_factory;
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
  // Which process sets exist; any thread.
  const ProcessSetTable& process_sets() const { return *process_sets_; }
  const EngineStats& stats() const { return stats_; }
  int spin_micros() const { return config_.spin_micros; }

  // Any thread. Fails at once on a duplicate in-flight name or after termination.
  Status enqueue(TensorEntry entry);
  // All or none (a grouped submission).
  Status enqueue_group(std::vector<TensorEntry> entries);
  // "<op>.noname.<N>", N counting this engine's unnamed calls of that op in that process set
  // (members of a set then agree on the names whatever other sets they call).
  std::string auto_name(OpType type, int32_t process_set = 0);
  // Starts (or switches) and stops the timeline; on ranks other than 0 they do nothing.
  Status timeline_start(const std::string& path);
  void timeline_stop();
  // Fails every pending op here and on every peer with HVD_ERR_ABORTED.
  void abort(const std::string& reason);
  // The first asynchronous error (ok if none).
  Status async_error() const;
  // Asks the engine thread to log a report of every op in flight here (and, where this rank
  // coordinates a set, which ranks its waiting tensors lack). Only an atomic store and a write
  // to an eventfd, so a signal handler may call it.
  void request_dump() noexcept;
  // Requests a report and waits up to timeout_ms for it; *text gets it (it is logged too).
  Status dump_pending(int timeout_ms, std::string* text);
  // Fails what is pending with HVD_ERR_SHUT_DOWN, stops the thread and disconnects. Collective.
  Status shutdown();

 private:
  Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config);
  Status connect();
  Status start_timeline_everywhere();
  // process_sets.cc
  Status add_static_process_sets();
  void add_set_state(const ProcessSetInfo& info);
  SetState* member_set(int32_t id);
  Status create_process_set(const Response& response, std::vector<TensorEntry>& entries);
  Status destroy_process_set(const Response& response);
  void run();
  bool step();
  void idle_wait();
  void watch_pending();

  // negotiation.cc
  bool report_local_requests();
  void report_request(Request request, std::map<SetState*, std::vector<Request>>* uncached);
  void send_uncached(SetState& set, std::vector<Request> requests);
  bool coordinate();
  void add_remote_requests(int from, RequestList list);
  bool take_coordinated(SetState& set);
  // rounds.cc
  bool progress_rounds();
  void send_round_message();
  CacheBits announce_cache_bits(SetState& set);
  void complete_round();
  bool round_timed_out(const std::vector<std::unique_ptr<RoundMessage>>& messages);
  void probe_liveness(std::chrono::steady_clock::time_point now,
                      std::chrono::steady_clock::duration oldest_age);
  std::vector<Response> agree_cached(SetState& set,
                                     const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                     const std::vector<Response>& negotiated);
  std::vector<Response> take_cache_hits(SetState& set, const std::vector<uint64_t>& hits);
  void cache_responses(SetState& set, const std::vector<Response>& responses);
  void revalidate_pending_hits(SetState& set);
  bool expose_stalled_hits();
  void demote_unjoinable_hits(SetState& set);
  // termination.cc
  bool poll_terminate();
  bool handle_abort_request();
  bool check_peer_connections();
  bool finish_peer_shutdown();
  void note_peer_completed_ops(const std::vector<int64_t>& pairs);
  void terminate(const Status& status, bool notify_peers);
  Status interrupt_check();
  // stall_agreement.cc
  bool poll_stall_reports();
  Status agree_on_stall(const Status& timeout);
  std::chrono::steady_clock::duration stall_grace() const;
  void send_stall_report(const std::vector<int>& waiting_for);
  bool collect_stall_reports();
  std::string stall_cause(const std::vector<int>& mine,
                          const std::map<int, std::vector<int>>& reports) const;
  // forensics.cc
  bool poll_dump_request();
  void check_local_stall(std::chrono::steady_clock::time_point now,
                         std::chrono::steady_clock::duration oldest_age);
  std::string describe_pending();
  void write_dump(const std::string& why);
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
  void execute_one(Response response);
  void count_executed(const Response& response);
  Status execute(const Response& response, std::vector<TensorEntry>& entries);
  Status run_collective(const Response& response, std::vector<TensorEntry>& entries);
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
  Topology topology_;
  std::unique_ptr<ProcessSetTable> process_sets_;
  // The sets this rank belongs to, by id (engine thread only). Set 0 is always there.
  std::map<int32_t, std::unique_ptr<SetState>> sets_;
  SetState* executing_ = nullptr;                 // the set of the collective running now
  const Response* executing_response_ = nullptr;  // and the collective
  TensorQueue queue_;
  std::deque<Response> responses_;  // agreed, not yet executed (engine thread only)
  // Requests for sets not created here yet, by set id and sender (engine thread only).
  std::map<int32_t, std::map<int, RequestList>> early_requests_;
  std::vector<char> scratch_;
  std::vector<char> staging_;
  std::vector<char> reduce_work_;  // reducescatter's accumulation copy
  EngineStats stats_;

  // Rounds of agreement (engine thread only; rounds.cc).
  uint64_t round_ = 0;         // rounds completed
  bool in_round_ = false;      // this rank's message for round_ + 1 is out
  bool round_wanted_ = false;  // something new to announce
  std::chrono::steady_clock::time_point round_started_;  // when this rank's message went out
  std::chrono::steady_clock::time_point last_round_done_;
  std::map<uint64_t, std::vector<std::unique_ptr<RoundMessage>>> inbox_;
  std::chrono::steady_clock::time_point next_stall_check_;
  bool warned_eviction_ = false;
  bool self_joined_ = false;                   // hvd_join was called here and has not completed
  std::vector<std::vector<char>> join_zeros_;  // a joined rank's contributions
  std::unique_ptr<Timeline> timeline_;         // rank 0 only
  std::map<uint32_t, std::vector<bool>> traced_hits_;  // cached tensors in negotiation
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_requested_{false};
  std::mutex auto_name_mutex_;
  std::map<std::pair<int32_t, OpType>, uint64_t> auto_name_counters_;
  Status terminated_;            // engine thread only: non-ok once aborted or shut down
  bool peer_shut_down_ = false;  // a peer's shutdown notice arrived (engine thread only)
  // Per set shared with peers that shut down: the fewest collectives one of them completed.
  std::map<int32_t, int64_t> peer_shutdown_ops_;
  Status peer_shutdown_status_;
  // Stall agreement (stall_agreement.cc): the peers' stall reports, and whether this rank
  // answered one with whom it waits for.
  std::map<int, std::vector<int>> stall_reports_;
  bool stall_answered_ = false;

  // Hang reports (forensics.cc).
  std::atomic<bool> dump_requested_{false};
  std::chrono::steady_clock::time_point next_pending_check_;  // watch_pending's next turn
  std::chrono::steady_clock::time_point local_stall_quiet_until_;
  std::mutex dump_mutex_;
  std::condition_variable dump_cv_;
  uint64_t dump_generation_ = 0;  // guarded by dump_mutex_, like last_dump_
  std::string last_dump_;

  mutable std::mutex mutex_;  // guards the fields below
  std::string abort_reason_;
  Status async_error_;
  bool shut_down_ = false;
};

}  // namespace hvdc::core
