#include "transport/loopback/mailbox.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace hvdc::transport::loopback {

Mailbox::Mailbox() : efd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Mailbox::~Mailbox() {
  if (efd_ >= 0) ::close(efd_);
}

// Called after the delivery is visible (deliveries_ incremented): the owner either sees the
// count before it sleeps or is woken here (the same handshake as ucp_worker_arm).
void Mailbox::signal() {
  if (!armed_.exchange(false)) return;
  const uint64_t one = 1;
  ssize_t n = ::write(efd_, &one, sizeof(one));
  (void)n;  // a full counter (never in practice) still leaves the fd readable
}

bool Mailbox::deliver(Tag tag, const void* data, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!open_) return false;
    auto match = std::find_if(posted_.begin(), posted_.end(),
                              [tag](const PostedRecv* r) { return r->tag == tag; });
    if (match != posted_.end()) {
      PostedRecv* recv = *match;
      posted_.erase(match);
      if (bytes == recv->bytes) {
        if (bytes > 0) std::memcpy(recv->buf, data, bytes);
        recv->state.store(PostedRecv::kDone, std::memory_order_release);
      } else {
        recv->arrived_bytes = bytes;
        recv->state.store(PostedRecv::kWrongSize, std::memory_order_release);
      }
    } else {
      arrived_[kind_of(tag)].push_back(
          Arrived{next_seq_++, tag, std::string(static_cast<const char*>(data), bytes)});
    }
  }
  deliveries_.fetch_add(1);
  signal();
  return true;
}

void Mailbox::wake() {
  deliveries_.fetch_add(1);
  signal();
}

void Mailbox::post(PostedRecv* recv) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& arrived = arrived_[kind_of(recv->tag)];
  auto match = std::find_if(arrived.begin(), arrived.end(),
                            [recv](const Arrived& a) { return a.tag == recv->tag; });
  if (match == arrived.end()) {
    posted_.push_back(recv);
    return;
  }
  if (match->bytes.size() == recv->bytes) {
    if (recv->bytes > 0) std::memcpy(recv->buf, match->bytes.data(), recv->bytes);
    recv->state.store(PostedRecv::kDone, std::memory_order_release);
  } else {
    recv->arrived_bytes = match->bytes.size();
    recv->state.store(PostedRecv::kWrongSize, std::memory_order_release);
  }
  arrived.erase(match);
}

void Mailbox::cancel(PostedRecv* recv) {
  std::lock_guard<std::mutex> lock(mutex_);
  posted_.erase(std::remove(posted_.begin(), posted_.end(), recv), posted_.end());
}

bool Mailbox::take(Tag want, Tag mask, Tag* got, std::string* bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto matches = [want, mask](const Arrived& a) { return (a.tag & mask) == (want & mask); };
  // A mask that fixes the kind searches that kind's queue only; otherwise the earliest arrival.
  const bool one_kind = (mask & kTagKindMask) == kTagKindMask;
  std::deque<Arrived>* best_queue = nullptr;
  std::deque<Arrived>::iterator best;
  for (size_t k = 0; k < kKinds; ++k) {
    if (one_kind && k != kind_of(want)) continue;
    auto it = std::find_if(arrived_[k].begin(), arrived_[k].end(), matches);
    if (it == arrived_[k].end()) continue;
    if (best_queue == nullptr || it->seq < best->seq) {
      best_queue = &arrived_[k];
      best = it;
    }
  }
  if (best_queue == nullptr) return false;
  *got = best->tag;
  *bytes = std::move(best->bytes);
  best_queue->erase(best);
  return true;
}

int Mailbox::take_deliveries() {
  return deliveries_.exchange(0);
}

void Mailbox::sleep(int extra_fd, int timeout_ms) {
  uint64_t drained = 0;
  ssize_t n = ::read(efd_, &drained, sizeof(drained));  // a token left by an earlier wake-up
  (void)n;
  armed_.store(true);
  if (deliveries_.load() > 0) {
    armed_.store(false);
    return;
  }
  struct pollfd fds[2] = {{efd_, POLLIN, 0}, {extra_fd, POLLIN, 0}};
  ::poll(fds, extra_fd >= 0 ? 2 : 1, timeout_ms);
  armed_.store(false);
}

void Mailbox::reset(bool open) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_ = open;
  for (auto& queue : arrived_) queue.clear();
  posted_.clear();
}

}  // namespace hvdc::transport::loopback
