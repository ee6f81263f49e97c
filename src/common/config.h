// The registry of every HVDC_* setting: name, Horovod alias, config key, default and doc. Values
// resolve as: hvd_config_t override > HVDC_* variable > HOROVOD_* alias > default.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::common {

struct Knob {
  const char* name;           // HVDC_...
  const char* horovod_alias;  // HOROVOD_... or nullptr
  int32_t config_key;         // HVD_CFG_... or -1 when only the environment sets it
  bool is_int;                // typed setter that applies: hvd_config_set_int or _set_str
  const char* default_value;
  // Checks a raw value and writes its normalized form; the message names the knob and value.
  Status (*parse)(const Knob& knob, const std::string& raw, std::string* normalized);
  const char* doc;
  bool secret = false;  // never printed (hvdc-info shows whether it is set)
};

const std::vector<Knob>& knob_registry();
const Knob* find_knob_by_key(int32_t config_key);

// Overrides collected by an hvd_config_t, keyed by HVD_CFG_* value.
using ConfigOverrides = std::map<int32_t, std::string>;

class Settings {
 public:
  struct Entry {
    std::string value;
    std::string source;  // "default", "environment (HVDC_X)", "config"
  };

  // Resolves every knob of the registry; fails on the first invalid value.
  static Status resolve(const ConfigOverrides& overrides, Settings* out);

  int64_t get_int(const std::string& name) const;
  const std::string& get_str(const std::string& name) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace hvdc::common
