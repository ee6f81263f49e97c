#include "core/handle_table.h"

namespace hvdc::core {

hvd_handle_t HandleTable::insert(std::shared_ptr<OpState> state) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[index].state = std::move(state);
  ++live_;
  return (static_cast<uint64_t>(slots_[index].generation) << 32) | index;
}

const HandleTable::Slot* HandleTable::slot_of(hvd_handle_t handle) const {
  const uint32_t index = static_cast<uint32_t>(handle & 0xFFFFFFFFu);
  const uint32_t generation = static_cast<uint32_t>(handle >> 32);
  if (index >= slots_.size()) return nullptr;
  const Slot& slot = slots_[index];
  return (slot.generation == generation && slot.state) ? &slot : nullptr;
}

std::shared_ptr<OpState> HandleTable::find(hvd_handle_t handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Slot* slot = slot_of(handle);
  return slot ? slot->state : nullptr;
}

bool HandleTable::erase(hvd_handle_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot* slot = const_cast<Slot*>(slot_of(handle));
  if (slot == nullptr) return false;
  release_locked(slot);
  return true;
}

HandleTable::Release HandleTable::erase_if_done(hvd_handle_t handle) {
  std::shared_ptr<OpState> state;  // released after the lock: its last reference may free outputs
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* slot = const_cast<Slot*>(slot_of(handle));
    if (slot == nullptr) return Release::kUnknown;
    if (!slot->state->done()) return Release::kPending;
    state = std::move(slot->state);
    release_locked(slot);
  }
  return Release::kFreed;
}

void HandleTable::release_locked(Slot* slot) {
  slot->state.reset();
  // Generation 0 is never handed out, so handle 0 is never valid.
  if (++slot->generation == 0) slot->generation = 1;
  free_.push_back(static_cast<uint32_t>(slot - slots_.data()));
  --live_;
}

size_t HandleTable::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

}  // namespace hvdc::core
