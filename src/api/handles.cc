// Handle lifecycle: test, wait, wait_all, free.
#include "api/api_state.h"

using hvdc::api::guarded;
using hvdc::api::state;
using hvdc::common::Status;
using hvdc::core::OpState;

namespace {

void nudge_engine() {
  hvdc::core::Engine* engine = state().engine.load(std::memory_order_acquire);
  if (engine != nullptr) engine->nudge();
}

// Runs the op's engine passes on this thread while it is pending (Engine::drive), then waits.
Status wait_for(OpState& op) {
  hvdc::core::Engine* engine = state().engine.load(std::memory_order_acquire);
  const bool drove = engine != nullptr && !op.done() && engine->drive(op);
  return op.wait(engine != nullptr && !drove ? engine->spin_micros() : 0);  // spun already
}

Status unknown_handle(hvd_handle_t handle) {
  return hvdc::common::make_error(HVD_ERR_INVALID_HANDLE,
                                  "handle 0x%llx is unknown, stale or already freed",
                                  static_cast<unsigned long long>(handle));
}

Status find(hvd_handle_t handle, std::shared_ptr<OpState>* out) {
  HVDC_RETURN_IF_ERROR(hvdc::api::check_not_forked());
  *out = state().handles.find(handle);
  return *out ? Status::ok() : unknown_handle(handle);
}

// The op of a handle that finished successfully (its outputs may be read).
Status find_succeeded(hvd_handle_t handle, std::shared_ptr<OpState>* op) {
  HVDC_RETURN_IF_ERROR(find(handle, op));
  if (!(*op)->done()) {
    return Status(HVD_ERR_INVALID_USAGE, "the op has not finished; wait for it first");
  }
  return (*op)->result();
}

}  // namespace

extern "C" {

hvd_status_t hvd_test(hvd_handle_t handle, int32_t* done) {
  return guarded([&] {
    if (done == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "done is NULL");
    std::shared_ptr<OpState> op;
    HVDC_RETURN_IF_ERROR(find(handle, &op));
    if (!op->done()) {
      *done = 0;
      nudge_engine();  // polled: the engine thread runs it, not a driver
      return Status::ok();
    }
    *done = 1;
    return op->result();
  });
}

hvd_status_t hvd_wait(hvd_handle_t handle) {
  return guarded([&] {
    std::shared_ptr<OpState> op;
    HVDC_RETURN_IF_ERROR(find(handle, &op));
    return wait_for(*op);
  });
}

hvd_status_t hvd_wait_all(const hvd_handle_t* handles, size_t count) {
  return guarded([&] {
    if (handles == nullptr && count > 0) return Status(HVD_ERR_INVALID_ARGUMENT, "handles is NULL");
    if (count > SIZE_MAX / sizeof(hvd_handle_t)) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                      "count %zu overflows the size of handles", count);
    }
    Status first;
    for (size_t i = 0; i < count; ++i) {
      std::shared_ptr<OpState> op;
      Status st = find(handles[i], &op);
      if (st.is_ok()) st = wait_for(*op);
      if (!st.is_ok() && first.is_ok())
        first = st.with_context(hvdc::common::strfmt("handles[%zu]", i));
    }
    return first;
  });
}

hvd_status_t hvd_handle_output(hvd_handle_t handle, hvd_tensor_t* output) {
  return guarded([&] {
    if (output == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "output is NULL");
    std::shared_ptr<OpState> op;
    HVDC_RETURN_IF_ERROR(find_succeeded(handle, &op));
    if (!op->output(output)) {
      return Status(HVD_ERR_INVALID_USAGE,
                    "this op has no library-described output (only allgather and alltoall "
                    "have one)");
    }
    return Status::ok();
  });
}

hvd_status_t hvd_handle_received_splits(hvd_handle_t handle, int32_t* splits, int32_t count) {
  return guarded([&] {
    if (splits == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "splits is NULL");
    std::shared_ptr<OpState> op;
    HVDC_RETURN_IF_ERROR(find_succeeded(handle, &op));
    const std::vector<int64_t>& rows = op->received_splits();
    if (rows.empty()) {
      return Status(HVD_ERR_INVALID_USAGE, "this op has no received splits (only alltoall has)");
    }
    if (count != static_cast<int32_t>(rows.size())) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                      "count is %d; the op's process set has %zu ranks", count,
                                      rows.size());
    }
    for (size_t i = 0; i < rows.size(); ++i) splits[i] = static_cast<int32_t>(rows[i]);
    return Status::ok();
  });
}

hvd_status_t hvd_handle_free(hvd_handle_t handle) {
  return guarded([&] {
    HVDC_RETURN_IF_ERROR(hvdc::api::check_not_forked());
    // Usually the op is done (hvd_wait came first): one look at the table frees it.
    using Release = hvdc::core::HandleTable::Release;
    const Release release = state().handles.erase_if_done(handle);
    if (release == Release::kFreed) return Status::ok();
    if (release == Release::kUnknown) return unknown_handle(handle);
    std::shared_ptr<OpState> op;
    HVDC_RETURN_IF_ERROR(find(handle, &op));
    if (!op->done()) nudge_engine();
    (void)op->wait(0);  // buffers belong to the op until it ends
    if (!state().handles.erase(handle)) {
      return hvdc::common::make_error(HVD_ERR_INVALID_HANDLE,
                                      "handle 0x%llx was freed concurrently",
                                      static_cast<unsigned long long>(handle));
    }
    return Status::ok();
  });
}

}  // extern "C"
