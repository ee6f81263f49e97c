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
#include "core/engine_stats.h"
#include "core/execution/stage.h"
#include "core/faults/hang_reports.h"
#include "core/faults/stall_agreement.h"
#include "core/faults/termination.h"
#include "core/lane/lane.h"
#include "core/negotiation/negotiation.h"
#include "core/process_set_table.h"
#include "core/response_cache.h"
#include "core/set_state.h"
#include "core/sets/member_sets.h"
#include "core/tensor_queue.h"
#include "core/topology.h"
#include "core/tracing/tracer.h"
#include "ops/backends.h"
#include "transport/factory.h"
#include "transport/transport.h"

namespace hvdc::core {

struct EngineConfig {
  std::string hostname;  // empty: the system hostname
  int spin_micros = 50;
  size_t small_allreduce_bytes = 64 << 10;
  size_t segment_bytes = 256 << 10;
  size_t tcp_segment_bytes = 56 << 10;  // HVDC_TCP_SEGMENT_BYTES
  size_t round_input_bytes = 4 << 10;   // HVDC_ROUND_INPUT_BYTES
  size_t local_min_bytes = 16 << 10;    // HVDC_LOCAL_MIN_BYTES
  size_t local_stage_bytes = 16 << 20;  // HVDC_LOCAL_STAGE_BYTES
  bool peer_reads = true;               // HVDC_PEER_READS
  bool lane = true;                     // HVDC_LANE (lane/lane.h)
  bool hierarchical = true;             // HVDC_HIERARCHICAL_ALLREDUCE
  size_t fusion_threshold = 2 << 20;
  size_t cache_capacity = 1024;
  bool deterministic = false;
  int stall_check_seconds = 60;      // 0 disables the stall inspector
  int stall_shutdown_seconds = 300;  // 0: stalled ops never fail
  std::string timeline_path;         // rank 0 records a timeline there from the start
  bool timeline_mark_cycles = false;
  std::string process_sets;  // static sets, "0,2;1,3" (HVDC_PROCESS_SETS)
  int timeout_seconds = 60;  // no progress this long in a round or a collective fails; 0: never
  int round_tree_min_ranks = kDefaultRoundTreeMinRanks;  // rounds by tree from this many ranks
  // Connects the ranks; empty: UCX (production). Tests inject the in-process loopback.
  transport::TransportFactory transport_factory;
  // Gives the CUDA runtime for CUDA tensors; empty: the CUDA plugin's loader
  // (device::cuda_runtime). Tests inject a host-memory runtime.
  ops::DeviceRuntimeProvider device_runtime;
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
  const ProcessSetTable& process_sets() const { return sets_->table(); }
  const EngineStats& stats() const { return stats_; }
  int spin_micros() const { return config_.spin_micros; }

  // Any thread. Fails at once on a duplicate in-flight name or after termination.
  Status enqueue(TensorEntry&& entry);
  // All or none (a grouped submission).
  Status enqueue_group(std::vector<TensorEntry> entries);
  // "<op>.noname.<N>", N counting this engine's unnamed calls of that op in that process set
  // (members of a set then agree on the names whatever other sets they call).
  std::string auto_name(OpType type, int32_t process_set = 0);
  // The timeline (written on rank 0 only): start() and stop() from any thread.
  Tracer& tracer() { return tracer_; }
  // hvd_wait's fast path (caller_drive.cc): while `op` is pending, runs the engine's passes on
  // the calling thread, so that an op needs no hand-off to the engine thread and back. Returns
  // once op is done, after spin_micros without progress, or at once where callers may not drive
  // (an op that runs the user's code or uses a device was submitted here: those run on the
  // engine thread); the caller then waits for the engine thread as before. True if it drove
  // (and so spun already).
  bool drive(const OpState& op);
  // A thread is about to wait for an op without driving it, or polls one: the engine thread
  // stops standing aside (caller_drive.cc), if it does. Async-signal-safe.
  void nudge() noexcept;
  // Fails every pending op here and on every peer with HVD_ERR_ABORTED.
  void abort(const std::string& reason);
  // The first asynchronous error (ok if none).
  Status async_error() const;
  // Asks the engine thread to log a report of every op in flight here (and, where this rank
  // coordinates a set, which ranks its waiting tensors lack). Only atomics, a write to an
  // eventfd and a futex wake-up, so a signal handler may call it.
  void request_dump() noexcept;
  // Requests a report and waits up to timeout_ms for it; *text gets it (it is logged too).
  Status dump_pending(int timeout_ms, std::string* text);
  // Fails what is pending with HVD_ERR_SHUT_DOWN, stops the thread and disconnects. Collective.
  Status shutdown();

