#include "api/api_state.h"

#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace hvdc::api {

namespace {
thread_local std::string t_last_error;

void mark_forked_child() {
  state().forked_since_init.store(true, std::memory_order_relaxed);
}
}  // namespace

ApiState& state() {
  static ApiState* s = new ApiState();  // never destroyed: callers may outlive static teardown
  return *s;
}

void set_last_error(const std::string& message) {
  t_last_error = message;
}
const char* last_error() {
  return t_last_error.c_str();
}

hvd_status_t report(const Status& status) {
  if (!status.is_ok()) set_last_error(status.message());
  return status.code();
}

void record_owner() {
  // Registered once per process; should it fail (no memory), every call compares the pid.
  static const int registered = pthread_atfork(nullptr, nullptr, mark_forked_child);
  state().forked_since_init.store(registered != 0, std::memory_order_relaxed);
  state().owner_pid.store(getpid());
}

Status check_not_forked() {
  pid_t owner = state().owner_pid.load(std::memory_order_relaxed);
  if (owner == 0 || !state().forked_since_init.load(std::memory_order_relaxed)) return Status::ok();
  if (owner != getpid()) {
    return common::make_error(HVD_ERR_FORKED,
                              "this process was forked from process %d after hvd_init; the "
                              "child cannot use its parent's engine",
                              static_cast<int>(owner));
  }
  return Status::ok();
}

Status current_engine(core::Engine** out) {
  HVDC_RETURN_IF_ERROR(check_not_forked());
  core::Engine* engine = state().engine.load(std::memory_order_acquire);
  if (engine == nullptr) {
    return Status(HVD_ERR_NOT_INITIALIZED, "hvdc is not initialized; call hvd_init first");
  }
  *out = engine;
  return Status::ok();
}

Status copy_text(const std::string& text, char* buffer, size_t size, size_t* length) {
  if (length != nullptr) *length = text.size();
  if (buffer == nullptr && size == 0) return Status::ok();  // a length query
  if (buffer == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "buffer is NULL");
  if (size < text.size() + 1) {
    return common::make_error(HVD_ERR_INVALID_ARGUMENT,
                              "size %zu is too small; %zu bytes are needed", size, text.size() + 1);
  }
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return Status::ok();
}

Status run_blocking(core::Engine* engine, core::Request request, int32_t* value) {
  auto op = std::make_shared<core::OpState>(nullptr, nullptr);
  core::TensorEntry entry;
  entry.request = std::move(request);
  entry.state = op;
  HVDC_RETURN_IF_ERROR(engine->enqueue(std::move(entry)));
  engine->nudge();  // waited for without driving
  HVDC_RETURN_IF_ERROR(op->wait(engine->spin_micros()));
  if (value != nullptr) *value = op->result_value();
  return Status::ok();
}

}  // namespace hvdc::api
