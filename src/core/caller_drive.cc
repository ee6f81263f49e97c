// Caller driving: hvd_wait runs the engine's passes on its own thread while its op is pending.
// On a small op the engine thread would otherwise be woken for the submission and the waiter
// for the completion: two hand-offs between threads, which on a machine with as many busy
// threads as cores cost more than the op itself. A pass is the same step() the engine thread
// runs, under the same mutex, so the transport and the engine's state still see one thread at a
// time, and every timeout and failure check runs as on the engine thread. Ops that run the
// user's code (completion callbacks, output allocators, grouped completions) or use a device
// must do so on the engine thread: once one is submitted, callers no longer drive.
#include <sched.h>

#include <chrono>

#include "core/engine.h"

namespace hvdc::core {

namespace {

// Counts the calling thread among the drivers, so that the engine thread stands aside.
class DriverCount {
 public:
  explicit DriverCount(std::atomic<int>& drivers) : drivers_(drivers) { drivers_.fetch_add(1); }
  ~DriverCount() { drivers_.fetch_sub(1); }
  DriverCount(const DriverCount&) = delete;
  DriverCount& operator=(const DriverCount&) = delete;

 private:
  std::atomic<int>& drivers_;
};

bool must_run_on_engine_thread(const TensorEntry& entry) {
  return entry.request.device_type != HVD_DEVICE_CPU || entry.state->calls_user_code();
}

}  // namespace

void Engine::note_engine_thread_only(const TensorEntry& entry) {
  if (!must_run_on_engine_thread(entry)) return;
  engine_thread_only_.store(true);
  // A driver checks the flag at the start of each pass; one whose pass began before the store
  // could still run this op once it is pushed: wait for that pass to end (once per engine).
  if (t_runs_passes_) return;  // this thread's own pass (a callback submitting)
  while (driving_passes_.load() > 0) sched_yield();
}

bool Engine::try_drive_pass(std::chrono::steady_clock::time_point now, bool* busy) {
  std::unique_lock<std::mutex> pass(pass_mutex_, std::try_to_lock);
  if (!pass.owns_lock()) return true;  // the engine thread ends its pass or sleep first
  // Counted before the flag is read: note_engine_thread_only() stores the flag, then reads this.
  struct InPass {
    explicit InPass(Engine& e) : engine(e) {
      engine.driving_passes_.fetch_add(1);
      t_runs_passes_ = true;
    }
    ~InPass() {
      t_runs_passes_ = false;
      engine.driving_passes_.fetch_sub(1);
    }
    Engine& engine;
  } in_pass(*this);
  if (engine_thread_only_.load() || stop_.load()) return false;
  driven_passes_.fetch_add(1, std::memory_order_relaxed);
  *busy = step(now);
  return true;
}

// Yields while the driven passes are short, so that a caller's next pass is not kept waiting,
// and sleeps on the mutex through a pass that runs longer than the spin (a large collective),
// so that the engine thread does not spin beside it.
void Engine::stand_aside(std::chrono::steady_clock::time_point now) {
  const uint64_t pass = driven_passes_.load(std::memory_order_relaxed);
  if (pass != aside_pass_) {
    aside_pass_ = pass;
    aside_since_ = now;
  } else if (now - aside_since_ > std::chrono::microseconds(config_.spin_micros)) {
    std::lock_guard<std::mutex> sleep_through(pass_mutex_);
  }
  sched_yield();
}

// Idle passes run back to back this long before the driver yields. A peer's message is
// usually a microsecond or two away: yielding after every idle pass hands the core to this
// process's engine thread (standing aside) and back, which on a VM costs more than the wait.
// Bounded, so that a thread that needs this core (a peer's driver) waits at most this long.
constexpr auto kIdlePassesBeforeYield = std::chrono::microseconds(2);

bool Engine::drive(const OpState& op) {
  if (engine_thread_only_.load() || stop_.load(std::memory_order_acquire)) return false;
  DriverCount counted(drivers_);
  const auto spin = std::chrono::microseconds(config_.spin_micros);
  auto last_busy = std::chrono::steady_clock::now();
  auto idle_since = last_busy;  // the last busy pass or yield
  bool busy = true;
  while (!op.done()) {
    const auto now = std::chrono::steady_clock::now();
    if (busy) last_busy = idle_since = now;
    // Waiting for peers longer than the spin: the engine thread sleeps until they answer.
    if (now - last_busy > spin) return true;
    if (now - idle_since > kIdlePassesBeforeYield) {
      sched_yield();
      idle_since = std::chrono::steady_clock::now();
    }
    busy = false;
    if (!try_drive_pass(now, &busy)) return false;
  }
  return true;
}

}  // namespace hvdc::core
