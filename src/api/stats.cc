// What the engine did: hvd_stats_get and hvd_stats_format (counters, for tests, benchmarks and
// tuning), and the timeline's run-time control.
#include <algorithm>
#include <cstring>
#include <string>

#include "api/api_state.h"

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::common::make_error;
using hvdc::common::Status;

namespace {

hvd_stats_t snapshot(const hvdc::core::EngineStats& s) {
  hvd_stats_t out = {};
  out.struct_size = sizeof(out);
  out.coordinator_requests = s.coordinator_requests.load();
  out.rounds = s.rounds.load();
  out.cache_hits = s.cache_hits.load();
  out.cache_misses = s.cache_misses.load();
  out.cache_evictions = s.cache_evictions.load();
  out.collectives = s.collectives.load();
  out.tensors = s.tensors.load();
  out.fused_collectives = s.fused_collectives.load();
  out.fused_tensors = s.fused_tensors.load();
  out.fused_bytes = s.fused_bytes.load();
  return out;
}

std::string format(const hvd_stats_t& s) {
  const std::pair<const char*, uint64_t> rows[] = {
      {"coordinator_requests", s.coordinator_requests},
      {"rounds", s.rounds},
      {"cache_hits", s.cache_hits},
      {"cache_misses", s.cache_misses},
      {"cache_evictions", s.cache_evictions},
      {"collectives", s.collectives},
      {"tensors", s.tensors},
      {"fused_collectives", s.fused_collectives},
      {"fused_tensors", s.fused_tensors},
      {"fused_bytes", s.fused_bytes},
  };
  std::string text;
  for (const auto& [name, value] : rows) {
    text += hvdc::common::strfmt("%-22s %llu\n", name, static_cast<unsigned long long>(value));
  }
  return text;
}

}  // namespace

extern "C" {

hvd_status_t hvd_timeline_start(const char* path) {
  return guarded([&] {
    if (path == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "path is NULL");
    if (*path == '\0') return Status(HVD_ERR_INVALID_ARGUMENT, "path is empty");
    hvdc::core::Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    return engine->tracer().start(path);
  });
}

hvd_status_t hvd_timeline_stop(void) {
  return guarded([&] {
    hvdc::core::Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    engine->tracer().stop();
    return Status::ok();
  });
}

hvd_status_t hvd_stats_get(hvd_stats_t* stats) {
  return guarded([&] {
    if (stats == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "stats is NULL");
    if (stats->struct_size < 2 * sizeof(uint32_t)) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "stats->struct_size %u is too small; set it to sizeof(hvd_stats_t)",
                        stats->struct_size);
    }
    hvdc::core::Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    const hvd_stats_t full = snapshot(engine->stats());
    const uint32_t caller_size = stats->struct_size;
    std::memcpy(stats, &full, std::min<size_t>(caller_size, sizeof(full)));
    stats->struct_size = static_cast<uint32_t>(std::min<size_t>(caller_size, sizeof(full)));
    return Status::ok();
  });
}

hvd_status_t hvd_stats_format(char* buffer, size_t size, size_t* length) {
  return guarded([&] {
    hvdc::core::Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    return hvdc::api::copy_text(format(snapshot(engine->stats())), buffer, size, length);
  });
}

}  // extern "C"
