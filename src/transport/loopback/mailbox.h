// One rank's incoming side of the loopback fabric: messages that arrived and receives posted
// here. Senders on other threads deliver into it; its owner (one engine thread) takes from it
// and sleeps on its eventfd, which a delivery signals only while the owner is about to sleep.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tag.h"

namespace hvdc::transport::loopback {

// A receive posted by the mailbox's owner. The sender that matches it copies into `buf` and
// then publishes `state` (release), so the owner may read the buffer once it sees kDone.
struct PostedRecv {
  enum State : int { kPending = 0, kDone = 1, kWrongSize = 2 };
  Tag tag = 0;
  void* buf = nullptr;
  size_t bytes = 0;
  int peer = -1;
  size_t arrived_bytes = 0;  // the message's size, valid once state is kWrongSize
  std::atomic<int> state{kPending};
};

class Mailbox {
 public:
  Mailbox();
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Any thread. Matches a posted receive or keeps a copy; false if the mailbox is closed and
  // the message was discarded.
  bool deliver(Tag tag, const void* data, size_t bytes);

  // Any thread. Counts as a delivery without a message: the owner's sleep and wait end, and it
  // looks again at what changed (a failed connection).
  void wake();

  // Owner only. Completes `recv` at once from an arrived message, or keeps it until one comes.
  void post(PostedRecv* recv);
  // Owner only. Forgets `recv` if no sender matched it yet; after this no sender touches it.
  void cancel(PostedRecv* recv);
  // Owner only. Takes the earliest arrived message with (tag & mask) == (want & mask).
  bool take(Tag want, Tag mask, Tag* got, std::string* bytes);
  // Owner only. How many deliveries happened since the last call.
  int take_deliveries();
  // Owner only. Sleeps until a delivery, `extra_fd` readable, or timeout_ms.
  void sleep(int extra_fd, int timeout_ms);
  // Opens for a new owner (discarding what an earlier one left) or closes: a closed mailbox
  // discards deliveries and holds no posted receives.
  void reset(bool open);

 private:
  struct Arrived {
    uint64_t seq;  // arrival order across kinds
    Tag tag;
    std::string bytes;
  };
  static constexpr size_t kKinds = 16;
  static size_t kind_of(Tag tag) { return static_cast<size_t>(tag >> kTagKindShift); }
  void signal();

  std::mutex mutex_;
  bool open_ = true;
  uint64_t next_seq_ = 0;
  std::array<std::deque<Arrived>, kKinds> arrived_;  // by tag kind, each in arrival order
  std::vector<PostedRecv*> posted_;                  // in posting order
  std::atomic<int> deliveries_{0};
  std::atomic<bool> armed_{false};  // the owner is about to sleep: a delivery writes efd_
  int efd_ = -1;
};

}  // namespace hvdc::transport::loopback
