#include "api/config_api.h"
#include "api/api_state.h"
#include "common/log.h"

using hvdc::api::guarded;
using hvdc::common::find_knob_by_key;
using hvdc::common::make_error;
using hvdc::common::Status;

namespace {

Status set_value(hvd_config_t* config, int32_t key, bool is_int, const std::string& value) {
  if (config == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "config is NULL");
  const hvdc::common::Knob* knob = find_knob_by_key(key);
  if (knob == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED, "config key %d is not known to this version of hvdc",
                      key);
  }
  if (knob->is_int != is_int) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "config key %d (%s) takes a %s; use %s", key,
                      knob->name, knob->is_int ? "integer" : "string",
                      knob->is_int ? "hvd_config_set_int" : "hvd_config_set_str");
  }
  std::string normalized;
  HVDC_RETURN_IF_ERROR(knob->parse(*knob, value, &normalized));
  config->overrides[key] = normalized;
  return Status::ok();
}

}  // namespace

extern "C" {

hvd_status_t hvd_config_create(hvd_config_t** out) {
  return guarded([&] {
    if (out == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new hvd_config_s();
    return Status::ok();
  });
}

hvd_status_t hvd_config_set_int(hvd_config_t* config, int32_t key, int64_t value) {
  return guarded([&] { return set_value(config, key, true, std::to_string(value)); });
}

hvd_status_t hvd_config_set_str(hvd_config_t* config, int32_t key, const char* value) {
  return guarded([&] {
    if (value == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "value is NULL");
    return set_value(config, key, false, value);
  });
}

void hvd_config_destroy(hvd_config_t* config) {
  delete config;
}

hvd_status_t hvd_set_log_callback(hvd_log_fn fn, void* user_data) {
  return guarded([&] {
    hvdc::common::set_log_callback(fn, user_data);
    return Status::ok();
  });
}

}  // extern "C"
