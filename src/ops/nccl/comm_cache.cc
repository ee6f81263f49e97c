#include "ops/nccl/comm_cache.h"

#include <chrono>
#include <set>
#include <thread>

#include "common/log.h"
#include "ops/nccl/setup_exchange.h"

namespace hvdc::ops::nccl {

namespace {

constexpr int kStepUuids = 0;  // setup_exchange steps
constexpr int kStepUniqueId = 1;

}  // namespace

CommEntry::~CommEntry() {
  if (has_comm_ && failure_.is_ok()) (void)runtime_->comm_destroy(comm_);
}

Status CommEntry::check() {
  if (!failure_.is_ok()) return failure_;
  if (!has_comm_) return Status::ok();
  bool in_progress = false;
  Status st = runtime_->comm_async_error(comm_, &in_progress);
  if (!st.is_ok()) abort(st.with_context("NCCL communicator"));
  return failure_;
}

void CommEntry::abort(const Status& why) {
  if (!failure_.is_ok()) return;
  failure_ = why;
  if (!has_comm_) return;
  Status st = runtime_->comm_abort(comm_);
  if (!st.is_ok()) HVDC_LOG_WARNING("aborting an NCCL communicator: %s", st.message().c_str());
}

Status CommEntry::create(const Group& group) {
  Status st = init(group);
  if (!st.is_ok()) abort(st);  // later ops of the set fail the same way
  return st;
}

Status CommEntry::init(const Group& group) {
  std::string id(device::UniqueId::kBytes, '\0');
  if (group.index == 0) {
    device::UniqueId made;
    HVDC_RETURN_IF_ERROR(runtime_->unique_id(&made));
    id.assign(made.bytes, device::UniqueId::kBytes);
  }
  HVDC_RETURN_IF_ERROR(send_from_first(group, kStepUniqueId, &id));
  device::UniqueId unique;
  id.copy(unique.bytes, device::UniqueId::kBytes);
  HVDC_RETURN_IF_ERROR(
      runtime_->comm_init_rank(device_, group.size(), unique, group.index, &comm_));
  has_comm_ = true;
  return wait_ready(group);
}

// A nonblocking communicator initializes while peers join; a peer that never does (it failed)
// ends the wait through the engine's interrupt, and the half-made communicator is aborted.
Status CommEntry::wait_ready(const Group& group) {
  for (;;) {
    // The engine's interrupt below may have aborted it (the handle is gone then).
    if (!failure_.is_ok()) return failure_;
    bool in_progress = false;
    Status st = runtime_->comm_async_error(comm_, &in_progress);
    if (!st.is_ok()) {
      abort(st.with_context("creating an NCCL communicator"));
      return failure_;
    }
    if (!in_progress) return Status::ok();
    if (group.interrupt) {
      st = group.interrupt();
      if (!st.is_ok()) {
        abort(st);
        return st;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Status CommCache::compare_gpus(const Group& group, int device, bool* shared) {
  device::DeviceUuid uuid;
  HVDC_RETURN_IF_ERROR(runtime_->device_uuid(device, &uuid));
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(
      gather_to_first(group, kStepUuids, std::string(uuid.bytes, uuid.kBytes), &all));
  std::string verdict(1, '\0');
  if (group.index == 0) {
    std::set<std::string> distinct(all.begin(), all.end());
    verdict[0] = distinct.size() < all.size() ? 1 : 0;
  }
  HVDC_RETURN_IF_ERROR(send_from_first(group, kStepUuids, &verdict));
  *shared = verdict[0] != 0;
  return Status::ok();
}

Status CommCache::entry(const Group& group, int device, std::shared_ptr<CommEntry>* out) {
  Key key{group.context, group.members, device};
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    *out = it->second;
    return Status::ok();
  }
  bool shared = false;
  HVDC_RETURN_IF_ERROR(compare_gpus(group, device, &shared)
                           .with_context("comparing the GPUs of the process set's members"));
  *out = std::make_shared<CommEntry>(runtime_, device, shared);
  entries_[key] = *out;
  return Status::ok();
}

Status CommCache::communicator(const Group& group, CommEntry& entry, device::Communicator* out) {
  HVDC_RETURN_IF_ERROR(entry.failure());
  if (!entry.has_communicator()) {
    HVDC_RETURN_IF_ERROR(entry.create(group).with_context(common::strfmt(
        "creating the NCCL communicator of %d ranks on device %d", group.size(), entry.device())));
  }
  *out = entry.communicator();
  return Status::ok();
}

void CommCache::abort_all(const Status& why) {
  for (auto& [key, entry] : entries_) entry->abort(why);
}

}  // namespace hvdc::ops::nccl
