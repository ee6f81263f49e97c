// What a transport's wait tells about the requests it still waits for: shared by the
// transports, so that a stalled wait reads the same over UCX and the loopback.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "transport/factory.h"
#include "transport/transport.h"

namespace hvdc::transport {

// How many of the requests are not complete yet.
size_t incomplete(const Request* reqs, size_t count);
// The peers of the requests not yet complete, ascending, once each.
std::vector<int> peers_of(const Request* reqs, size_t count);
// "receive from rank 1, send to rank 2": what a stuck wait still waits for.
std::string describe_waiting(const Request* reqs, size_t count);

// Whom a transport's wait waits for (Transport::waited_peers). Waits nest (an interrupt may
// receive a control message), so each wait restores the outer one's record when it ends; once
// none is in progress, the peers of the last wait that timed out are the answer.
class WaitRecord {
 public:
  template <typename Wait>
  Status track(const Request* reqs, size_t count, Wait&& wait) {
    const Request* outer_reqs = reqs_;
    const size_t outer_count = count_;
    reqs_ = reqs;
    count_ = count;
    Status st = wait();
    reqs_ = outer_reqs;
    count_ = outer_count;
    return st;
  }
  void note_stalled(const Request* reqs, size_t count) { stalled_ = peers_of(reqs, count); }
  std::vector<int> peers() const { return reqs_ != nullptr ? peers_of(reqs_, count_) : stalled_; }

 private:
  const Request* reqs_ = nullptr;  // the wait in progress
  size_t count_ = 0;
  std::vector<int> stalled_;  // of the wait that timed out
};

// What a transport lends wait_flags(): its progress, its peers' state and its timeout.
struct FlagWaitHooks {
  int rank = 0;
  double progress_timeout_seconds = 0;  // 0: wait forever
  int spin_micros = 50;                 // then yield, and later sleep briefly, between checks
  std::function<int()> progress;
  std::function<Status()> check_peers;
};

// Raises a FlagWait's counter to `value` and wakes the waits asleep on it.
void raise_flag(std::atomic<uint64_t>* flag, std::atomic<uint32_t>* sleepers, uint64_t value);

// The hooks of `transport`, whose options are `options`.
FlagWaitHooks flag_wait_hooks(Transport& transport, const TransportOptions& options);

// Transport::wait_flags for any transport: raised flags need no progress, so the first check
// costs two loads per flag; only a flag still down enters the loop of timeouts and interrupts.
Status wait_on_flags(const FlagWait* flags, size_t count, WaitRecord& record,
                     const FlagWaitHooks& hooks, const Interrupt& interrupt);

}  // namespace hvdc::transport
