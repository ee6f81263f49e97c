// Hang reports through the C API (hvd_dump_pending) and SIGUSR1. The handler is installed at
// init only where SIGUSR1 still has its default action (which would kill the process), so an
// application's own handler is never replaced; shutdown restores the default.
#include <signal.h>

#include "api/api_state.h"

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::common::Status;

namespace {

constexpr int kDumpTimeoutMs = 5000;

bool g_handler_installed = false;  // guarded by the lifecycle mutex

// Async-signal-safe: an atomic load, an atomic store and a write(2) to an eventfd.
void on_sigusr1(int) {
  hvdc::core::Engine* engine = hvdc::api::state().engine.load(std::memory_order_acquire);
  if (engine != nullptr) engine->request_dump();
}

}  // namespace

namespace hvdc::api {

void install_dump_signal() {
  struct sigaction current = {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction mine = {};
  mine.sa_handler = on_sigusr1;
  mine.sa_flags = SA_RESTART;
  sigemptyset(&mine.sa_mask);
  g_handler_installed = sigaction(SIGUSR1, &mine, nullptr) == 0;
}

void uninstall_dump_signal() {
  if (!g_handler_installed) return;
  struct sigaction current = {};
  // Only if it is still ours: the application may have installed its own since.
  if (sigaction(SIGUSR1, nullptr, &current) == 0 && current.sa_handler == on_sigusr1) {
    struct sigaction restore = {};
    restore.sa_handler = SIG_DFL;
    sigemptyset(&restore.sa_mask);
    sigaction(SIGUSR1, &restore, nullptr);
  }
  g_handler_installed = false;
}

}  // namespace hvdc::api

extern "C" {

hvd_status_t hvd_dump_pending(char* buffer, size_t size, size_t* length) {
  return guarded([&] {
    hvdc::core::Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    std::string text;
    HVDC_RETURN_IF_ERROR(engine->dump_pending(kDumpTimeoutMs, &text));
    return hvdc::api::copy_text(text, buffer, size, length);
  });
}

}  // extern "C"
