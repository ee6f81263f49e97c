// Process-wide state behind the C API: the engine (one per hvd_init), the handle table (which
// outlives engines, so handles from before a shutdown stay valid to wait on and free), and the
// helpers every exported function uses to turn statuses and exceptions into return codes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <new>

#include "common/status.h"
#include "core/engine.h"
#include "core/handle_table.h"

namespace hvdc::api {

using common::Status;

struct ApiState {
  std::mutex lifecycle_mutex;  // serializes init and shutdown
  std::atomic<core::Engine*> engine{nullptr};
  std::atomic<pid_t> owner_pid{0};
  // Set in the child of every fork() after record_owner(), so that the calls of the owner
  // process compare no pid (getpid() is a system call on every hvd_* call otherwise).
  std::atomic<bool> forked_since_init{false};
  core::HandleTable handles;
};

ApiState& state();

// Sets the calling thread's last error message.
void set_last_error(const std::string& message);
const char* last_error();

// Records a failure's message and returns its code.
hvd_status_t report(const Status& status);

// The running engine of this process, or an error (not initialized, or a forked child).
Status current_engine(core::Engine** out);
// Submits an op that has no handle (join, process-set changes) and waits for it; *value (if not
// null) gets the op's one-number result.
Status run_blocking(core::Engine* engine, core::Request request, int32_t* value);
// Copies text, NUL-terminated, into buffer (size bytes); *length (if not null) gets its length.
// buffer NULL with size 0 asks for the length only; a buffer too small is an error.
Status copy_text(const std::string& text, char* buffer, size_t size, size_t* length);
// HVD_ERR_FORKED in a child created by fork() after hvd_init, else ok.
Status check_not_forked();
// Records this process as the engine's owner (hvd_init), and from then on marks the child of
// every fork() (pthread_atfork), which check_not_forked() reads. A child of a raw clone() that
// skips the fork handlers is not noticed.
void record_owner();

// SIGUSR1 logs a hang report (forensics.cc); installed at init where SIGUSR1 has its default
// action, removed at shutdown. Called with the lifecycle mutex held.
void install_dump_signal();
void uninstall_dump_signal();

// Runs body, converting its Status and any exception into a return code.
template <typename Body>
hvd_status_t guarded(Body&& body) noexcept {
  try {
    return report(body());
  } catch (const std::bad_alloc&) {
    return report(Status(HVD_ERR_OUT_OF_MEMORY, "out of memory"));
  } catch (const std::exception& e) {
    return report(common::make_error(HVD_ERR_INTERNAL, "internal error: %s", e.what()));
  } catch (...) {
    return report(Status(HVD_ERR_INTERNAL, "internal error: unknown exception"));
  }
}

}  // namespace hvdc::api
