#include "transport/loopback/fabric.h"

#include <algorithm>

#include "common/log.h"
#include "transport/loopback/loopback_transport.h"

namespace hvdc::transport::loopback {

std::shared_ptr<LoopbackFabric> LoopbackFabric::create(int size) {
  return std::shared_ptr<LoopbackFabric>(new LoopbackFabric(size));
}

LoopbackFabric::LoopbackFabric(int size)
    : size_(size),
      dropped_(new std::atomic<bool>[size]),
      drop_trigger_(new std::atomic<int>[size]),
      delay_micros_(new std::atomic<int64_t>[size]) {
  mailboxes_.reserve(size);
  for (int r = 0; r < size; ++r) {
    mailboxes_.push_back(std::make_unique<Mailbox>());
    dropped_[r].store(false);
    drop_trigger_[r].store(0);
    delay_micros_[r].store(0);
  }
}

LoopbackFabric::~LoopbackFabric() {
  {
    std::lock_guard<std::mutex> lock(courier_mutex_);
    courier_stop_ = true;
  }
  courier_cv_.notify_all();
  if (courier_.joinable()) courier_.join();
}

TransportFactory LoopbackFabric::factory() {
  std::shared_ptr<LoopbackFabric> self = shared_from_this();
  return [self](const TransportOptions& options, const AddressExchange&,
                std::unique_ptr<Transport>* out) {
    return create_loopback_transport(self, options, out);
  };
}

void LoopbackFabric::drop_from(int rank) {
  dropped_[rank].store(true);
}

void LoopbackFabric::drop_from(int rank, TagKind starting_at) {
  drop_trigger_[rank].store(static_cast<int>(starting_at));
}

void LoopbackFabric::delay_from(int rank, std::chrono::milliseconds delay) {
  delay_micros_[rank].store(std::chrono::duration_cast<std::chrono::microseconds>(delay).count());
}

void LoopbackFabric::fail(int rank) {
  std::lock_guard<std::mutex> lock(failed_mutex_);
  if (std::find(failed_.begin(), failed_.end(), rank) != failed_.end()) return;
  failed_.push_back(rank);
  any_failed_.store(true);
  // Wake every owner, as a connection error does: engines asleep must notice it now.
  for (int r = 0; r < size_; ++r) mailboxes_[r]->wake();
}

int LoopbackFabric::first_failed_peer(int rank) const {
  if (!any_failed_.load()) return -1;
  std::lock_guard<std::mutex> lock(failed_mutex_);
  if (std::find(failed_.begin(), failed_.end(), rank) != failed_.end()) {
    return rank == 0 ? (size_ > 1 ? 1 : -1) : 0;  // a failed rank lost every peer
  }
  return failed_.empty() ? -1 : failed_.front();
}

bool LoopbackFabric::link_failed(int rank, int peer) const {
  if (!any_failed_.load() || rank == peer) return false;
  std::lock_guard<std::mutex> lock(failed_mutex_);
  auto failed = [this](int r) {
    return std::find(failed_.begin(), failed_.end(), r) != failed_.end();
  };
  return failed(rank) || failed(peer);
}

FabricCounts LoopbackFabric::counts() const {
  FabricCounts out;
  for (size_t k = 0; k < out.messages.size(); ++k) {
    out.messages[k] = messages_[k].load(std::memory_order_relaxed);
    out.bytes[k] = bytes_[k].load(std::memory_order_relaxed);
  }
  return out;
}

void LoopbackFabric::reset_counters() {
  for (size_t k = 0; k < messages_.size(); ++k) {
    messages_[k].store(0, std::memory_order_relaxed);
    bytes_[k].store(0, std::memory_order_relaxed);
  }
}

void LoopbackFabric::send(int from, int to, Tag tag, const void* data, size_t bytes) {
  const size_t kind = static_cast<size_t>(tag >> kTagKindShift);
  messages_[kind].fetch_add(1, std::memory_order_relaxed);
  bytes_[kind].fetch_add(bytes, std::memory_order_relaxed);
  if (drop_trigger_[from].load() == static_cast<int>(kind)) dropped_[from].store(true);
  if (dropped_[from].load()) return;
  const int64_t delay = delay_micros_[from].load();
  if (delay <= 0) {
    mailboxes_[to]->deliver(tag, data, bytes);
    return;
  }
  deliver_later(Delayed{std::chrono::steady_clock::now() + std::chrono::microseconds(delay), 0, to,
                        tag, std::string(static_cast<const char*>(data), bytes)});
}

void LoopbackFabric::deliver_later(Delayed message) {
  std::lock_guard<std::mutex> lock(courier_mutex_);
  if (courier_stop_) return;
  message.seq = delayed_seq_++;
  delayed_.push(std::move(message));
  if (!courier_.joinable()) courier_ = std::thread(&LoopbackFabric::run_courier, this);
  courier_cv_.notify_all();
}

// Sleeps until the earliest delayed message is due (or a new one comes), then delivers it.
void LoopbackFabric::run_courier() {
  std::unique_lock<std::mutex> lock(courier_mutex_);
  while (!courier_stop_) {
    if (delayed_.empty()) {
      courier_cv_.wait(lock);
      continue;
    }
    // A copy: wait_until reads its deadline while the lock is released, and a send meanwhile may
    // grow the queue's storage under a reference to top().
    const auto due = delayed_.top().due;
    if (courier_cv_.wait_until(lock, due) != std::cv_status::timeout) continue;
    if (delayed_.empty() || delayed_.top().due > std::chrono::steady_clock::now()) continue;
    Delayed message = delayed_.top();
    delayed_.pop();
    lock.unlock();  // delivering takes the mailbox's lock; never both
    mailboxes_[message.to]->deliver(message.tag, message.bytes.data(), message.bytes.size());
    lock.lock();
  }
}

}  // namespace hvdc::transport::loopback
