// hvd_init, hvd_shutdown, topology queries, abort and the asynchronous error.

#include "api/api_state.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include "api/config_api.h"
#include "common/log.h"

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::api::state;
using hvdc::common::Settings;
using hvdc::common::Status;
using hvdc::core::Engine;

namespace {

hvdc::core::EngineConfig engine_config(const Settings& settings) {
  hvdc::core::EngineConfig config;
  config.hostname = settings.get_str("HVDC_HOSTNAME");
  config.spin_micros = static_cast<int>(settings.get_int("HVDC_SPIN_MICROS"));
  config.small_allreduce_bytes =
      static_cast<size_t>(settings.get_int("HVDC_SMALL_ALLREDUCE_BYTES"));
  config.segment_bytes = static_cast<size_t>(settings.get_int("HVDC_SEGMENT_BYTES"));
  config.tcp_segment_bytes = static_cast<size_t>(settings.get_int("HVDC_TCP_SEGMENT_BYTES"));
  config.round_input_bytes = static_cast<size_t>(settings.get_int("HVDC_ROUND_INPUT_BYTES"));
  config.local_min_bytes = static_cast<size_t>(settings.get_int("HVDC_LOCAL_MIN_BYTES"));
  config.peer_reads = settings.get_int("HVDC_PEER_READS") != 0;
  config.lane = settings.get_int("HVDC_LANE") != 0;
  config.hierarchical = settings.get_int("HVDC_HIERARCHICAL_ALLREDUCE") != 0;
  config.local_stage_bytes = static_cast<size_t>(settings.get_int("HVDC_LOCAL_STAGE_BYTES"));
  config.fusion_threshold = static_cast<size_t>(settings.get_int("HVDC_FUSION_THRESHOLD"));
  config.cache_capacity = static_cast<size_t>(settings.get_int("HVDC_CACHE_CAPACITY"));
  config.deterministic = settings.get_int("HVDC_DETERMINISTIC") != 0;
  config.stall_check_seconds = static_cast<int>(settings.get_int("HVDC_STALL_CHECK_TIME"));
  config.stall_shutdown_seconds = static_cast<int>(settings.get_int("HVDC_STALL_SHUTDOWN_TIME"));
  config.timeline_path = settings.get_str("HVDC_TIMELINE");
  config.timeline_mark_cycles = settings.get_int("HVDC_TIMELINE_MARK_CYCLES") != 0;
  config.process_sets = settings.get_str("HVDC_PROCESS_SETS");
  config.timeout_seconds = static_cast<int>(settings.get_int("HVDC_TIMEOUT"));
  config.round_tree_min_ranks =
      static_cast<int>(std::min<int64_t>(settings.get_int("HVDC_ROUND_TREE_MIN_RANKS"), INT32_MAX));
  return config;
}

// A value set through hvd_config (source "config"), else null.
const char* from_config(const Settings& settings, const char* name) {
  auto it = settings.entries().find(name);
  if (it == settings.entries().end() || it->second.source != "config") return nullptr;
  return it->second.value.c_str();
}

// Discovery reads the launcher's variables from the environment; the rendezvous address given
// through hvd_config wins over HVDC_MASTER_* there. `settings` outlives the bootstrap's creation.
hvdc::bootstrap::BootstrapOptions bootstrap_options(const Settings& settings) {
  hvdc::bootstrap::BootstrapOptions options;
  options.mode = settings.get_str("HVDC_BOOTSTRAP");
  if (from_config(settings, "HVDC_RANK") != nullptr) {
    options.config_rank = static_cast<int>(settings.get_int("HVDC_RANK"));
  }
  if (from_config(settings, "HVDC_SIZE") != nullptr) {
    options.config_size = static_cast<int>(settings.get_int("HVDC_SIZE"));
  }
  options.secret = settings.get_str("HVDC_SECRET");
  options.iface = settings.get_str("HVDC_IFACE");
  options.timeout_seconds = static_cast<double>(settings.get_int("HVDC_RENDEZVOUS_TIMEOUT"));
  options.env = [&settings](const char* name) -> const char* {
    if (std::strcmp(name, "HVDC_MASTER_ADDR") == 0 || std::strcmp(name, "HVDC_MASTER_PORT") == 0) {
      if (const char* v = from_config(settings, name)) return v;
    }
    return std::getenv(name);
  };
  return options;
}

Status init(const hvd_config_t* config) {
  std::lock_guard<std::mutex> lock(state().lifecycle_mutex);
  HVDC_RETURN_IF_ERROR(hvdc::api::check_not_forked());
  if (state().engine.load() != nullptr) {
    return Status(HVD_ERR_INVALID_USAGE, "hvdc is already initialized; call hvd_shutdown first");
  }
  Settings settings;
  HVDC_RETURN_IF_ERROR(
      Settings::resolve(config ? config->overrides : hvdc::common::ConfigOverrides(), &settings));
  hvdc::common::set_log_level(static_cast<int32_t>(settings.get_int("HVDC_LOG_LEVEL")));
  std::unique_ptr<hvdc::bootstrap::Bootstrap> bootstrap;
  HVDC_RETURN_IF_ERROR(hvdc::bootstrap::create_bootstrap(bootstrap_options(settings), &bootstrap)
                           .with_context("hvd_init"));
  std::unique_ptr<Engine> engine;
  HVDC_RETURN_IF_ERROR(Engine::start(std::move(bootstrap), engine_config(settings), &engine)
                           .with_context("hvd_init"));
  hvdc::common::set_process_log_rank(engine->topology().rank);
  hvdc::api::record_owner();
  state().engine.store(engine.release(), std::memory_order_release);
  hvdc::api::install_dump_signal();
  return Status::ok();
}

template <typename Field>
int32_t topology_value(Field field) {
  Engine* engine = nullptr;
  if (!current_engine(&engine).is_ok()) return -1;
  return engine->topology().*field;
}

}  // namespace

