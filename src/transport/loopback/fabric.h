// The in-process loopback fabric: the "network" between engines that run as threads of one
// process (tests, benchmarks). It connects one LoopbackTransport per rank, counts messages per
// tag kind, and injects faults that a test sets at any time: a rank's messages dropped (a
// stopped process), delayed, or its connections failed (a process that died).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "transport/factory.h"
#include "transport/loopback/mailbox.h"

namespace hvdc::transport::loopback {

// Messages and bytes sent per tag kind since creation or reset_counters(), dropped ones included.
struct FabricCounts {
  std::array<uint64_t, 16> messages{};
  std::array<uint64_t, 16> bytes{};
  uint64_t of(TagKind kind) const { return messages[static_cast<size_t>(kind)]; }
};

class LoopbackFabric : public std::enable_shared_from_this<LoopbackFabric> {
 public:
  static std::shared_ptr<LoopbackFabric> create(int size);
  ~LoopbackFabric();
  LoopbackFabric(const LoopbackFabric&) = delete;
  LoopbackFabric& operator=(const LoopbackFabric&) = delete;

  int size() const { return size_; }
  // Creates rank options.rank's transport on this fabric (the engine's transport factory).
  // The fabric lives as long as any transport it made.
  TransportFactory factory();

  // Fault knobs; any thread, any time, for the rest of the fabric's life.
  // Every message `rank` sends from now on is lost: its peers see a stopped process. With
  // `starting_at`, from its first message of that kind on (a rank that stops just as it begins
  // a transfer, say, after it answered the negotiation).
  void drop_from(int rank);
  void drop_from(int rank, TagKind starting_at);
  // Every message `rank` sends from now on arrives `delay` late (in order).
  void delay_from(int rank, std::chrono::milliseconds delay);
  // `rank`'s connections fail: its peers' transports report HVD_ERR_PEER_FAILURE naming it,
  // and its own report every peer failed (a process that died, seen from either side).
  void fail(int rank);

  FabricCounts counts() const;
  // How often the transports were asked for progress: an engine that sleeps when idle asks a
  // few times a second, one that polls asks thousands of times.
  uint64_t progress_calls() const { return progress_calls_.load(std::memory_order_relaxed); }
  void reset_counters();

  // For the transports.
  Mailbox& mailbox(int rank) { return *mailboxes_[rank]; }
  // Sends now, later (delay) or never (drop, or a closed mailbox); counted either way.
  void send(int from, int to, Tag tag, const void* data, size_t bytes);
  void count_progress_call() { progress_calls_.fetch_add(1, std::memory_order_relaxed); }
  // The first failed peer as `rank` sees it, or -1.
  int first_failed_peer(int rank) const;
  bool link_failed(int rank, int peer) const;

 private:
  explicit LoopbackFabric(int size);
  struct Delayed {
    std::chrono::steady_clock::time_point due;
    uint64_t seq;  // keeps one sender's messages in order at equal due times
    int to;
    Tag tag;
    std::string bytes;
    bool operator>(const Delayed& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  void deliver_later(Delayed message);
  void run_courier();

  const int size_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::unique_ptr<std::atomic<bool>[]> dropped_;
  std::unique_ptr<std::atomic<int>[]> drop_trigger_;  // a TagKind, or 0 for none
  std::unique_ptr<std::atomic<int64_t>[]> delay_micros_;
  mutable std::mutex failed_mutex_;
  std::vector<int> failed_;  // in the order they failed
  std::atomic<bool> any_failed_{false};
  std::array<std::atomic<uint64_t>, 16> messages_{};
  std::array<std::atomic<uint64_t>, 16> bytes_{};
  std::atomic<uint64_t> progress_calls_{0};

  // The courier delivers delayed messages when they are due; started by the first one.
  std::mutex courier_mutex_;
  std::condition_variable courier_cv_;
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<Delayed>> delayed_;
  uint64_t delayed_seq_ = 0;
  bool courier_stop_ = false;
  std::thread courier_;
};

}  // namespace hvdc::transport::loopback
