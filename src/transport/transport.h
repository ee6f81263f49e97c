// Point-to-point bytes between ranks. Tagged sends and receives for the data path, whole
// variable-size messages for the control path, explicit progress, and a way to sleep until the
// network or another file descriptor has something. Calls come from one thread at a time: the
// engine's, or a caller of hvd_wait that runs the engine's passes (core/caller_drive.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "transport/tag.h"

namespace hvdc::transport {

using common::Status;

// One posted send or receive. Owned by the caller; completed by Transport::wait.
struct Request {
  void* impl = nullptr;  // transport-private; nullptr once complete
  int peer = -1;
  bool is_recv = false;
};

// A counter in memory shared with a local peer, raised by that peer (ops/cpu/local/board.h): the
// wait for it is over once it holds `want` or more. With `sleepers`, a wait that outlasts its
// spin counts itself there and sleeps on the counter (a futex on its low 32 bits); the peer
// wakes it after raising the counter when it finds a sleeper.
struct FlagWait {
  int peer = -1;
  const std::atomic<uint64_t>* flag = nullptr;
  uint64_t want = 0;
  std::atomic<uint32_t>* sleepers = nullptr;
};

// Called while a wait makes no progress; a non-ok status ends the wait with that status.
using Interrupt = std::function<Status()>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // A refused or failed post ends all communication as a failed wait does (see wait()): the
  // caller returns before waiting for what it posted so far, and quiesce() stops those requests.
  virtual Status isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) = 0;
  // Receives exactly `bytes` from `peer` with `tag` (the tag encodes the source).
  virtual Status irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) = 0;
  // Progresses until every request completes, one fails, or interrupt() fails. A failure ends
  // all communication: the transport takes over every request in flight (the caller's pointers
  // are cleared) and refuses new ones; quiesce() then stops them.
  virtual Status wait(Request* reqs, size_t count, const Interrupt& interrupt) = 0;
  // Waits until every flag is raised, under wait()'s rules: the same progress timeout (naming
  // the peers whose flags are down), interrupt and peer-failure checks, and those peers count
  // as waited for (waited_peers). Nothing is in flight, so a failure leaves nothing to quiesce.
  virtual Status wait_flags(const FlagWait* flags, size_t count, const Interrupt& interrupt) = 0;

  // Control messages: sent without waiting (the transport copies the bytes if it must keep
  // them until delivered).
  virtual Status send_message(int peer, Tag tag, std::string_view bytes) = 0;
  // Takes one complete message whose tag matches (tag & mask) == (want & mask), if one arrived.
  virtual bool poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) = 0;

  // HVD_ERR_PEER_FAILURE naming the first peer whose connection failed (it died or became
  // unreachable), whether or not anything was being sent to it; ok while every peer is fine.
  virtual Status check_peers() const = 0;
  // The peers the wait in progress still waits for (from its interrupt), ascending; after a wait
  // that failed with HVD_ERR_TIMEOUT, those it was still waiting for; otherwise empty.
  virtual std::vector<int> waited_peers() const = 0;
  // After a failed wait, once the peers were told why (send_message): stops every request in
  // flight for good, closing every connection, so that the buffers they use may be released.
  // Bounded; does nothing if no wait failed.
  virtual void quiesce() = 0;
  // Whether messages to `peer` travel over TCP alone (no RDMA, no shared memory), as found when
  // connecting; the engine then cuts the ring's messages between hosts smaller.
  virtual bool reaches_over_tcp_only(int peer) const {
    (void)peer;
    return false;
  }
  // Makes progress; returns how many events were processed.
  virtual int progress() = 0;
  // Sleeps until network activity, `extra_fd` readable, or timeout_ms (whichever first).
  virtual void sleep(int extra_fd, int timeout_ms) = 0;
  // Flushes and closes every endpoint. Call after every rank stopped sending (a barrier).
  virtual Status close() = 0;
};

}  // namespace hvdc::transport
