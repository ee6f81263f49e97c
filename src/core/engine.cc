#include "core/engine.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <sstream>
#include <utility>

#include "common/log.h"
#include "core/faults/pending_report.h"
#include "device/plugin_loader.h"
#include "ops/backends.h"
#include "transport/ucx/ucx_transport.h"

namespace hvdc::core {

using common::make_error;

namespace {

std::string system_hostname() {
  char name[HOST_NAME_MAX + 1] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// Settings that decide which messages a collective exchanges: a rank with another value would
// wait for messages its peers never send (rounds by tree or all-to-all, which algorithm, how the
// ring cuts segments). Init fails on every rank, naming the first difference.
Status agree_on_settings(bootstrap::Bootstrap& bootstrap, const EngineConfig& config) {
  const std::vector<std::pair<const char*, int64_t>> mine = {
      {"HVDC_ROUND_TREE_MIN_RANKS", config.round_tree_min_ranks},
      {"HVDC_SMALL_ALLREDUCE_BYTES", static_cast<int64_t>(config.small_allreduce_bytes)},
      {"HVDC_SEGMENT_BYTES", static_cast<int64_t>(config.segment_bytes)},
      {"HVDC_TCP_SEGMENT_BYTES", static_cast<int64_t>(config.tcp_segment_bytes)},
      {"HVDC_LOCAL_MIN_BYTES", static_cast<int64_t>(config.local_min_bytes)},
      {"HVDC_DETERMINISTIC", config.deterministic ? 1 : 0},
      {"HVDC_LANE", config.lane ? 1 : 0},
      {"HVDC_HIERARCHICAL_ALLREDUCE", config.hierarchical ? 1 : 0},
  };
  std::string text;
  for (const auto& [name, value] : mine) text += std::to_string(value) + " ";
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(bootstrap, text, &all));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    std::istringstream first(all[0]), other(all[r]);
    for (const auto& [name, value] : mine) {
      std::string a, b;
      first >> a;
      other >> b;
      if (a == b) continue;
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "%s differs across ranks: rank 0 has %s, rank %zu has %s; set it to the "
                        "same value on every rank",
                        name, a.c_str(), r, b.c_str());
    }
  }
  return Status::ok();
}

// Whether some rank reaches a rank on another host over TCP alone (its transport found so when
// connecting). The same answer on every rank: members must cut a ring's messages alike.
Status agree_on_tcp_between_hosts(bootstrap::Bootstrap& bootstrap,
                                  const transport::Transport& transport, const Topology& topology,
                                  bool* tcp) {
  bool mine = false;
  for (int p = 0; p < topology.size; ++p) {
    mine = mine || (!topology.same_host[p] && transport.reaches_over_tcp_only(p));
  }
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(bootstrap, mine ? "1" : "0", &all));
  *tcp = std::find(all.begin(), all.end(), "1") != all.end();
  return Status::ok();
}

// How long hvd_shutdown waits for the other ranks after the engine's work ended in a fault.
constexpr double kFaultedShutdownSeconds = 5;

std::map<int32_t, std::unique_ptr<ops::Backend>> backends_for(const EngineConfig& config,
                                                              size_t cross_host_segment_bytes) {
  ops::BackendOptions options;
  options.small_allreduce_bytes = config.small_allreduce_bytes;
  options.segment_bytes = config.segment_bytes;
  options.cross_host_segment_bytes = cross_host_segment_bytes;
  options.deterministic = config.deterministic;
  options.local_min_bytes = config.local_min_bytes;
  options.lane = config.lane;
  options.peer_reads = config.peer_reads;
  options.hierarchical = config.hierarchical;
  options.local_stage_bytes = config.local_stage_bytes;
  // CUDA tensors: the plugin's runtime, loaded on the first one (tests inject their own).
  ops::DeviceRuntimeProvider device_runtime = config.device_runtime;
  if (!device_runtime)
    device_runtime = [](device::Runtime** out) { return device::cuda_runtime(out); };
  return ops::make_backends(options, std::move(device_runtime));
}

