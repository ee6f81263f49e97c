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

#include "common/futex.h"

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

bool Engine::try_drive_pass(std::chrono::steady_clock::time_point now, const OpState& op,
                            bool* busy, bool* work_left) {
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
  *busy = step(now);
  if (op.done()) {
    *work_left =
        !responses_.empty() || !stage_->idle() || lane_->holds() || negotiation_->round_under_way();
  }
  return true;
}

// While a caller drives, the engine thread sleeps instead of yielding. A thread that yields in a
// loop stays runnable, and the scheduler weighs it as a busy task: at np 2 on two cores, a CPU
// holding both ranks' callers then looked no busier than the one holding the engine threads, and
// the two callers, each spinning for the other, often stayed on one CPU for a whole run (ops 5x
// slower). Each wake-up of a sleeping thread costs the op it interrupts tens of microseconds on
// such a VM, so the engine thread is woken only when work is left to it (wake_from_aside()): a
// driver that leaves its op or others pending, a submission that no driver follows
// (submitted_after_drive()), a thread that waits without driving or polls (nudge()), an abort,
// a dump request or the shutdown. Anything else, such as a peer's round while this rank has no
// op, waits at most kAsideSleep. A waker clears the word before its wake-up, so a sleep that
// starts after the clear returns at once.
constexpr auto kAsideSleep = std::chrono::milliseconds(5);

// The futex word: std::atomic<uint32_t> has the layout of uint32_t.
const uint32_t* Engine::aside_word() const {
  return reinterpret_cast<const uint32_t*>(&aside_asleep_);
}

void Engine::stand_aside() {
  aside_asleep_.store(1);
  if (drivers_.load() > 0 && !stop_.load()) {
    common::futex_wait(aside_word(), 1, kAsideSleep, common::FutexScope::kProcess);
  }
  aside_asleep_.store(0);
}

void Engine::wake_from_aside() noexcept {
  if (aside_asleep_.exchange(0) == 1) {
    common::futex_wake(aside_word(), 1, common::FutexScope::kProcess);
  }
}

void Engine::nudge() noexcept {
  if (aside_asleep_.load(std::memory_order_relaxed) != 0 && drivers_.load() == 0) wake_from_aside();
}

// A submission right after a drive is a loop's next op, whose hvd_wait drives it; one that comes
// later than the engine thread's spin would have ended, or with no driver to come, is the
// engine thread's, as it was before callers drove.
void Engine::submitted_after_drive(std::chrono::steady_clock::time_point now) {
  if (aside_asleep_.load(std::memory_order_relaxed) == 0 || drivers_.load() > 0) return;
  const int64_t spin =
      std::chrono::nanoseconds(std::chrono::microseconds(config_.spin_micros)).count();
  const int64_t ticks = now.time_since_epoch().count();
  if (ticks - last_drive_end_.load(std::memory_order_relaxed) > spin) wake_from_aside();
}

// Idle passes run back to back this long before the driver yields. A peer's message is
// usually a microsecond or two away: yielding after every idle pass hands the core to this
// process's engine thread (standing aside) and back, which on a VM costs more than the wait.
// Bounded, so that a thread that needs this core (a peer's driver) waits at most this long.
constexpr auto kIdlePassesBeforeYield = std::chrono::microseconds(2);

bool Engine::drive(const OpState& op) {
  if (engine_thread_only_.load() || stop_.load(std::memory_order_acquire)) {
    nudge();  // the caller waits for the engine thread
    return false;
  }
  bool work_left = false;
  bool drove = false;
  std::chrono::steady_clock::time_point last_pass;
  {
    DriverCount counted(drivers_);
    drove = drive_passes(op, &last_pass, &work_left);
  }
  last_drive_end_.store(last_pass.time_since_epoch().count(), std::memory_order_relaxed);
  // Whatever this caller leaves behind is the engine thread's again: its own op, if the caller
  // waits for it now, or other ops in flight here, or a round.
  if (!op.done() || work_left || queue_.in_flight() > 0) wake_from_aside();
  return drove;
}

bool Engine::drive_passes(const OpState& op, std::chrono::steady_clock::time_point* last_pass,
                          bool* work_left) {
  const auto spin = std::chrono::microseconds(config_.spin_micros);
  auto last_busy = std::chrono::steady_clock::now();
  auto idle_since = last_busy;  // the last busy pass or yield
  *last_pass = last_busy;
  bool busy = true;
  // The first pass goes by the clock just read: a reading costs a small op about 1 % of its
  // time on a VM, and most drives take one or two passes.
  bool first = true;
  while (!op.done()) {
    const auto now = first ? last_busy : std::chrono::steady_clock::now();
    first = false;
    *last_pass = now;
    if (busy) last_busy = idle_since = now;
    // Waiting for peers longer than the spin: the engine thread sleeps until they answer.
    if (now - last_busy > spin) return true;
    if (now - idle_since > kIdlePassesBeforeYield) {
      sched_yield();
      idle_since = std::chrono::steady_clock::now();
    }
    busy = false;
    if (!try_drive_pass(now, op, &busy, work_left)) return false;
  }
  return true;
}

}  // namespace hvdc::core