 private:
  Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config);
  Status connect();
  void start_collaborators();
  void run();
  // One pass over everything that can make progress at `now`; true if anything did.
  bool step(std::chrono::steady_clock::time_point now);
  // caller_drive.cc: drive()'s passes; *last_pass: when the last began; *work_left: it left
  // work besides `op`.
  bool drive_passes(const OpState& op, std::chrono::steady_clock::time_point* last_pass,
                    bool* work_left);
  // One pass on the calling thread if pass_mutex_ is free; false once callers may no longer
  // drive. Once `op` is done, *work_left: responses wait, ops run or are posted, or a round is
  // under way.
  bool try_drive_pass(std::chrono::steady_clock::time_point now, const OpState& op, bool* busy,
                      bool* work_left);
  // Before a push: an op that must complete on the engine thread ends caller driving for good.
  void note_engine_thread_only(const TensorEntry& entry);
  // The engine thread's turn while callers drive: it sleeps until woken, or a short while.
  void stand_aside();
  // Ends the engine thread's stand_aside() sleep, if it sleeps. Async-signal-safe.
  void wake_from_aside() noexcept;
  const uint32_t* aside_word() const;  // aside_asleep_, as the futex sees it
  // After a push at `now`: wakes the engine thread from stand_aside() unless a caller drove
  // just now.
  void submitted_after_drive(std::chrono::steady_clock::time_point now);
  void watch_pending(std::chrono::steady_clock::time_point now);
  // The text of a hang report (faults/pending_report.h).
  std::string describe_pending();

  EngineConfig config_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Transport> transport_;
  Topology topology_;
  // Segment size of a host ring across hosts where they talk over TCP alone; 0: no such limit.
  size_t cross_host_segment_bytes_ = 0;
  // The job's process sets, and those this rank belongs to (sets/); made once connected.
  std::unique_ptr<MemberSets> sets_;
  TensorQueue queue_;
  std::deque<Response> responses_;  // agreed, not yet executed (passes only: pass_mutex_)
  EngineStats stats_;

  // Agreement on what to execute (negotiation/); made once connected.
  std::unique_ptr<Negotiation> negotiation_;
  Tracer tracer_;  // the timeline, on rank 0
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex auto_name_mutex_;
  std::map<std::pair<int32_t, OpType>, uint64_t> auto_name_counters_;
  // Whom a timed-out collective waited for in the end (with a transport only).
  std::unique_ptr<StallAgreement> stalls_;
  // Ends the work on abort, a peer's notice or failure, a failed transfer (faults/); made once
  // connected.
  std::unique_ptr<Termination> termination_;
  // Runs what was agreed (execution/); made once connected.
  std::unique_ptr<ExecutionStage> stage_;
  // Agrees on lone cached host allreduces of one host's sets without a round; made once
  // connected.
  std::unique_ptr<Lane> lane_;

  // Hang reports (faults/hang_reports.h).
  HangReports hang_reports_;
  std::chrono::steady_clock::time_point next_pending_check_;  // watch_pending's next turn
  std::chrono::steady_clock::time_point next_seldom_poll_;    // step()'s (kSeldomMessagesPoll)
  // The time step() was given, for what it posts on the lane: no clock read of its own.
  std::chrono::steady_clock::time_point pass_started_;
  bool polled_seldom_ = false;  // the last pass looked for the seldom kinds of message

  // Whoever runs a pass holds pass_mutex_: the engine thread, or an API thread in drive(). The
  // transport, negotiation and execution are used by one thread at a time, as they require.
  std::mutex pass_mutex_;
  std::atomic<int> drivers_{0};            // API threads in drive(): the engine thread stands aside
  std::atomic<int> driving_passes_{0};     // callers' passes in progress
  std::atomic<uint32_t> aside_asleep_{0};  // futex word: 1 while the engine thread stands aside
  std::atomic<int64_t> last_drive_end_{0};       // steady_clock ticks when a drive last ended
  std::atomic<bool> engine_thread_only_{false};  // such an op was submitted: no more driving
  // The engine thread, and a driver during its pass: a submission from there (a completion
  // callback's) must not wait for the callers' passes to end, as it may be in one.
  inline static thread_local bool t_runs_passes_ = false;

  std::mutex shutdown_mutex_;  // guards shut_down_
  bool shut_down_ = false;
};

}  // namespace hvdc::core