// Rank 0 opens HVDC_TIMELINE; if it cannot, init fails on every rank (not only there, where the
// others would wait for it forever).
Status start_timeline_everywhere(Tracer& tracer, const std::string& path,
                                 bootstrap::Bootstrap& bootstrap) {
  if (path.empty()) return Status::ok();
  std::string failure;
  Status st = tracer.start(path);  // ok at once on ranks other than 0
  if (!st.is_ok()) failure = st.message();
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(bootstrap, failure, &all));
  if (all[0].empty()) return Status::ok();
  return make_error(HVD_ERR_SYSTEM, "HVDC_TIMELINE: rank 0 %s", all[0].c_str());
}

// Sleeps until the engine is woken or the transport has work (transport: null on one rank).
void idle_wait(transport::Transport* transport, int wake_fd) {
  // Bounded so that a missed wake-up costs latency, never a hang.
  constexpr int kMaxSleepMs = 100;
  if (transport) {
    transport->sleep(wake_fd, kMaxSleepMs);
  } else {
    struct pollfd fd = {wake_fd, POLLIN, 0};
    ::poll(&fd, 1, kMaxSleepMs);
  }
}

}  // namespace

Engine::Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config)
    : config_(config),
      bootstrap_(std::move(bootstrap)),
      tracer_(config.timeline_mark_cycles),
      hang_reports_(config.stall_check_seconds, [this] {
        queue_.wake();
        wake_from_aside();
      }) {}

Status Engine::start(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config,
                     std::unique_ptr<Engine>* out) {
  std::unique_ptr<Engine> engine(new Engine(std::move(bootstrap), config));
  Status st = engine->connect();
  if (!st.is_ok()) {
    engine->transport_.reset();
    (void)engine->bootstrap_->finalize();  // leave no MPI initialized behind a failed init
    return st;
  }
  engine->start_collaborators();
  engine->thread_ = std::thread(&Engine::run, engine.get());
  *out = std::move(engine);
  return Status::ok();
}

Status Engine::connect() {
  const int rank = bootstrap_->rank();
  const int size = bootstrap_->size();
  if (size > transport::kMaxRanks) {
    return make_error(HVD_ERR_UNSUPPORTED, "%d ranks exceed the limit of %d", size,
                      transport::kMaxRanks);
  }
  std::string host = config_.hostname.empty() ? system_hostname() : config_.hostname;
  std::vector<std::string> hosts;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(*bootstrap_, host, &hosts));
  topology_ = compute_topology(rank, hosts);
  HVDC_RETURN_IF_ERROR(agree_on_settings(*bootstrap_, config_));
  MemberSetsConfig sets;
  sets.cache_capacity = config_.cache_capacity;
  sets.stall_check_seconds = config_.stall_check_seconds;
  sets.stall_shutdown_seconds = config_.stall_shutdown_seconds;
  sets_ = std::make_unique<MemberSets>(size, rank, sets);
  if (rank == 0) sets_->member(0)->controller->set_timeline(tracer_.open_timeline());
  HVDC_RETURN_IF_ERROR(start_timeline_everywhere(tracer_, config_.timeline_path, *bootstrap_));
  HVDC_RETURN_IF_ERROR(sets_->add_static(config_.process_sets, *bootstrap_));
  if (size == 1) return Status::ok();  // a single rank needs no transport
  transport::TransportOptions options;
  options.rank = rank;
  options.size = size;
  options.spin_micros = config_.spin_micros;
  options.progress_timeout_seconds = config_.timeout_seconds;
  auto exchange = [this](const std::string& mine, std::vector<std::string>* all) {
    return bootstrap::allgather_strings(*bootstrap_, mine, all);
  };
  const transport::TransportFactory& create =
      config_.transport_factory ? config_.transport_factory : transport::create_ucx_transport;
  HVDC_RETURN_IF_ERROR(create(options, exchange, &transport_)
                           .with_context(common::strfmt("connecting rank %d of %d", rank, size)));
  bool tcp = false;
  // Every rank knows the hosts and the agreed settings alike: all skip the agreement, or none.
  if (topology_.local_size < size && config_.tcp_segment_bytes != 0) {
    HVDC_RETURN_IF_ERROR(agree_on_tcp_between_hosts(*bootstrap_, *transport_, topology_, &tcp));
  }
  if (tcp) {
    // One send of a large message over TCP runs at half the rate of the same bytes sent in
    // pieces; a piece and its headers must fit one TCP packet of the kernel's 64 KiB limit
    // (docs/engine.md, "Between hosts over TCP: smaller pieces").
    cross_host_segment_bytes_ = config_.tcp_segment_bytes;
    if (rank == 0) {
      HVDC_LOG_INFO(
          "ranks on other hosts are reached over TCP alone: the ring sends them "
          "pieces of %zu bytes (HVDC_TCP_SEGMENT_BYTES)",
          cross_host_segment_bytes_);
    }
  }
  return bootstrap_->barrier();
}

