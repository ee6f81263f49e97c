#include "core/engine.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <climits>

#include "common/log.h"
#include "transport/ucx/ucx_transport.h"

namespace hvdc::core {

using common::make_error;

namespace {

std::string system_hostname() {
  char name[HOST_NAME_MAX + 1] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// How long hvd_shutdown waits for the other ranks after the engine's work ended in a fault.
constexpr double kFaultedShutdownSeconds = 5;

}  // namespace

Engine::Engine(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config)
    : config_(config), bootstrap_(std::move(bootstrap)) {}

Status Engine::start(std::unique_ptr<bootstrap::Bootstrap> bootstrap, const EngineConfig& config,
                     std::unique_ptr<Engine>* out) {
  std::unique_ptr<Engine> engine(new Engine(std::move(bootstrap), config));
  Status st = engine->connect();
  if (!st.is_ok()) {
    engine->transport_.reset();
    (void)engine->bootstrap_->finalize();  // leave no MPI initialized behind a failed init
    return st;
  }
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
  process_sets_ = std::make_unique<ProcessSetTable>(size, rank);
  ProcessSetInfo global;
  HVDC_RETURN_IF_ERROR(process_sets_->find(0, &global));
  add_set_state(global);
  if (rank == 0) {
    timeline_ = std::make_unique<Timeline>();
    sets_[0]->controller->set_timeline(timeline_.get());
  }
  HVDC_RETURN_IF_ERROR(start_timeline_everywhere());
  HVDC_RETURN_IF_ERROR(add_static_process_sets());
  if (size == 1) return Status::ok();  // a single rank needs no transport
  transport::UcxOptions options;
  options.rank = rank;
  options.size = size;
  options.spin_micros = config_.spin_micros;
  options.progress_timeout_seconds = config_.timeout_seconds;
  auto exchange = [this](const std::string& mine, std::vector<std::string>* all) {
    return bootstrap::allgather_strings(*bootstrap_, mine, all);
  };
  HVDC_RETURN_IF_ERROR(transport::create_ucx_transport(options, exchange, &transport_)
                           .with_context(common::strfmt("connecting rank %d of %d", rank, size)));
  return bootstrap_->barrier();
}

// Rank 0 opens HVDC_TIMELINE; if it cannot, init fails on every rank (not only there, where the
// others would wait for it forever).
Status Engine::start_timeline_everywhere() {
  if (config_.timeline_path.empty()) return Status::ok();
  std::string failure;
  if (timeline_) {
    Status st = timeline_->start(config_.timeline_path, config_.timeline_mark_cycles);
    if (!st.is_ok()) failure = st.message();
  }
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(*bootstrap_, failure, &all));
  if (all[0].empty()) return Status::ok();
  return make_error(HVD_ERR_SYSTEM, "HVDC_TIMELINE: rank 0 %s", all[0].c_str());
}

Engine::~Engine() {
  if (thread_.joinable()) shutdown();
}

Status Engine::enqueue(TensorEntry entry) {
  return queue_.push(std::move(entry));
}

Status Engine::enqueue_group(std::vector<TensorEntry> entries) {
  return queue_.push_group(std::move(entries));
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason.empty() ? "(no reason given)" : reason;
  }
  abort_requested_.store(true);
  queue_.wake();
}

Status Engine::async_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return async_error_;
}

void Engine::run() {
  common::set_thread_log_rank(topology_.rank);
  auto last_busy = std::chrono::steady_clock::now();
  const auto spin = std::chrono::microseconds(config_.spin_micros);
  while (!stop_.load(std::memory_order_acquire)) {
    queue_.drain_wake();
    if (step()) {
      last_busy = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_busy > spin) {
      idle_wait();
    } else {
      sched_yield();  // let a thread that has work (the app, a peer's engine) have the core
    }
  }
  if (terminated_.is_ok()) {
    terminate(make_error(HVD_ERR_SHUT_DOWN, "hvd_shutdown was called on rank %d", topology_.rank),
              true);
  }
  if (transport_) transport_->progress();  // push the shutdown notices out
}

// One pass over everything that can make progress; true if anything did.
bool Engine::step() {
  bool busy = false;
  if (transport_) busy |= transport_->progress() > 0;
  busy |= poll_dump_request();
  watch_pending();
  busy |= poll_terminate();
  busy |= poll_stall_reports();
  busy |= check_peer_connections();
  busy |= handle_abort_request();
  busy |= finish_peer_shutdown();
  if (!terminated_.is_ok()) return busy;
  busy |= report_local_requests();
  busy |= coordinate();
  busy |= expose_stalled_hits();
  busy |= progress_rounds();
  busy |= execute_responses();
  return busy;
}

// Once a second, the age of the oldest op in flight decides whether this rank logs a hang
// report (forensics.cc) and whether it probes its peers with a round (rounds.cc).
void Engine::watch_pending() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_pending_check_) return;
  next_pending_check_ = now + std::chrono::seconds(1);
  std::chrono::steady_clock::time_point oldest;
  if (!queue_.oldest_submitted(&oldest)) return;
  check_local_stall(now, now - oldest);
  probe_liveness(now, now - oldest);
}

void Engine::idle_wait() {
  // Bounded so that a missed wake-up costs latency, never a hang.
  constexpr int kMaxSleepMs = 100;
  if (transport_) {
    transport_->sleep(queue_.wake_fd(), kMaxSleepMs);
  } else {
    struct pollfd fd = {queue_.wake_fd(), POLLIN, 0};
    ::poll(&fd, 1, kMaxSleepMs);
  }
}

Status Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shut_down_) return Status::ok();
    shut_down_ = true;
  }
  stop_.store(true, std::memory_order_release);
  queue_.wake();
  if (thread_.joinable()) thread_.join();
  timeline_stop();  // the file is complete JSON once hvd_shutdown returns
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
