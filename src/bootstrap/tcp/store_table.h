// The rendezvous store's contents: keys, values with read budgets, and the requests waiting for
// keys that are not there yet. Pure bookkeeping (no sockets), so it is tested on its own.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hvdc::bootstrap {

class StoreTable {
 public:
  using WaiterId = uint64_t;

  // Stores (or replaces) a value. reads > 0 erases it after that many deliveries, so that the
  // keys of finished collectives do not pile up; 0 keeps it. ready receives the waiters that
  // this key may have completed: pass each to complete().
  void set(const std::string& key, std::string value, uint32_t reads, std::vector<WaiterId>* ready);

  // Delivers every key's value, spending one read of each, when all are present (true).
  // Otherwise registers the waiter under the missing keys and returns false. One request per
  // waiter at a time.
  bool get(WaiterId waiter, std::vector<std::string> keys, std::vector<std::string>* values);

  // For a waiter that set() reported: delivers (true), or re-registers it when a key it saw
  // earlier has meanwhile been read to exhaustion by others (false).
  bool complete(WaiterId waiter, std::vector<std::string>* values);

  // Drops a waiter (its time ran out or its connection closed); missing, if not null, receives
  // the indices of the keys still absent.
  void cancel(WaiterId waiter, std::vector<uint32_t>* missing);

  bool waiting(WaiterId waiter) const { return waiters_.count(waiter) != 0; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string value;
    uint32_t reads_left;  // 0: kept until replaced
  };
  struct Waiter {
    std::vector<std::string> keys;
    size_t missing = 0;  // registrations in waiting_on_ not yet satisfied
  };

  bool all_present(const std::vector<std::string>& keys) const;
  void deliver(const std::vector<std::string>& keys, std::vector<std::string>* values);
  void register_missing(WaiterId id, Waiter* waiter);
  void unregister(WaiterId id, const Waiter& waiter);

  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<WaiterId, Waiter> waiters_;
  // One element per (waiter, missing key position), so a key asked twice counts twice.
  std::unordered_map<std::string, std::vector<WaiterId>> waiting_on_;
};

}  // namespace hvdc::bootstrap