// The parts that need the transport (when there is one).
void Engine::start_collaborators() {
  if (transport_) {
    stalls_ = std::make_unique<StallAgreement>(transport_.get(), config_.timeout_seconds);
  }
  TerminationContext termination;
  termination.rank = topology_.rank;
  termination.transport = transport_.get();
  termination.sets = sets_.get();
  termination.queue = &queue_;
  termination.agreed = &responses_;
  termination.stalls = stalls_.get();
  termination.on_terminated = [this](const Status& cause) {
    if (stage_) stage_->abort(cause);
  };
  termination_ = std::make_unique<Termination>(std::move(termination));
  auto fail = [this](const Status& status) { termination_->terminate(status, true); };
  NegotiationConfig negotiation;
  negotiation.rank = topology_.rank;
  negotiation.size = topology_.size;
  negotiation.timeout_seconds = config_.timeout_seconds;
  negotiation.stall_check_seconds = config_.stall_check_seconds;
  negotiation.fusion_threshold = config_.fusion_threshold;
  negotiation.round_tree_min_ranks = config_.round_tree_min_ranks;
  negotiation.round_input_bytes = config_.round_input_bytes;
  NegotiationContext context;
  context.transport = transport_.get();
  context.sets = &sets_->members();
  context.table = &sets_->table();
  context.queue = &queue_;
  context.stats = &stats_;
  context.tracer = &tracer_;
  context.fail = fail;
  context.terminated = &termination_->status();
  context.lane_offer = [this](SetState& set, const Request& request, uint32_t slot,
                              const OpBuffers& buffers) {
    return lane_->offer(set, request, slot, buffers, responses_, pass_started_);
  };
  negotiation_ = std::make_unique<Negotiation>(negotiation, std::move(context));
  StageContext stage;
  stage.transport = transport_.get();
  stage.sets = sets_.get();
  stage.queue = &queue_;
  stage.stats = &stats_;
  stage.tracer = &tracer_;
  stage.negotiation = negotiation_.get();
  stage.stalls = stalls_.get();
  stage.fail = fail;
  stage.interrupt = [this] {
    // A hang report is most wanted while a collective waits.
    hang_reports_.poll([this] { return describe_pending(); });
    return termination_->interrupt(stage_ ? stage_->starting() : nullptr);
  };
  stage.peer_shutdown_reached = [this] { return termination_->finish_peer_shutdown(); };
  stage.terminated = &termination_->status();
  stage.same_host = &topology_.same_host;
  stage.host_of = &topology_.host_of;
  stage_ = std::make_unique<ExecutionStage>(backends_for(config_, cross_host_segment_bytes_),
                                            std::move(stage));
  LaneContext lane;
  lane.transport = transport_.get();
  lane.rank = topology_.rank;
  lane.queue = &queue_;
  lane.stats = &stats_;
  lane.stage = stage_.get();
  lane.tracer = &tracer_;
  lane.report = [this](Request request) { negotiation_->report(std::move(request)); };
  lane.spare_response = [this] { return negotiation_->spare_response(); };
  lane.joined = [this] { return negotiation_->joined(); };
  lane.round_open = [this] { return negotiation_->round_open(); };
  lane.round_under_way = [this] { return negotiation_->round_under_way(); };
  lane.enabled = config_.lane;  // a set refusing peer reads never opens its boards
  lane_ = std::make_unique<Lane>(std::move(lane));
}

