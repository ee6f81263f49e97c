/*
 * hvdc.hpp: a header-only C++17 layer over the C ABI of hvdc.h, for framework authors who wire
 * hvdc in as a backend. It adds types, lifetimes and exceptions; every call goes straight to
 * the C function of the same name, and the library's conventions hold unchanged:
 *
 * - A failed call throws hvdc::Error (the status code and the library's message). Nothing here
 *   throws across the C boundary: callbacks given to the library (on_done, alloc, log) are plain
 *   C function pointers, run on the engine thread, and must neither throw nor block on hvdc.
 * - hvdc::Handle owns one handle: its destructor calls hvd_handle_free, which waits for a running
 *   op. Buffers passed to an *_async call must stay valid until the op ends, so declare them
 *   before the handle in the same scope. Overloads that would bind a temporary buffer to an async
 *   op are deleted.
 * - Typed overloads take std::vector<T> or a pointer and an element count, for the element
 *   types of hvdc::DTypeOf (hvdc/cxx/core.hpp). Float16, bfloat16 and a one-byte bool come as
 *   hvdc::Float16, hvdc::BFloat16 and hvdc::Bool (std::vector<bool> is packed bits). They
 *   describe the data as a one-dimensional tensor; use hvdc::Tensor for other shapes.
 * - hvdc::SharedBuffer<T> (hvdc/cxx/memory.hpp) owns host memory of hvd_mem_alloc, which the
 *   local ranks map: collectives on it reduce the peers' data in place. It outlives shutdown.
 * - Options::name names the tensor across ranks; empty means an automatic name, valid only when
 *   every rank calls in the same order.
 *
 * Thread safety is the C library's: init and shutdown must not race with other calls; the rest
 * may be called from any thread. A Handle object itself is not synchronized.
 */
#ifndef HVDC_HPP_
#define HVDC_HPP_

#include <hvdc.h>

#include "hvdc/cxx/collectives.hpp"
#include "hvdc/cxx/core.hpp"
#include "hvdc/cxx/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace hvdc {

// ---- Configuration, lifecycle, topology ------------------------------------------------------

enum class ConfigKey : int32_t {
  LogLevel = HVD_CFG_LOG_LEVEL,
  Hostname = HVD_CFG_HOSTNAME,
  Bootstrap = HVD_CFG_BOOTSTRAP,
  SpinMicros = HVD_CFG_SPIN_MICROS,
  FusionThreshold = HVD_CFG_FUSION_THRESHOLD,
  CacheCapacity = HVD_CFG_CACHE_CAPACITY,
  Deterministic = HVD_CFG_DETERMINISTIC,
  ProcessSets = HVD_CFG_PROCESS_SETS,
  Rank = HVD_CFG_RANK,
  Size = HVD_CFG_SIZE,
  MasterAddr = HVD_CFG_MASTER_ADDR,
  MasterPort = HVD_CFG_MASTER_PORT,
  Secret = HVD_CFG_SECRET,
  Iface = HVD_CFG_IFACE,
};

// Settings that override the HVDC_* environment variables at init (owning an hvd_config_t).
class Config {
 public:
  Config() { detail::check(hvd_config_create(&config_), "hvd_config_create"); }
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;
  ~Config() { hvd_config_destroy(config_); }

  Config& set(ConfigKey key, int64_t value) {
    detail::check(hvd_config_set_int(config_, static_cast<int32_t>(key), value),
                  "hvd_config_set_int");
    return *this;
  }
  Config& set(ConfigKey key, const std::string& value) {
    detail::check(hvd_config_set_str(config_, static_cast<int32_t>(key), value.c_str()),
                  "hvd_config_set_str");
    return *this;
  }
  const hvd_config_t* get() const noexcept { return config_; }

 private:
  hvd_config_t* config_ = nullptr;
};