extern "C" {

hvd_status_t hvd_init(void) {
  return guarded([] { return init(nullptr); });
}

hvd_status_t hvd_init_with_config(const hvd_config_t* config) {
  return guarded([&] { return init(config); });
}

hvd_status_t hvd_shutdown(void) {
  return guarded([] {
    std::lock_guard<std::mutex> lock(state().lifecycle_mutex);
    HVDC_RETURN_IF_ERROR(hvdc::api::check_not_forked());
    hvdc::api::uninstall_dump_signal();  // first: the handler reads the engine pointer
    Engine* engine = state().engine.exchange(nullptr);
    if (engine == nullptr) return Status::ok();  // shutting down twice is harmless
    Status st = engine->shutdown();
    delete engine;
    state().owner_pid.store(0);
    hvdc::common::set_process_log_rank(-1);
    return st.with_context("hvd_shutdown");
  });
}

int32_t hvd_is_initialized(void) {
  Engine* engine = nullptr;
  return current_engine(&engine).is_ok() ? 1 : 0;
}

int32_t hvd_rank(void) {
  return topology_value(&hvdc::core::Topology::rank);
}
int32_t hvd_size(void) {
  return topology_value(&hvdc::core::Topology::size);
}
int32_t hvd_local_rank(void) {
  return topology_value(&hvdc::core::Topology::local_rank);
}
int32_t hvd_local_size(void) {
  return topology_value(&hvdc::core::Topology::local_size);
}
int32_t hvd_cross_rank(void) {
  return topology_value(&hvdc::core::Topology::cross_rank);
}
int32_t hvd_cross_size(void) {
  return topology_value(&hvdc::core::Topology::cross_size);
}

hvd_status_t hvd_abort(const char* reason) {
  return guarded([&] {
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    engine->abort(reason ? reason : "");
    return Status::ok();
  });
}

hvd_status_t hvd_get_async_error(hvd_status_t* status) {
  return guarded([&] {
    if (status == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "status is NULL");
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    Status async = engine->async_error();
    if (!async.is_ok()) hvdc::api::set_last_error(async.message());
    *status = async.code();
    return Status::ok();
  });
}

}  // extern "C"