Engine::~Engine() {
  if (thread_.joinable()) shutdown();
}

Status Engine::enqueue(TensorEntry&& entry) {
  note_engine_thread_only(entry);
  const auto now = std::chrono::steady_clock::now();  // one reading for both
  HVDC_RETURN_IF_ERROR(queue_.push(std::move(entry), now));
  submitted_after_drive(now);
  return Status::ok();
}

Status Engine::enqueue_group(std::vector<TensorEntry> entries) {
  for (const TensorEntry& entry : entries) note_engine_thread_only(entry);
  const auto now = std::chrono::steady_clock::now();
  HVDC_RETURN_IF_ERROR(queue_.push_group(std::move(entries), now));
  submitted_after_drive(now);
  return Status::ok();
}

std::string Engine::auto_name(OpType type, int32_t process_set) {
  uint64_t n = 0;
  {
    std::lock_guard<std::mutex> lock(auto_name_mutex_);
    n = auto_name_counters_[{process_set, type}]++;
  }
  return common::strfmt("%s.noname.%llu", op_label(type).c_str(),
                        static_cast<unsigned long long>(n));
}

void Engine::abort(const std::string& reason) {
  termination_->request_abort(reason);
  queue_.wake();
  wake_from_aside();
}

Status Engine::async_error() const {
  return termination_->async_error();
}

void Engine::run() {
  common::set_thread_log_rank(topology_.rank);
  pthread_setname_np(pthread_self(), "hvdc-engine");  // as top -H and gdb show it
  t_runs_passes_ = true;
  const auto spin = std::chrono::microseconds(config_.spin_micros);
  auto last_busy = std::chrono::steady_clock::now();
  bool busy = true;
  // One clock read per pass: the loop runs every few microseconds while it spins.
  while (!stop_.load(std::memory_order_acquire)) {
    const auto now = std::chrono::steady_clock::now();
    if (drivers_.load() > 0) {
      // A caller in hvd_wait runs the passes (drive()); after it, the spin starts afresh.
      stand_aside();
      last_busy = now;
      continue;
    }
    if (busy) last_busy = now;  // the spin counts from the end of the last busy pass
    bool may_sleep = false;
    {
      std::lock_guard<std::mutex> pass(pass_mutex_);
      busy = step(now);
      // Not before a pass that looked for every kind of message: the next one does.
      const bool idle_past_spin = !busy && now - last_busy > spin;
      // With an op posted on the lane, asleep only flagged on the board (lane.h).
      if (idle_past_spin && lane_->holds()) busy = lane_->before_sleep(&responses_, now);
      may_sleep = idle_past_spin && polled_seldom_ && !busy;
      if (idle_past_spin && !polled_seldom_) next_seldom_poll_ = now;
    }
    if (busy) continue;
    if (may_sleep) {
      std::lock_guard<std::mutex> pass(pass_mutex_);  // arming the transport uses it too
      if (queue_.begin_sleep()) idle_wait(transport_.get(), queue_.wake_fd());
      queue_.end_sleep();
      lane_->after_sleep();
    } else {
      sched_yield();  // let a thread that has work (the app, a peer's engine) have the core
    }
  }
  std::lock_guard<std::mutex> pass(pass_mutex_);  // the rest is the engine thread's alone
  if (termination_->status().is_ok()) {
    termination_->terminate(
        make_error(HVD_ERR_SHUT_DOWN, "hvd_shutdown was called on rank %d", topology_.rank), true);
  }
  lane_->abandon();
  // Collectives still in flight use their callers' buffers until their backend finishes them.
  while (!stage_->idle()) {
    if (transport_) transport_->progress();
    if (!stage_->finish_executed()) sched_yield();
  }
  if (transport_) transport_->progress();  // push the shutdown notices out
}

// Notices, stall reports and request lists come seldom, and every probe for one costs a search
// of the transport's queue: they are looked for on a pass whose progress had events, and at
// least this often (for those that arrived while a collective waited). Round messages, which
// every op waits for, are looked for on every pass.
constexpr auto kSeldomMessagesPoll = std::chrono::microseconds(20);

