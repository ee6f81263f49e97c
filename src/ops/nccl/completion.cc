#include "ops/nccl/completion.h"

#include "common/log.h"

namespace hvdc::ops::nccl {

using Clock = std::chrono::steady_clock;

void AbortState::abort(const Status& why) {
  if (!why_.is_ok()) return;
  why_ = why;
  since_ = Clock::now();
  if (why.code() != HVD_ERR_SHUT_DOWN) escalate();
}

void AbortState::escalate() {
  if (why_.is_ok() || comms_aborted_) return;
  if (why_.code() == HVD_ERR_SHUT_DOWN && Clock::now() - since_ < timeouts_.shutdown_grace) return;
  comms_aborted_ = true;
  comms_aborted_at_ = Clock::now();
  abort_comms_(why_);
}

bool AbortState::give_up(Clock::time_point failed_at) const {
  Clock::time_point from = failed_at;  // Clock::time_point() when NCCL reported no error
  if (comms_aborted_ && (from == Clock::time_point() || comms_aborted_at_ < from)) {
    from = comms_aborted_at_;
  }
  return from != Clock::time_point() && Clock::now() - from > timeouts_.give_up;
}

bool DevicePending::poll(Status* status) {
  bool done = false;
  Status st = run_.rt().event_query(done_, &done);
  if (!st.is_ok()) {  // the device itself failed: nothing it holds can be trusted again
    *status = st.with_context("waiting for a device collective");
    if (entry_) entry_->abort(*status);
    abandon();
    return true;
  }
  if (!done) {
    if (entry_ && error_.is_ok()) {
      error_ = entry_->check();
      if (!error_.is_ok()) failed_at_ = Clock::now();
    }
    abort_->escalate();
    if (!abort_->give_up(failed_at_)) return false;
    *status = !abort_->why().is_ok() ? abort_->why() : error_;
    HVDC_LOG_WARNING(
        "giving up on a device collective that did not finish after an abort (%s); "
        "its buffers are leaked",
        status->message().c_str());
    abandon();
    return true;
  }
  for (auto& sub : ordered_) sub->stream_store_pending = false;
  if (entry_ && error_.is_ok()) error_ = entry_->check();
  // Finished during a shutdown's grace period: it ran to its end.
  *status = abort_->comms_aborted() ? abort_->why() : error_;
  release();
  return true;
}

void DevicePending::release() {
  for (const Lease& lease : run_.leases) lease.pool->release(lease.ptr);
  run_.leases.clear();
  run_.dev->release_event(done_);
}

void DevicePending::abandon() {
  for (const Lease& lease : run_.leases) lease.pool->abandon(lease.ptr);
  run_.leases.clear();
  run_.dev->mark_abandoned();
}

Status complete_on_stream(const CollectiveArgs& op, DeviceRun run, std::shared_ptr<CommEntry> entry,
                          std::shared_ptr<AbortState> abort,
                          std::unique_ptr<PendingCollective>* pending) {
  device::Runtime& rt = run.rt();
  std::vector<std::shared_ptr<DeviceSubmission>> ordered;
  for (const TensorArgs& t : op.tensors) {
    if (!t.stream_ordered || !t.submission || t.submission->word_device == nullptr) continue;
    HVDC_RETURN_IF_ERROR(
        rt.stream_write_value(run.stream(), t.submission->word_device, t.submission->value));
    t.submission->stream_store_pending = true;
    ordered.push_back(t.submission);
  }
  device::Event done;
  HVDC_RETURN_IF_ERROR(run.dev->acquire_event(&done));
  Status st = rt.event_record(done, run.stream());
  if (!st.is_ok()) {
    run.dev->release_event(done);
    return st;
  }
  *pending = std::make_unique<DevicePending>(std::move(run), done, std::move(entry),
                                             std::move(ordered), std::move(abort));
  return Status::ok();
}

}  // namespace hvdc::ops::nccl
