#include "ops/nccl/submission.h"

#include <map>

namespace hvdc::ops {

DeviceSubmission::~DeviceSubmission() {
  if (word_host != nullptr) {
    __atomic_store_n(word_host, value, __ATOMIC_RELEASE);
    pool->release(slot, !stream_store_pending);
  }
  if (inputs_ready.handle != nullptr) (void)runtime->event_destroy(inputs_ready);
}

namespace nccl {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<device::Runtime*, std::shared_ptr<WordPool>>& registry() {
  static auto* pools = new std::map<device::Runtime*, std::shared_ptr<WordPool>>();
  return *pools;  // never destroyed: submissions may outlive static destruction
}

}  // namespace

WordPool::~WordPool() {
  for (void* slab : slabs_host_) (void)runtime_->host_free(slab);
}

Status WordPool::grow() {
  void* host = nullptr;
  void* device = nullptr;
  HVDC_RETURN_IF_ERROR(runtime_->host_alloc_mapped(kSlabWords * sizeof(uint32_t), &host, &device));
  slabs_host_.push_back(host);
  for (size_t i = 0; i < kSlabWords; ++i) {
    uint32_t* word = static_cast<uint32_t*>(host) + i;
    __atomic_store_n(word, 0u, __ATOMIC_RELEASE);
    free_.push_back(host_.size());
    host_.push_back(word);
    device_.push_back(static_cast<char*>(device) + i * sizeof(uint32_t));
    next_.push_back(1);
  }
  return Status::ok();
}

Status WordPool::acquire(size_t* slot, uint32_t** host, void** device, uint32_t* value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) HVDC_RETURN_IF_ERROR(grow());
  *slot = free_.back();
  free_.pop_back();
  *host = host_[*slot];
  *device = device_[*slot];
  *value = next_[*slot]++;
  return Status::ok();
}

void WordPool::release(size_t slot, bool settled) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A late store of an old value would move the counter back under a later waiter.
  if (settled) free_.push_back(slot);
}

std::shared_ptr<WordPool> WordPool::of(device::Runtime* runtime) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::shared_ptr<WordPool>& pool = registry()[runtime];
  if (!pool) pool = std::make_shared<WordPool>(runtime);
  return pool;
}

void WordPool::forget(device::Runtime* runtime) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(runtime);
}

Status record_submission(device::Runtime* runtime, int device, void* stream, bool stream_ordered,
                         std::shared_ptr<DeviceSubmission>* out) {
  auto sub = std::make_shared<DeviceSubmission>();
  sub->runtime = runtime;
  sub->device = device;
  const device::Stream caller{stream};
  HVDC_RETURN_IF_ERROR(runtime->event_create(device, &sub->inputs_ready));
  HVDC_RETURN_IF_ERROR(runtime->event_record(sub->inputs_ready, caller));
  if (stream_ordered) {
    sub->pool = WordPool::of(runtime);
    HVDC_RETURN_IF_ERROR(
        sub->pool->acquire(&sub->slot, &sub->word_host, &sub->word_device, &sub->value));
    Status st = runtime->stream_wait_value(caller, sub->word_device, sub->value);
    if (!st.is_ok()) {
      // Nothing waits on it: the destructor stores and frees the slot.
      return st.with_context("HVD_OP_STREAM_ORDERED: making the caller's stream wait for hvdc");
    }
  }
  *out = std::move(sub);
  return Status::ok();
}

}  // namespace nccl
}  // namespace hvdc::ops