bool Engine::step(std::chrono::steady_clock::time_point now) {
  pass_started_ = now;
  bool busy = false;
  const int events = transport_ ? transport_->progress() : 0;
  busy |= events > 0;
  const bool seldom = events > 0 || now >= next_seldom_poll_;
  if (seldom) next_seldom_poll_ = now + kSeldomMessagesPoll;
  polled_seldom_ = seldom;
  busy |= hang_reports_.poll([this] { return describe_pending(); });
  watch_pending(now);
  // Notices, stall reports, failed peers, abort, peer shutdown; wake-ups from the lane.
  if (seldom) busy |= termination_->poll();
  if (seldom) busy |= lane_->take_wakes();
  busy |= stage_->finish_executed();  // also after termination: their buffers are in use until then
  if (!termination_->status().is_ok()) {
    lane_->abandon();
    return busy;
  }
  busy |= negotiation_->report_local_requests();
  busy |= lane_->progress(&responses_);
  // A round under way takes the op posted here (voided), rather than a round after it. As the
  // last pass's look at the transport found it: no poll of its own on every pass of the wait.
  if (lane_->holds() && negotiation_->round_under_way()) busy |= lane_->settle(&responses_);
  if (seldom) busy |= negotiation_->coordinate(now);
  busy |= negotiation_->expose_stalled_hits(now);
  busy |= negotiation_->progress_rounds(&responses_, now);
  // A response agreed in a round runs after the op posted on the lane, or without it (lane.h).
  if (!responses_.empty() && lane_->holds()) busy |= lane_->settle(&responses_);
  busy |= stage_->execute(&responses_);
  return busy;
}

// Once a second, the age of the oldest op in flight decides whether this rank logs a hang
// report (faults/hang_reports.h) and whether it probes its peers with a round (negotiation/).
void Engine::watch_pending(std::chrono::steady_clock::time_point now) {
  if (now < next_pending_check_) return;
  next_pending_check_ = now + std::chrono::seconds(1);
  std::chrono::steady_clock::time_point oldest;
  if (!queue_.oldest_submitted(&oldest)) return;
  hang_reports_.check_stall(now, now - oldest, [this] { return describe_pending(); });
  negotiation_->probe_liveness(now, now - oldest);
}

void Engine::request_dump() noexcept {
  hang_reports_.request();
}

Status Engine::dump_pending(int timeout_ms, std::string* text) {
  return hang_reports_.wait_for_report(timeout_ms, text);
}

std::string Engine::describe_pending() {
  return core::describe_pending(PendingView{topology_.rank, queue_.snapshot(), responses_,
                                            stage_->running(), sets_->members()});
}

Status Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (shut_down_) return Status::ok();
    shut_down_ = true;
  }
  stop_.store(true, std::memory_order_release);
  queue_.wake();
  wake_from_aside();
  if (thread_.joinable()) thread_.join();
  tracer_.stop();  // the file is complete JSON once hvd_shutdown returns
  // A peer known lost (its connection failed, or it stopped answering) never reaches a barrier,
  // and the bootstrap's finalize would wait for it too: return the job's error at once, leaving
  // the bootstrap unfinalized (MPI as after a barrier that gave up).
  const Status fault = async_error();
  if (fault.code() == HVD_ERR_PEER_FAILURE || fault.code() == HVD_ERR_TIMEOUT) {
    if (transport_) (void)transport_->close();
    transport_.reset();
    return fault;
  }
  // After another fault a peer may be gone for good: wait for the others a bounded time only.
  const bool faulted = !fault.is_ok();
  auto barrier = [&] {
    return faulted ? bootstrap_->barrier_within(kFaultedShutdownSeconds) : bootstrap_->barrier();
  };
  // Every rank must be past its last send before endpoints close.
  Status status = barrier();
  if (transport_) {
    Status closed = transport_->close();
    if (status.is_ok()) status = closed;
    if (status.is_ok()) status = barrier();
    transport_.reset();
  }
  Status finalized = bootstrap_->finalize();
  return status.is_ok() ? finalized : status;
}

}  // namespace hvdc::core
