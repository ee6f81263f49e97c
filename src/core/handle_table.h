// Handles are 64-bit ids: a slot index (low 32 bits) and that slot's generation (high 32 bits,
// never 0). A freed slot's generation moves on, so a stale or double-freed handle is reported,
// never dereferenced.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/op_state.h"

namespace hvdc::core {

class HandleTable {
 public:
  hvd_handle_t insert(std::shared_ptr<OpState> state);
  std::shared_ptr<OpState> find(hvd_handle_t handle) const;  // nullptr if unknown or stale
  bool erase(hvd_handle_t handle);                           // false if unknown or stale
  // Erases the handle if its op is done, under one lock: what freeing a finished op needs.
  enum class Release { kFreed, kPending, kUnknown };
  Release erase_if_done(hvd_handle_t handle);
  size_t live() const;

 private:
  struct Slot {
    uint32_t generation = 1;
    std::shared_ptr<OpState> state;
  };
  const Slot* slot_of(hvd_handle_t handle) const;
  void release_locked(Slot* slot);  // the slot's handle goes stale; its index is free again

  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace hvdc::core
