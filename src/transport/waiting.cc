#include "transport/waiting.h"

#include <sched.h>
#include <time.h>

#include <climits>

#include <algorithm>
#include <chrono>

#include "common/futex.h"

namespace hvdc::transport {

size_t incomplete(const Request* reqs, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += reqs[i].impl != nullptr ? 1 : 0;
  return n;
}

std::vector<int> peers_of(const Request* reqs, size_t count) {
  std::vector<int> peers;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl != nullptr) peers.push_back(reqs[i].peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

std::string describe_waiting(const Request* reqs, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && out.size() < 200; ++i) {
    if (reqs[i].impl == nullptr) continue;
    bool listed = false;  // several segments to or from one peer: one mention
    for (size_t j = 0; j < i && !listed; ++j) {
      listed = reqs[j].impl != nullptr && reqs[j].peer == reqs[i].peer &&
               reqs[j].is_recv == reqs[i].is_recv;
    }
    if (listed) continue;
    out += common::strfmt("%s%s rank %d", out.empty() ? "" : ", ",
                          reqs[i].is_recv ? "receive from" : "send to", reqs[i].peer);
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

// Marks the requests whose flags are raised complete; returns how many are still down.
size_t lower_raised(const FlagWait* flags, Request* reqs, size_t count) {
  size_t left = 0;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl == nullptr) continue;
    if (flags[i].flag->load(std::memory_order_acquire) >= flags[i].want) {
      reqs[i].impl = nullptr;
    } else {
      ++left;
    }
  }
  return left;
}

// How many flags a spin left down, and its first and last reading of the clock.
struct Spun {
  size_t left = 0;
  Clock::time_point started;
  Clock::time_point ended;
};

// Spins on the flags for up to `spin` (a local peer's notice is usually a microsecond or two
// away), yielding every 2 us so that a peer sharing this core gets to raise it. The clock costs
// more than a pass over the flags: it is read every 32 passes, first after 32, so that a notice
// that comes sooner (most do) costs no reading at all.
Spun spin_on_flags(const FlagWait* flags, Request* reqs, size_t count,
                   std::chrono::microseconds spin) {
  Spun spun;
  Clock::time_point yielded;
  for (unsigned i = 1;; ++i) {
    spun.left = lower_raised(flags, reqs, count);
    if (spun.left == 0) return spun;
    if (i % 32 != 0) continue;
    spun.ended = Clock::now();
    if (i == 32) spun.started = yielded = spun.ended;
    if (spun.ended - spun.started > spin) return spun;
    if (spun.ended - yielded > std::chrono::microseconds(2)) {
      sched_yield();
      yielded = Clock::now();
    }
  }
}

// The futex word of a counter: its low 32 bits (x86-64 is little-endian), which change on every
// raise. Shared: waiter and waker are different processes mapping the same memory.
const uint32_t* futex_word(const std::atomic<uint64_t>* flag) {
  return reinterpret_cast<const uint32_t*>(flag);
}

// Between checks once the spin is over: a peer that is late computes (a large reduction) or
// stopped. Sleeps on the first flag still down until its owner raises it, at most 1 ms, so
// that the checks of the loop still run; without a futex, 50 us.
void pause_between_checks(const FlagWait* flags, const Request* reqs, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl == nullptr || flags[i].sleepers == nullptr) continue;
    flags[i].sleepers->fetch_add(1);
    // Read after counting ourselves: a raise either comes later and sees the sleeper, or came
    // before and changed the value the futex compares with.
    const uint64_t seen = flags[i].flag->load();
    if (seen < flags[i].want) {
      common::futex_wait(futex_word(flags[i].flag), static_cast<uint32_t>(seen),
                         std::chrono::milliseconds(1), common::FutexScope::kShared);
    }
    flags[i].sleepers->fetch_sub(1);
    return;
  }
  const struct timespec pause = {0, 50 * 1000};
  nanosleep(&pause, nullptr);
}

Status wait_flags_loop(const FlagWait* flags, Request* reqs, size_t count, WaitRecord& record,
                       const FlagWaitHooks& hooks, const Interrupt& interrupt) {
  Clock::time_point last_moved;  // the first spin's start, when the wait began
  size_t left = incomplete(reqs, count);
  for (;;) {
    const Spun spun =
        spin_on_flags(flags, reqs, count, std::chrono::microseconds(hooks.spin_micros));
    if (spun.left == 0) return Status::ok();
    if (last_moved == Clock::time_point()) last_moved = spun.started;
    const Clock::time_point now = spun.ended;
    if (spun.left != left) {
      left = spun.left;
      last_moved = now;
      continue;
    }
    hooks.progress();  // a dead peer's connection fails here (keepalive)
    Status st = hooks.check_peers();
    if (st.is_ok() && hooks.progress_timeout_seconds > 0 &&
        now - last_moved > std::chrono::duration<double>(hooks.progress_timeout_seconds)) {
      record.note_stalled(reqs, count);
      std::string whose;
      for (int peer : peers_of(reqs, count)) {
        whose += common::strfmt("%srank %d", whose.empty() ? "" : ", ", peer);
      }
      st = common::make_error(HVD_ERR_TIMEOUT,
                              "rank %d: no progress for %g s (HVDC_TIMEOUT) waiting for the "
                              "notice in shared memory of %s",
                              hooks.rank, hooks.progress_timeout_seconds, whose.c_str());
    }
    if (st.is_ok() && interrupt) st = interrupt();
    // A peer's notice names the cause, which the failed connection does not.
    if (st.code() == HVD_ERR_PEER_FAILURE && interrupt) {
      Status cause = interrupt();
      if (!cause.is_ok()) st = cause;
    }
    if (!st.is_ok()) return st;
    pause_between_checks(flags, reqs, count);
  }
}

}  // namespace

void raise_flag(std::atomic<uint64_t>* flag, std::atomic<uint32_t>* sleepers, uint64_t value) {
  flag->store(value);  // sequentially consistent with the load of sleepers below
  if (sleepers->load() == 0) return;
  common::futex_wake(futex_word(flag), INT_MAX, common::FutexScope::kShared);
}

FlagWaitHooks flag_wait_hooks(Transport& transport, const TransportOptions& options) {
  FlagWaitHooks hooks;
  hooks.rank = options.rank;
  hooks.progress_timeout_seconds = options.progress_timeout_seconds;
  hooks.spin_micros = options.spin_micros;
  hooks.progress = [&transport] { return transport.progress(); };
  hooks.check_peers = [&transport] { return transport.check_peers(); };
  return hooks;
}

Status wait_on_flags(const FlagWait* flags, size_t count, WaitRecord& record,
                     const FlagWaitHooks& hooks, const Interrupt& interrupt) {
  constexpr size_t kOnStack = 8;
  Request stack[kOnStack];
  std::vector<Request> heap(count > kOnStack ? count : 0);
  Request* reqs = count > kOnStack ? heap.data() : stack;
  for (size_t i = 0; i < count; ++i) {
    // Any non-null impl marks a request incomplete for the wait record.
    reqs[i] = Request{const_cast<FlagWait*>(&flags[i]), flags[i].peer, true};
  }
  if (lower_raised(flags, reqs, count) == 0) return Status::ok();
  return record.track(
      reqs, count, [&] { return wait_flags_loop(flags, reqs, count, record, hooks, interrupt); });
}

}  // namespace hvdc::transport