inline const char* version_string() noexcept {
  return hvd_version_string();
}
inline int32_t abi_version() noexcept {
  return hvd_abi_version();
}
inline const char* status_string(hvd_status_t status) noexcept {
  return hvd_status_string(status);
}
inline const char* last_error_message() noexcept {
  return hvd_last_error_message();
}
inline bool has_feature(Feature f) noexcept {
  return hvd_has_feature(static_cast<int32_t>(f)) != 0;
}
// The CUDA devices usable now; throws Error (HVD_ERR_UNSUPPORTED, with CUDA's reason) without a
// GPU or driver, or in a library built without CUDA.
inline int32_t device_count() {
  int32_t count = 0;
  detail::check(hvd_device_count(&count), "hvd_device_count");
  return count;
}
// Log lines go to fn (any thread; it must not call hvdc or throw); nullptr restores stderr.
inline void set_log_callback(hvd_log_fn fn, void* user_data) {
  detail::check(hvd_set_log_callback(fn, user_data), "hvd_set_log_callback");
}

namespace detail {
// The header this code was compiled against must match the library it runs with.
inline void check_abi() {
  if (hvd_abi_version() != HVDC_ABI_VERSION) {
    throw Error(HVD_ERR_UNSUPPORTED, "hvdc: the loaded library has ABI version " +
                                         std::to_string(hvd_abi_version()) + ", hvdc.hpp expects " +
                                         std::to_string(HVDC_ABI_VERSION));
  }
}
}  // namespace detail

inline void init() {
  detail::check_abi();
  detail::check(hvd_init(), "hvd_init");
}
inline void init(const Config& config) {
  detail::check_abi();
  detail::check(hvd_init_with_config(config.get()), "hvd_init_with_config");
}
inline void shutdown() {
  detail::check(hvd_shutdown(), "hvd_shutdown");
}
inline bool is_initialized() noexcept {
  return hvd_is_initialized() != 0;
}

// init() in the constructor, shutdown in the destructor. One at a time per process.
class Session {
 public:
  Session() { init(); }
  explicit Session(const Config& config) { init(config); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { hvd_shutdown(); }
};

// Each is -1 before init.
inline int32_t rank() noexcept {
  return hvd_rank();
}
inline int32_t size() noexcept {
  return hvd_size();
}
inline int32_t local_rank() noexcept {
  return hvd_local_rank();
}
inline int32_t local_size() noexcept {
  return hvd_local_size();
}
inline int32_t cross_rank() noexcept {
  return hvd_cross_rank();
}
inline int32_t cross_size() noexcept {
  return hvd_cross_size();
}

// ---- Faults, diagnostics, timeline, statistics -----------------------------------------------

// Fails every pending and later op on every rank with HVD_ERR_ABORTED, until shutdown.
inline void abort(const std::string& reason) {
  detail::check(hvd_abort(reason.c_str()), "hvd_abort");
}
// The first asynchronous error the engine met, if any.
inline std::optional<Error> async_error() {
  hvd_status_t status = HVD_SUCCESS;
  detail::check(hvd_get_async_error(&status), "hvd_get_async_error");
  if (status == HVD_SUCCESS) return std::nullopt;
  return detail::make_error(status, "hvd_get_async_error", hvd_last_error_message());
}

namespace detail {
// Calls a (buffer, size, length) text function with a buffer that grows until the text fits
// (the text may grow between calls: each hvd_dump_pending call makes a new report).
template <class Fn>
std::string read_text(Fn fn, const char* call) {
  std::string text(4096, '\0');
  for (;;) {
    std::size_t length = 0;
    const hvd_status_t status = fn(&text[0], text.size(), &length);
    if (status == HVD_SUCCESS) {
      text.resize(length);
      return text;
    }
    if (status != HVD_ERR_INVALID_ARGUMENT || length < text.size()) {
      throw make_error(status, call, hvd_last_error_message());
    }
    text.assign(length + 1024, '\0');
  }
}
}  // namespace detail

// Logs the report of every op in flight on this rank and returns it.
inline std::string dump_pending() {
  return detail::read_text(hvd_dump_pending, "hvd_dump_pending");
}

inline void timeline_start(const std::string& path) {
  detail::check(hvd_timeline_start(path.c_str()), "hvd_timeline_start");
}
inline void timeline_stop() {
  detail::check(hvd_timeline_stop(), "hvd_timeline_stop");
}

inline hvd_stats_t stats() {
  hvd_stats_t s{};
  s.struct_size = sizeof s;
  detail::check(hvd_stats_get(&s), "hvd_stats_get");
  return s;
}
// The counters as "name value" lines.
inline std::string stats_text() {
  return detail::read_text(hvd_stats_format, "hvd_stats_format");
}

}  // namespace hvdc

#endif  // HVDC_HPP_
